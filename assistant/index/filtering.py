"""Filters over one store revision: which papers a `Filters` lets through, read three ways.

A filter selects papers by category (the exact category, or its area: "Deep Learning" takes
"Deep Learning · Theory"; a comma-separated category matches any of its parts), by author (a
case-insensitive substring of any author's name) and by a year range. For retrieval it is read as

- the allowed paper ids (planning; the dense side when nothing else can express the filter),
- a mask over the BM25 chunks,
- a Chroma `where` on the chunk metadata (`category`, `year`), so the dense side filters where
  the vectors are instead of sending thousands of ids; None when the filter names authors,
  which chunk metadata does not hold.

`FilterIndex` holds the paper table as arrays (one row per paper) so a filter is a few numpy
comparisons instead of a Python test per paper, and caches each filter's selection: it is built
for one store revision and dropped with the store's other caches when the revision changes.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import numpy as np

from ..types import Filters, Paper

CACHED_FILTERS = 64  # selections kept per revision (a page session reuses a handful)
CACHED_VECTORS = 60_000  # chunk vectors of narrow selections kept per revision (~90 MB)


def category_matches(category: Optional[str], wanted: Iterable[str]) -> bool:
    """The exact category, its area ("Deep Learning" ⊃ "Deep Learning · Theory"), or one part of a
    comma-separated category; case-insensitive."""
    cat = (category or "").lower()
    parts = [x.strip() for x in cat.split(",")]
    return any(cat == w or cat.startswith(w + " ·") or w in parts
               for w in (w.lower() for w in wanted))


def paper_matches(paper: Paper, filters: Filters) -> bool:
    """Whether one paper passes `filters` (the reference reading; FilterIndex vectorises it)."""
    if filters.categories and not category_matches(paper.category, filters.categories):
        return False
    if filters.authors:
        names = [a.lower() for a in paper.authors]
        if not any(w.lower() in n for w in filters.authors for n in names):
            return False
    if filters.year_min is not None and (paper.year is None or paper.year < filters.year_min):
        return False
    if filters.year_max is not None and (paper.year is None or paper.year > filters.year_max):
        return False
    return True


@dataclass(frozen=True)
class Selection:
    """What one filter lets through, in the forms retrieval uses."""

    ids: frozenset[str]  # allowed paper ids
    share: float  # allowed papers / all papers
    where: Optional[dict]  # the same filter on Chroma's chunk metadata, if it can say it
    chunk_mask: np.ndarray  # float32 per BM25 chunk: 1.0 where its paper is allowed
    chunks: int  # allowed chunks (the mask's sum)


class FilterIndex:
    """The paper table of one revision as arrays, with each filter's selection cached."""

    def __init__(self, facets: Iterable[tuple[str, Optional[int], Optional[str], list[str]]],
                 chunk_ids: list[str], chunk_paper_ids: Iterable[str]):
        """`facets`: (paper id, year, category, authors) per paper (PaperTable.facets())."""
        rows = list(facets)
        self.paper_ids = [r[0] for r in rows]
        self.years = np.array([np.nan if r[1] is None else float(r[1]) for r in rows])
        self.categories = sorted({r[2] for r in rows if r[2]})
        code = {c: i for i, c in enumerate(self.categories)}
        self.category_codes = np.array([code.get(r[2], -1) for r in rows], dtype=np.int32)
        # one string per paper; a substring of one name never spans the separator
        self.authors = [" | ".join(a.lower() for a in r[3]) for r in rows]
        position = {pid: i for i, pid in enumerate(self.paper_ids)}
        # each BM25 chunk's paper row (-1: a chunk whose paper is not in the table)
        self.chunk_rows = np.fromiter((position.get(pid, -1) for pid in chunk_paper_ids),
                                      dtype=np.int64)
        self.chunk_ids = chunk_ids
        self._cache: OrderedDict[str, Selection] = OrderedDict()
        self._vectors: OrderedDict[str, tuple[list[str], list[str], np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def select(self, filters: Filters) -> Selection:
        key = filters.model_dump_json()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        selection = self._select(filters)
        with self._lock:
            self._cache[key] = selection
            while len(self._cache) > CACHED_FILTERS:
                self._cache.popitem(last=False)
        return selection

    def vectors(self, filters: Filters, fetch: Callable[[list[str]], np.ndarray]
                ) -> tuple[list[str], list[str], np.ndarray]:
        """The chunk ids a filter allows, their papers' ids and their unit vectors (from
        `fetch(ids)`), kept while they fit in CACHED_VECTORS: a narrow filter is searched here
        exactly, in a millisecond, where Chroma's filtered query takes a few hundred (its
        metadata lookup dominates)."""
        key = filters.model_dump_json()
        with self._lock:
            if key in self._vectors:
                self._vectors.move_to_end(key)
                return self._vectors[key]
        mask = self.select(filters).chunk_mask
        rows = np.flatnonzero(mask)
        ids = [self.chunk_ids[i] for i in rows]
        papers = [self.paper_ids[self.chunk_rows[i]] for i in rows]
        matrix = np.asarray(fetch(ids), dtype=np.float32).reshape(len(ids), -1)
        matrix /= np.clip(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12, None)
        with self._lock:
            self._vectors[key] = (ids, papers, matrix)
            while sum(len(v[0]) for v in self._vectors.values()) > CACHED_VECTORS:
                self._vectors.popitem(last=False)
        return ids, papers, matrix

    def _select(self, filters: Filters) -> Selection:
        mask = np.ones(len(self.paper_ids), dtype=bool)
        codes = [i for i, c in enumerate(self.categories)
                 if category_matches(c, filters.categories)] if filters.categories else []
        if filters.categories:
            mask &= np.isin(self.category_codes, codes)
        if filters.authors:
            wanted = [w.lower() for w in filters.authors]
            mask &= np.fromiter((any(w in names for w in wanted) for names in self.authors),
                                dtype=bool, count=len(self.authors))
        with np.errstate(invalid="ignore"):  # a paper without a year fails any year bound
            if filters.year_min is not None:
                mask &= self.years >= filters.year_min
            if filters.year_max is not None:
                mask &= self.years <= filters.year_max
        ids = frozenset(self.paper_ids[i] for i in np.flatnonzero(mask))
        share = len(ids) / max(1, len(self.paper_ids))
        chunk_mask = np.append(mask, False)[self.chunk_rows].astype(np.float32)  # row -1: False
        where = chroma_where(filters, [self.categories[i] for i in codes])
        return Selection(ids, share, where, chunk_mask, int(chunk_mask.sum()))


def chroma_where(filters: Filters, categories: list[str]) -> Optional[dict]:
    """The filter on Chroma's chunk metadata: `categories` are the stored category values the
    filter's categories match. None when it names authors (not in the chunk metadata)."""
    if filters.authors:
        return None
    clauses: list[dict] = []
    if filters.categories:
        clauses.append({"category": {"$in": categories or ["\0none"]}})
    if filters.year_min is not None:
        clauses.append({"year": {"$gte": int(filters.year_min)}})
    if filters.year_max is not None:
        clauses.append({"year": {"$lte": int(filters.year_max)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}
