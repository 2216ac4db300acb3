"""One vector per paper for the paper side of hybrid search: the mean of its chunk vectors.

A chunk holds at most 200 tokens of an abstract, so a question worded unlike any one passage
(a paraphrase of the whole abstract) can miss every chunk; the mean of a paper's chunks stands
for the whole abstract. The rows are built from the vectors already in Chroma (nothing is
embedded), once per store revision, and kept in the store's cache/ folder so a restarted
server reads them back instead of paging every vector out of Chroma again.

Exact search (one matrix product) rather than a second Chroma collection: one row per paper is
small (100,000 papers × 384 dimensions is 154 MB of float32, one product ~10 ms), a filter is a
row mask, and there is no second index to keep in step with the chunks.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, Optional

import numpy as np

log = logging.getLogger(__name__)

PAPER_VECTORS_FILE = "paper_vectors.npz"


def unit_vector(vector: np.ndarray) -> np.ndarray:
    """A query vector scaled to unit length, as float32 (a zero vector stays zero)."""
    v = np.asarray(vector, dtype=np.float32)
    return v / max(float(np.linalg.norm(v)), 1e-12)


class PaperVectors:
    """Unit rows, one per paper, tagged with the store revision they were built from."""

    def __init__(self, revision: str, ids: list[str], matrix: np.ndarray):
        self.revision = revision
        self.ids = ids
        self.matrix = matrix
        self.matrix.setflags(write=False)  # shared by search and the map: never changed in place
        self.row = {pid: i for i, pid in enumerate(ids)}

    @classmethod
    def load_or_build(cls, folder: Path, revision: str,
                      build: Callable[[], tuple[list[str], np.ndarray]]) -> "PaperVectors":
        """The rows kept in `folder` for `revision`, else built by `build()` and kept there
        (in memory only when the folder cannot be written)."""
        path = Path(folder) / PAPER_VECTORS_FILE
        loaded = cls._load(path, revision)
        if loaded is not None:
            return loaded
        ids, matrix = build()
        vectors = cls(revision, ids, np.asarray(matrix, dtype=np.float32))
        vectors._save(path)
        return vectors

    @classmethod
    def _load(cls, path: Path, revision: str) -> Optional["PaperVectors"]:
        try:
            with np.load(path, allow_pickle=False) as data:
                if str(data["revision"]) != revision:
                    return None
                return cls(revision, [str(i) for i in data["ids"]], data["matrix"])
        except Exception:  # absent, or damaged (a torn write, a bad zip): rebuilt from Chroma,
            return None    # the source of truth

    def _save(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")  # one per writer process
            np.savez(tmp, revision=np.array(self.revision), ids=np.array(self.ids, dtype=str),
                     matrix=self.matrix)
            tmp.replace(path)
        except OSError as exc:
            log.warning("paper vectors stay in memory only (%s: %s)", path, exc)

    def search(self, query_vector: np.ndarray, n: int,
               allowed: Optional[frozenset[str]] = None) -> list[tuple[str, float]]:
        """(paper id, cosine), best first: the `n` papers nearest the query among `allowed`
        (every paper when None)."""
        if not self.ids or n <= 0:
            return []
        sims = self.matrix @ unit_vector(query_vector)
        if allowed is not None:
            sims = np.where([pid in allowed for pid in self.ids], sims, -np.inf)
        n = min(n, len(self.ids))
        top = np.argpartition(-sims, n - 1)[:n]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(self.ids[i], float(sims[i])) for i in top if np.isfinite(sims[i])]

    def cosines(self, query_vector: np.ndarray, paper_ids) -> dict[str, float]:
        """The cosine of each known paper in `paper_ids` with the query."""
        rows = [(pid, self.row[pid]) for pid in paper_ids if pid in self.row]
        if not rows:
            return {}
        sims = self.matrix[[r for _, r in rows]] @ unit_vector(query_vector)
        return {pid: float(s) for (pid, _), s in zip(rows, sims)}
