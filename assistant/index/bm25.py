"""The lexical index beside Chroma: bm25s over the chunks' lexical texts, with the chunk→paper
map needed for filters and aggregation."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np


def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


class Bm25Index:
    """bm25s over chunk texts, with the chunk→paper map needed for filters and aggregation."""

    def __init__(self, retriever, chunk_ids: list[str], paper_ids: list[str]):
        self.retriever = retriever
        self.chunk_ids = chunk_ids
        self.paper_ids = np.array(paper_ids, dtype=object)
        self.stemmer = _stemmer()
        self._rows_of: Optional[dict[str, list[int]]] = None  # paper id -> its chunks' rows

    def chunk_rows(self, paper_id: str) -> list[int]:
        """The rows (positions in chunk_ids and in `scores`) of a paper's chunks."""
        if self._rows_of is None:
            rows: dict[str, list[int]] = {}
            for i, pid in enumerate(self.paper_ids):
                rows.setdefault(pid, []).append(i)
            self._rows_of = rows
        return self._rows_of.get(paper_id, [])

    @classmethod
    def build(cls, chunk_ids: list[str], paper_ids: list[str], texts: list[str]) -> "Bm25Index":
        import bm25s

        retriever = bm25s.BM25()
        if texts:
            tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_stemmer(), show_progress=False)
            retriever.index(tokens, show_progress=False)
        return cls(retriever, chunk_ids, paper_ids)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if self.chunk_ids:
            self.retriever.save(str(folder / "bm25"))
        (folder / "chunks.json").write_text(
            json.dumps({"chunk_ids": self.chunk_ids, "paper_ids": list(self.paper_ids)}))

    @classmethod
    def load(cls, folder: Path) -> "Bm25Index":
        import bm25s

        meta = json.loads((folder / "chunks.json").read_text())
        retriever = bm25s.BM25.load(str(folder / "bm25")) if meta["chunk_ids"] else bm25s.BM25()
        return cls(retriever, meta["chunk_ids"], meta["paper_ids"])

    def query_tokens(self, query: str) -> list[str]:
        import bm25s

        toks = bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer,
                              return_ids=False, show_progress=False)
        return list(toks[0]) if toks else []

    def scores(self, query: str, mask: Optional[np.ndarray] = None) -> np.ndarray:
        """BM25 score of every chunk (0 where `mask` excludes it)."""
        if not self.chunk_ids:
            return np.zeros(0, dtype=np.float32)
        tokens = [t for t in self.query_tokens(query) if t in self.retriever.vocab_dict]
        if not tokens:
            return np.zeros(len(self.chunk_ids), dtype=np.float32)
        return self.retriever.get_scores(tokens, weight_mask=mask)

    def token_df(self, query: str) -> dict[str, int]:
        """Document frequency of each query token (0 when absent): how rare a match is."""
        out = {}
        for tok in self.query_tokens(query):
            tid = self.retriever.vocab_dict.get(tok)
            if tid is None:
                out[tok] = 0
            else:
                ptr = self.retriever.scores["indptr"]
                out[tok] = int(ptr[tid + 1] - ptr[tid])
        return out
