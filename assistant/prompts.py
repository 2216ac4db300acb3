"""Prompt templates live in `prompts/` as files, loaded by name and filled with str.format."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

# The source tree's prompts/ folder (editable installs and the repository);
# a wheel carries a copy inside the package.
CANDIDATES = [Path(__file__).resolve().parent.parent / "prompts",
              Path(__file__).resolve().parent / "prompts"]


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    for folder in CANDIDATES:
        path = folder / f"{name}.txt"
        if path.exists():
            return path.read_text(encoding="utf-8").strip()
    raise FileNotFoundError(f"prompt template {name!r} not found in {', '.join(map(str, CANDIDATES))}")


def render(name: str, **values: str) -> str:
    return load_prompt(name).format(**values)
