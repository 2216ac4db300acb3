"""Hybrid retrieval: BM25 + dense (Chroma), fused per paper.

Fusion is convex by default (`settings.fusion = "convex"`): each chunk scores
α·dense + (1-α)·bm25/max(bm25), with α the weight `eval --tune` stored for this store
(tuning.py) or else `settings.hybrid_alpha`, and a paper takes its best
chunk's score. Reciprocal rank fusion (`fusion = "rrf"`) is the alternative, where a paper's
rank on each side is the rank of its best chunk. Either way the unit returned is a paper, once,
with its best chunk as the snippet, because that is what a researcher wants back.
llama-index's QueryFusionRetriever fuses nodes, not papers, and cannot apply one filter to both
a Chroma and a bm25s side, so this small step is written here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .config import Settings
from .index import Store
from .index.paper_vectors import PaperVectors
from .tuning import load_tuned_alpha
from .types import Filters, Hit


@dataclass
class ChunkScore:
    chunk_id: str
    paper_id: str
    text: str = ""
    dense: Optional[float] = None
    bm25: Optional[float] = None


class Retriever:
    def __init__(self, store: Store, settings: Settings):
        self.store = store
        self.settings = settings

    def embed_query(self, query: str) -> np.ndarray:
        return np.asarray(self.store.embedder.get_query_embedding(query), dtype=np.float32)

    def hybrid_alpha(self) -> float:
        """The dense weight of convex fusion: the one `eval --tune` stored for this store, else
        the settings' default."""
        tuned = load_tuned_alpha(self.settings.store_dir) if self.settings.tuned_fusion else None
        return self.settings.hybrid_alpha if tuned is None else tuned

    def search(self, query: str, k: Optional[int] = None, filters: Optional[Filters] = None,
               mode: str = "hybrid", fusion_candidates: Optional[int] = None,
               alpha: Optional[float] = None) -> list[Hit]:
        """The k best papers for `query`. `mode` is hybrid, bm25 or dense (for benchmarks and
        `eval`); `alpha` overrides the convex fusion weight (for `eval --tune`)."""
        k = k or self.settings.k
        n = max(fusion_candidates or self.settings.fusion_candidates, k * 3)
        with self.store.request():  # the store's revision is read once for the whole search
            allowed = self.store.allowed_papers(filters)
            if allowed is not None and not allowed:
                return []
            chunks: dict[str, ChunkScore] = {}
            active = filters if allowed is not None else None  # None: no filter, or an empty one
            bm25_scores = (self._bm25_side(query, n, active, chunks)
                           if mode in ("hybrid", "bm25") else None)
            if mode not in ("hybrid", "dense"):
                return self._fuse(chunks, k, mode, alpha)
            vector = self.embed_query(query)
            self._dense_side(vector, n, active, chunks)
            paper_side = mode == "hybrid" and self.settings.paper_weight > 0
            rows = self.store.paper_rows() if paper_side else None
            if rows is not None:
                self._paper_side(rows, vector, allowed, bm25_scores, chunks)
            self._read_unseen(vector, chunks)
            pooled = {c.paper_id for c in chunks.values()}
            papers = rows.cosines(vector, pooled) if rows is not None else {}
            return self._fuse(chunks, k, mode, alpha, papers)

    def _bm25_side(self, query: str, n: int, filters: Optional[Filters],
                   chunks: dict[str, ChunkScore]) -> np.ndarray:
        """Adds the n best chunks by BM25; returns every chunk's score (0 outside the filter)."""
        bm25 = self.store.bm25()
        mask = self.store.filter_index().select(filters).chunk_mask if filters else None
        scores = bm25.scores(query, mask)
        if scores.size == 0:
            return scores
        top = np.argsort(-scores)[:n]
        for i in top:
            if scores[i] <= 0:
                break
            cid = bm25.chunk_ids[i]
            chunks[cid] = ChunkScore(cid, str(bm25.paper_ids[i]), bm25=float(scores[i]))
        return scores

    def _paper_side(self, rows: PaperVectors, vector: np.ndarray,
                    allowed: Optional[frozenset[str]], bm25_scores: np.ndarray,
                    chunks: dict[str, ChunkScore]) -> None:
        """The papers whose whole abstract (mean chunk vector) is nearest the question join the
        pool with all their chunks, to be scored on both sides like the others (`bm25_scores`:
        every chunk's, from the BM25 side, which hybrid search always runs)."""
        pooled = {c.paper_id for c in chunks.values()}
        bm25 = self.store.bm25()
        for pid, _ in rows.search(vector, self.settings.paper_candidates, allowed):
            if pid in pooled:
                continue
            for i in bm25.chunk_rows(pid):
                score = float(bm25_scores[i])  # a paper's rows exist only where scores do
                cid = bm25.chunk_ids[i]
                chunks[cid] = ChunkScore(cid, pid, bm25=score if score > 0 else None)

    def _dense_side(self, vector: np.ndarray, n: int, filters: Optional[Filters],
                    chunks: dict[str, ChunkScore]) -> None:
        for cid, pid, sim, text in self.store.dense_search(vector, n, filters):
            entry = chunks.setdefault(cid, ChunkScore(cid, pid))
            entry.dense, entry.text = sim, text

    def _read_unseen(self, vector: np.ndarray, chunks: dict[str, ChunkScore]) -> None:
        # Chunks the dense search did not return (found by BM25 or the paper side) still need a
        # dense similarity (for the relevance gate) and their text (for snippets): one batched
        # read from Chroma.
        missing = [c.chunk_id for c in chunks.values() if c.dense is None]
        if missing:
            res = self.store.collection.get(ids=missing, include=["embeddings", "documents"])
            for cid, emb, doc in zip(res["ids"], res["embeddings"], res["documents"]):
                chunks[cid].dense = float(np.dot(np.asarray(emb, dtype=np.float32), vector))
                chunks[cid].text = doc

    def _fuse(self, chunks: dict[str, ChunkScore], k: int, mode: str,
              alpha: Optional[float] = None,
              papers: Optional[dict[str, float]] = None) -> list[Hit]:
        """`papers`: each pooled paper's whole-abstract cosine (the paper side; empty when off)."""
        if not chunks:
            return []
        if self.settings.fusion == "rrf":
            paper_score, chunk_score = self._rrf_scores(chunks, mode)
            self._add_paper_ranks(paper_score, papers or {})
        else:
            paper_score, chunk_score = self._convex_scores(chunks, mode, alpha)
            self._blend_papers(paper_score, papers or {})
        return self._to_hits(chunks, paper_score, chunk_score, k)

    def _blend_papers(self, paper_score: dict[str, float], papers: dict[str, float]) -> None:
        """Convex: a paper's score becomes (1-γ)·its best chunk's + γ·its whole-abstract cosine."""
        gamma = self.settings.paper_weight
        if not papers or gamma <= 0:
            return
        for pid, score in paper_score.items():
            paper_score[pid] = (1 - gamma) * score + gamma * papers.get(pid, 0.0)

    def _add_paper_ranks(self, paper_score: dict[str, float], papers: dict[str, float]) -> None:
        """RRF: the papers ranked by whole-abstract cosine are a third side, weighted γ."""
        rrf_k, gamma = self.settings.rrf_k, self.settings.paper_weight
        for rank, pid in enumerate(sorted(papers, key=lambda p: -papers[p])):
            if pid in paper_score:
                paper_score[pid] += gamma / (rrf_k + rank + 1)

    def _convex_scores(self, chunks: dict[str, ChunkScore], mode: str, alpha: Optional[float] = None):
        """score = α·dense + (1-α)·bm25/max(bm25), per chunk; a paper takes its best chunk.

        Unlike RRF this keeps how *much* better a hit is: a rare name that only BM25 finds
        (an author, a method) still ranks first instead of being averaged away.
        """
        hybrid = self.hybrid_alpha() if alpha is None else alpha
        alpha = {"dense": 1.0, "bm25": 0.0}.get(mode, hybrid)
        bm25_max = max((c.bm25 or 0.0) for c in chunks.values()) or 1.0
        chunk_score = {}
        for c in chunks.values():
            dense = c.dense if c.dense is not None else 0.0
            chunk_score[c.chunk_id] = alpha * dense + (1 - alpha) * (c.bm25 or 0.0) / bm25_max
        paper_score: dict[str, float] = {}
        for c in chunks.values():
            paper_score[c.paper_id] = max(paper_score.get(c.paper_id, -1e9), chunk_score[c.chunk_id])
        return paper_score, chunk_score

    def _rrf_scores(self, chunks: dict[str, ChunkScore], mode: str):
        rrf_k = self.settings.rrf_k
        weights = {"dense": self.settings.dense_weight, "bm25": self.settings.bm25_weight}
        chunk_score: dict[str, float] = {c: 0.0 for c in chunks}
        paper_score: dict[str, float] = {}
        for side, weight in weights.items():
            if mode not in ("hybrid", side):
                continue
            ranked = sorted((c for c in chunks.values() if getattr(c, side) is not None
                             and (side != "bm25" or c.bm25 > 0)),
                            key=lambda c: -getattr(c, side))
            seen_papers: set[str] = set()
            for rank, c in enumerate(ranked):
                chunk_score[c.chunk_id] += weight / (rrf_k + rank + 1)
                if c.paper_id not in seen_papers:
                    # a paper's rank on this side is the rank of its best chunk among papers
                    paper_rank = len(seen_papers)
                    seen_papers.add(c.paper_id)
                    paper_score[c.paper_id] = (paper_score.get(c.paper_id, 0.0)
                                               + weight / (rrf_k + paper_rank + 1))
        return paper_score, chunk_score

    def _to_hits(self, chunks: dict[str, ChunkScore], paper_score: dict[str, float],
                 chunk_score: dict[str, float], k: int) -> list[Hit]:
        best = sorted(paper_score, key=lambda p: -paper_score[p])[:k]
        by_paper: dict[str, list[ChunkScore]] = {}
        for c in chunks.values():
            by_paper.setdefault(c.paper_id, []).append(c)
        hits = []
        for pid in best:
            paper = self.store.paper(pid)
            if paper is None:
                continue
            own = by_paper[pid]
            top = max(own, key=lambda c: chunk_score[c.chunk_id])
            snippet = top.text or self.store.chunk_texts([top.chunk_id]).get(top.chunk_id, "")
            hits.append(Hit(
                paper=paper, score=paper_score[pid], snippet=snippet,
                bm25_score=max((c.bm25 or 0.0) for c in own),
                dense_score=max((c.dense if c.dense is not None else -1.0) for c in own),
                chunk_ids=[c.chunk_id for c in sorted(own, key=lambda c: -chunk_score[c.chunk_id])],
            ))
        return hits
