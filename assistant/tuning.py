"""The fusion weight `eval --tune` chose for one store, kept in `<store>/fusion.json`.

It lives beside the store because the best weight depends on the corpus (names and formulas
favour BM25, paraphrased prose the dense side). The retriever reads it when present and
`settings.tuned_fusion` is on; otherwise `settings.hybrid_alpha` is the weight. The file is
re-read only when its modification time changes, so a tune in another process is picked up.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Optional

FILE_NAME = "fusion.json"

_cache: dict[Path, tuple[float, Optional[float]]] = {}  # path → (mtime, alpha)
_lock = threading.Lock()


def tuned_path(store_dir: Path) -> Path:
    return Path(store_dir) / FILE_NAME


def save_tuned_alpha(store_dir: Path, alpha: float, evidence: dict) -> Path:
    """Write the chosen weight with what it was chosen on (queries, seed, scores)."""
    path = tuned_path(store_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"fusion": "convex", "hybrid_alpha": alpha, **evidence}, indent=2))
    tmp.replace(path)  # readers never see half a file
    return path


def load_tuned_alpha(store_dir: Path) -> Optional[float]:
    """The stored weight, or None when there is no (readable) file."""
    path = tuned_path(store_dir)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None
    with _lock:
        cached = _cache.get(path)
        if cached is None or cached[0] != mtime:
            cached = (mtime, _read_alpha(path))
            _cache[path] = cached
        return cached[1]


def _read_alpha(path: Path) -> Optional[float]:
    try:
        alpha = float(json.loads(path.read_text())["hybrid_alpha"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged file must not break search: the settings' weight applies
    return alpha if 0.0 <= alpha <= 1.0 else None
