"""Prompt templates live in `prompts/` as files, loaded by name and filled with str.format.

The top-level `prompts/` folder is their one source. A wheel carries a copy of it inside the
package, `assistant/prompts/` (setup.py's build step); an installed package reads that copy,
a source tree (or an editable install) reads `prompts/` itself.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

CANDIDATES = [resources.files("assistant") / "prompts",  # an installed wheel's own copy
              Path(__file__).resolve().parent.parent / "prompts"]  # the source tree


@lru_cache(maxsize=None)
def load_prompt(name: str) -> str:
    for folder in CANDIDATES:
        path = folder / f"{name}.txt"
        if path.is_file():
            return path.read_text(encoding="utf-8").strip()
    raise FileNotFoundError(f"prompt template {name!r} not found in {', '.join(map(str, CANDIDATES))}")


def render(name: str, **values: str) -> str:
    return load_prompt(name).format(**values)
