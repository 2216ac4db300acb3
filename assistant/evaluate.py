"""`paper-assistant eval`: how well retrieval finds papers of *this* corpus, without labelled data.

Each sampled paper asks for itself (known-item search): the query is built from the paper and
that paper is the one expected back.

Which query: the paper's title when it has a real one, since a title is what a reader
remembers. A derived title (the seed listing has none) is made from the abstract's first
sentence and sits in every chunk's embedded and BM25 text, so querying with that sentence would
be trivially easy; such papers are asked for with another sentence of the abstract, drawn with
the seeded generator among those with at least `eval_min_words` words (short ones, "We evaluate
on five benchmarks.", fit any paper). The sentence is held out of the *title*, not of the index:
it is still in the paper's chunk, so the figures are optimistic in absolute terms, BM25 most.
They are for comparing modes and fusion weights on your own papers, not a benchmark score.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Optional

from pydantic import BaseModel, Field

from .config import Settings
from .retrieve import Retriever
from .text import split_sentences
from .types import Paper

SEARCH_MODES = ("bm25", "dense", "hybrid")
Search = Callable[[str, int], list[str]]  # query, depth → paper ids, best first


@dataclass(frozen=True)
class EvalQuery:
    paper_id: str
    text: str
    kind: str  # "title" or "sentence"


class Scores(BaseModel):
    recall: dict[int, float]  # cutoff → share of queries whose paper is within it
    mrr: float  # mean reciprocal rank within the deepest cutoff (0 when not found)


class EvalReport(BaseModel):
    queries: int
    titles: int  # queries that are real titles (the rest are abstract sentences)
    skipped: int  # sampled papers with no usable query
    seed: int
    hybrid_alpha: float  # the dense weight the hybrid row used
    modes: dict[str, Scores]
    tuning: dict[float, Scores] = Field(default_factory=dict)  # alpha → hybrid scores (--tune)
    best_alpha: Optional[float] = None
    saved_to: Optional[str] = None


# -- queries

def build_queries(papers: dict[str, Paper], n: int, seed: int, min_words: int) -> tuple[list[EvalQuery], int]:
    """(queries, papers skipped) for a seeded sample of n papers; same seed, same queries."""
    rng = random.Random(seed)
    sample = rng.sample(sorted(papers), min(n, len(papers)))  # sorted: independent of store order
    queries = [paper_query(papers[pid], rng, min_words) for pid in sample]
    kept = [q for q in queries if q is not None]
    return kept, len(queries) - len(kept)


def paper_query(paper: Paper, rng: random.Random, min_words: int) -> Optional[EvalQuery]:
    if not paper.title_is_derived and paper.title.strip():
        return EvalQuery(paper.paper_id, paper.title, "title")
    later = [s for s in split_sentences(paper.abstract)[1:] if len(s.split()) >= min_words]
    return EvalQuery(paper.paper_id, rng.choice(later), "sentence") if later else None


# -- scoring

def score(queries: list[EvalQuery], search: Search, cutoffs: list[int]) -> Scores:
    ranks = [rank_of(q, search, max(cutoffs)) for q in queries]
    total = len(ranks) or 1
    recall = {c: sum(r is not None and r <= c for r in ranks) / total for c in cutoffs}
    return Scores(recall=recall, mrr=sum(1.0 / r for r in ranks if r) / total)


def rank_of(query: EvalQuery, search: Search, depth: int) -> Optional[int]:
    """1-based rank of the expected paper in the top `depth`, None when it is not there."""
    found = search(query.text, depth)
    return found.index(query.paper_id) + 1 if query.paper_id in found else None


def mode_search(retriever: Retriever, mode: str, alpha: Optional[float] = None) -> Search:
    def search(text: str, depth: int) -> list[str]:
        return [h.paper.paper_id for h in retriever.search(text, k=depth, mode=mode, alpha=alpha)]

    return search


# -- the whole run

def evaluate(retriever: Retriever, settings: Settings, n: int, seed: int, tune: bool) -> EvalReport:
    papers = retriever.store.papers()
    queries, skipped = build_queries(papers, n, seed, settings.eval_min_words)
    cutoffs = sorted(settings.eval_cutoffs)
    report = EvalReport(
        queries=len(queries), titles=sum(q.kind == "title" for q in queries), skipped=skipped,
        seed=seed, hybrid_alpha=retriever.hybrid_alpha(),
        modes={mode: score(queries, mode_search(retriever, mode), cutoffs) for mode in SEARCH_MODES},
    )
    if tune:
        report.tuning = {a: score(queries, mode_search(retriever, "hybrid", a), cutoffs)
                         for a in settings.tune_alphas}
        report.best_alpha = best_alpha(report.tuning, report.hybrid_alpha)
    return report


def best_alpha(tuning: dict[float, Scores], current: float) -> float:
    """Highest MRR; ties go to the best recall at the deepest cutoff, then to the weight closest
    to the current one: a tie is no evidence for moving away from it."""
    def key(alpha: float):
        s = tuning[alpha]
        return (round(s.mrr, 9), s.recall[max(s.recall)], -abs(alpha - current))

    return max(tuning, key=key)
