"""More like this: the papers nearest to one paper by meaning, each with the sentence that links it.

Nothing is re-embedded for the neighbours: the source paper's stored chunk vectors (their mean)
query Chroma's index, the chunks found are regrouped per paper, and the candidates are ranked by
the cosine between paper centroids, which is symmetric and does not favour papers that happen to
have one lucky chunk. Only the sentences of the k neighbours are embedded, to pick each one's
linking sentence: the one closest to the source abstract.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from pydantic import BaseModel

from .index import Store, StoreError
from .text import split_sentences
from .types import Paper

Embed = Callable[[list[str]], np.ndarray]


class UnknownPaper(StoreError):
    """The paper id asked about is not in the store."""


class SimilarPaper(BaseModel):
    paper: Paper
    score: float  # cosine between the two papers' mean chunk embeddings
    link: str  # the neighbour's sentence closest to the source abstract
    link_score: float  # its cosine to the source abstract

    def to_json(self) -> dict:
        p = self.paper
        return {"paper_id": p.paper_id, "title": p.title, "authors": p.authors,
                "category": p.category, "year": p.year, "score": round(self.score, 6),
                "link": self.link, "link_score": round(self.link_score, 6)}


def find_similar(store: Store, embed: Embed, paper_id: str, k: int, candidates: int) -> list[SimilarPaper]:
    source = store.paper(paper_id)
    if source is None:
        raise UnknownPaper(f"no paper with id {paper_id!r} in the store at {store.location()}")
    centre = store.paper_vectors([paper_id])[0]
    ranked = _rank(store, centre, _candidate_ids(store, centre, paper_id, max(candidates, k * 3)))[:k]
    target = embed([source.abstract])[0]
    return [_with_link(store.paper(pid), score, target, embed) for pid, score in ranked]


def _candidate_ids(store: Store, centre: np.ndarray, source_id: str, n: int) -> list[str]:
    """Papers owning the n chunks nearest the source centroid, nearest first, source excluded."""
    found = (pid for _, pid, _, _ in store.dense_search(centre, n))
    return [pid for pid in dict.fromkeys(found) if pid != source_id and store.paper(pid)]


def _rank(store: Store, centre: np.ndarray, paper_ids: list[str]) -> list[tuple[str, float]]:
    if not paper_ids:
        return []
    scores = store.paper_vectors(paper_ids) @ centre
    return sorted(zip(paper_ids, scores.tolist()), key=lambda pair: -pair[1])


def _with_link(paper: Paper, score: float, target: np.ndarray, embed: Embed) -> SimilarPaper:
    sentences = split_sentences(paper.abstract) or [paper.abstract]
    sims = embed(sentences) @ target
    best = int(np.argmax(sims))
    return SimilarPaper(paper=paper, score=score, link=sentences[best], link_score=float(sims[best]))

