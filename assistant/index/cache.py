"""The store's caches (BM25 index, paper table) and corpus statistics, as a mixin of Store.

They live in the store's cache/ folder, tagged with the collection's revision and rebuilt from
Chroma (the source of truth) when it differs; stats.json, the corpus statistics
(stats.CorpusStats) of that revision, is kept up to date by ingest rather than rebuilt per reader.
"""
from __future__ import annotations

import json
import shutil
from typing import Optional

from ..stats import CorpusStats, fingerprint_of
from ..types import Paper
from .bm25 import Bm25Index
from .chunking import lexical_text
from .filtering import FilterIndex
from .papers import PAPERS_FILE, PaperTable

GET_PAGE = 2000  # rows fetched from Chroma per call when rebuilding caches
STATS_FILE = "stats.json"  # in cache/: the corpus statistics, tagged with their revision


class CacheMixin:
    """Store's caches and statistics. Uses the Store's collection, client, settings, cache_dir,
    _lock, revision() and _in_request()."""

    # -- caches (BM25, paper table)
    def _invalidate(self) -> None:
        self._cache_revision = None
        self._bm25 = None
        self._papers = PaperTable.empty()
        self._filter_index = None
        self._stats = None

    def _ensure_cache(self, force: bool = False) -> None:
        with self._lock:
            if not force and self._in_request() and self._cache_revision is not None:
                return  # checked when the request began
            revision = self.revision()
            if not force and self._cache_revision == revision:
                return
            if not force and self._load_cache(revision):
                return
            self._rebuild_cache(revision)

    def _load_cache(self, revision: str) -> bool:
        tag = self.cache_dir / "revision"
        if not tag.exists() or tag.read_text().strip() != revision:
            return False
        try:
            self._bm25 = Bm25Index.load(self.cache_dir)
            self._papers = self._open_paper_table()
            self._filter_index = None
            self._stats = None
        except Exception:
            return False  # a damaged cache is rebuilt from Chroma, the source of truth
        self._cache_revision = revision
        return True

    def _rebuild_cache(self, revision: str) -> None:
        chunk_ids: list[str] = []
        paper_ids: list[str] = []
        texts: list[str] = []
        papers: dict[str, Paper] = {}
        pending: list[tuple[str, str, str]] = []
        offset = 0
        while True:
            page = self.collection.get(include=["documents", "metadatas"], limit=GET_PAGE,
                                       offset=offset)
            if not page["ids"]:
                break
            for cid, doc, meta in zip(page["ids"], page["documents"], page["metadatas"]):
                if "paper" in meta:
                    paper = Paper.model_validate_json(meta["paper"])
                    papers[paper.paper_id] = paper
                pending.append((cid, meta["paper_id"], doc))
            offset += len(page["ids"])
        for cid, pid, doc in sorted(pending):
            paper = papers.get(pid)
            if paper is None:
                continue  # chunk of a paper whose chunk 0 is missing (interrupted write)
            chunk_ids.append(cid)
            paper_ids.append(pid)
            texts.append(lexical_text(paper, doc))
        bm25 = Bm25Index.build(chunk_ids, paper_ids, texts)
        # the statistics an ingest kept up to date, if they count exactly the papers stored
        stats, self._ingest_stats = self._ingest_stats, None
        if stats is not None and (stats.n_docs != len(papers)
                                  or stats.fingerprint != fingerprint_of(papers.values())):
            stats = None  # another writer, or a failed batch: built lazily by corpus_stats()
        tmp = self.cache_dir.with_name("cache.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        bm25.save(tmp)
        if stats is not None:
            stats.save(tmp / STATS_FILE, revision=revision)
        PaperTable.write(tmp / PAPERS_FILE, papers.values())
        (tmp / "revision").write_text(revision)
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        tmp.rename(self.cache_dir)
        self._bm25, self._cache_revision = bm25, revision
        # the ids and titles just written, in their order: no need to read them back
        self._papers = PaperTable(self.cache_dir / PAPERS_FILE, list(papers),
                                  [p.title for p in papers.values()])
        self._filter_index = None
        self._stats, self._stats_revision = stats, (revision if stats is not None else None)

    def _open_paper_table(self) -> PaperTable:
        """The cached paper table; a cache from before the table was kept in SQLite (its
        papers.json) is converted once instead of rebuilding everything from Chroma."""
        path, old = self.cache_dir / PAPERS_FILE, self.cache_dir / "papers.json"
        if not path.exists() and old.exists():
            rows = json.loads(old.read_text())
            PaperTable.write(path, (Paper(**r) for r in rows))
            old.unlink()
        return PaperTable.open(path)

    def filter_index(self) -> FilterIndex:
        """The paper table of the current revision as arrays, with each filter's selection
        cached (built on the first filtered request of a revision)."""
        with self._lock:
            self._ensure_cache()
            if self._filter_index is None:
                assert self._bm25 is not None
                self._filter_index = FilterIndex(self._papers.facets(), self._bm25.chunk_ids,
                                                 self._bm25.paper_ids)
            return self._filter_index

    def corpus_stats(self) -> CorpusStats:
        """Document frequencies, authors and vocabulary of the current revision: the ones
        ingest saved beside the BM25 index, held in memory until the revision changes. Built
        from the paper table (and saved) only when none were saved for this revision."""
        with self._lock:
            self._ensure_cache()
            revision = self._cache_revision
            if self._stats is None or self._stats_revision != revision:
                stats = self._load_stats(revision)
                if stats is None:
                    stats = CorpusStats.build(self._papers.values())
                    self._save_stats(stats, revision)
                self._stats, self._stats_revision = stats, revision
            return self._stats

    def _load_stats(self, revision: Optional[str]) -> Optional[CorpusStats]:
        path = self.cache_dir / STATS_FILE
        try:
            stats, extra = CorpusStats.load(path)
        except Exception:  # missing (an older store), damaged, another format: rebuilt
            return None
        return stats if extra.get("revision") == revision else None

    def _save_stats(self, stats: CorpusStats, revision: Optional[str]) -> None:
        tag = self.cache_dir / "revision"
        try:
            if tag.read_text().strip() == revision:  # only beside the cache they describe
                stats.save(self.cache_dir / STATS_FILE, revision=revision)
        except OSError:
            pass  # a read-only store still answers; the statistics stay in memory

    def _current_stats(self) -> CorpusStats:
        """The statistics of the store as it is now, for an ingest to update: the saved ones
        when current (without loading the paper table), else corpus_stats()."""
        # the revision as stored, without replacing self.collection in the middle of a write
        fresh = self.client.get_collection(self.settings.collection)
        revision = str((fresh.metadata or {}).get("revision", ""))
        if self._stats is not None and self._stats_revision == revision:
            return self._stats
        return self._load_stats(revision) or self.corpus_stats()
