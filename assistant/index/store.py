"""The store: Chroma (embedded or server) for vectors + a BM25 index beside it (its caches and
corpus statistics are in cache.py). The store's layout, the revision stamped by every write, and
why we write to chromadb directly are described in the package docstring (__init__.py).
"""
from __future__ import annotations

import json
import shutil
import threading
import uuid
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from ..config import Settings
from ..embed import embed_texts, make_embedder, model_signature
from ..stats import CorpusStats, stats_key
from ..types import Filters, Paper
from .bm25 import Bm25Index
from .cache import GET_PAGE, CacheMixin
from .chroma import StoreError, StoreMismatch, StoreUnavailable, chroma_errors, open_chroma_client  # noqa: F401
from .chunking import Chunker, chunk_metadata, content_hash, embedding_text
from .filtering import FilterIndex
from .paper_vectors import PaperVectors, unit_vector
from .papers import PaperTable
from .sentences import SENTENCES_FILE, SentenceVectors, paper_sentences

SCHEMA_VERSION = 1
EMBEDDING_PAGE = 5000  # chunk vectors fetched per call by the whole-store pass


# ----------------------------------------------------------------------------- the store

@dataclass
class UpsertReport:
    papers_new: int = 0
    papers_updated: int = 0
    papers_unchanged: int = 0
    chunks_embedded: int = 0
    chunks_removed: int = 0

    def add(self, other: "UpsertReport") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class _UpsertPlan:
    """What one upsert_papers batch writes, worked out from the chunks stored before it."""
    old_hash: dict[str, Optional[str]]  # stored chunk id → content hash
    old_record: dict[str, Optional[str]]  # stored chunk id → paper record (chunk 0 only)
    keep: set[str] = field(default_factory=set)  # chunk ids the papers still have
    stale: list[str] = field(default_factory=list)  # stored chunk ids they no longer have
    relabel_ids: list[str] = field(default_factory=list)
    relabel_meta: list[dict] = field(default_factory=list)
    new_ids: list[str] = field(default_factory=list)
    new_docs: list[str] = field(default_factory=list)
    new_meta: list[dict] = field(default_factory=list)
    to_embed: list[str] = field(default_factory=list)
    # for the corpus statistics
    changed_papers: list[Paper] = field(default_factory=list)  # with chunks to (re-)embed
    counted_before: list[Paper] = field(default_factory=list)
    counted_now: list[Paper] = field(default_factory=list)


class Store(CacheMixin):
    """The persisted corpus: papers, chunks, vectors, BM25. Thread-safe for readers."""

    def __init__(self, settings: Settings, embedder=None, rebuild: bool = False):
        self.settings = settings
        self.embedder = embedder or make_embedder(settings)
        self.chunker = Chunker(settings.chunk_tokens, settings.chunk_overlap_tokens)
        self.client = open_chroma_client(settings)
        self.collection = self.client.get_or_create_collection(
            settings.collection,
            metadata={"hnsw:space": "cosine"},
        )
        self._lock = threading.RLock()
        self._cache_revision: Optional[str] = None
        self._bm25: Optional[Bm25Index] = None
        self._papers = PaperTable.empty()
        self._filter_index: Optional[FilterIndex] = None
        self._stats: Optional[CorpusStats] = None
        self._stats_revision: Optional[str] = None
        # statistics kept up to date by the writes of an ingest, saved by finish_ingest
        self._ingest_stats: Optional[CorpusStats] = None
        self._local = threading.local()  # .depth: this thread is inside request()
        self._sentence_vectors: Optional[SentenceVectors] = None
        self._paper_rows: Optional[PaperVectors] = None
        if rebuild:  # `ingest --rebuild`: whatever model built the store, start it afresh
            self.delete_all()
        else:
            self._check_manifest()

    # -- manifest
    @property
    def cache_dir(self) -> Path:
        return self.settings.store_dir / "cache"

    def _collection_meta(self) -> dict:
        return dict(self.collection.metadata or {})

    def _check_manifest(self) -> None:
        meta = self._collection_meta()
        signature = model_signature(self.settings)
        if "embed_model" not in meta:
            if self.collection.count() == 0:
                self._set_meta(embed_model=signature, schema=SCHEMA_VERSION, dim=0,
                               revision=uuid.uuid4().hex)
                return
            raise StoreMismatch(
                f"the store at {self.location()} has no manifest; rebuild it with "
                f"`paper-assistant ingest --rebuild FILE...`")
        if meta["embed_model"] != signature:
            raise StoreMismatch(
                f"the store at {self.location()} was built with embedding model "
                f"{meta['embed_model']} ({meta.get('dim')}-d) but this run uses {signature}. "
                f"Rebuild it with `paper-assistant ingest --rebuild FILE...` "
                f"(or point --store at another folder).")
        if int(meta.get("schema", 0)) > SCHEMA_VERSION:
            raise StoreMismatch(
                f"the store at {self.location()} has schema {meta['schema']}, newer than this "
                f"version ({SCHEMA_VERSION}); upgrade paper-assistant or rebuild the store.")

    def _set_meta(self, **values) -> None:
        meta = {k: v for k, v in self._collection_meta().items() if not k.startswith("hnsw:")}
        meta.update(values)
        self.collection.modify(metadata=meta)

    def revision(self) -> str:
        # Re-read: a Collection object caches its metadata, and another process (an ingest
        # running beside the server) may have written since.
        fresh = self.client.get_collection(self.settings.collection)
        # Follow it: a collection deleted and re-created elsewhere (`ingest --rebuild` beside a
        # running server) has a new id, and the old Collection object would fail every query.
        self.collection = fresh
        return str((fresh.metadata or {}).get("revision", ""))

    @contextmanager
    def request(self):
        """One request's reads (a search, a planned answer): the revision is read once, on
        entry; inside, reads use the caches then found current instead of asking Chroma again
        on every lookup. Re-entrant; per thread. A write in this process during the request
        invalidates the caches, and the next read inside checks the revision again."""
        local = self._local
        depth = getattr(local, "depth", 0)
        if depth == 0:
            self._ensure_cache()
        local.depth = depth + 1
        try:
            yield self
        finally:
            local.depth = depth

    def _in_request(self) -> bool:
        return getattr(self._local, "depth", 0) > 0

    def location(self) -> str:
        return self.settings.chroma_url or str(self.settings.store_dir)

    def _write_manifest(self) -> None:
        meta = self._collection_meta()
        manifest = {
            "embed_model": meta.get("embed_model"), "dim": meta.get("dim"),
            "schema": meta.get("schema"), "revision": meta.get("revision"),
            "papers": len(self.papers()), "chunks": self.collection.count(),
            "chroma": self.settings.chroma_url or "embedded",
            "collection": self.settings.collection,
        }
        self.settings.store_dir.mkdir(parents=True, exist_ok=True)
        (self.settings.store_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))

    def sentence_vectors(self) -> Optional[SentenceVectors]:
        """The title and sentence vectors kept beside the store (None: `sentence_vectors` is
        "memory")."""
        if self.settings.sentence_vectors == "memory":
            return None
        with self._lock:
            if self._sentence_vectors is None:
                self._sentence_vectors = SentenceVectors(
                    self.settings.store_dir / SENTENCES_FILE, model_signature(self.settings))
            return self._sentence_vectors

    # -- writing
    def upsert_papers(self, papers: list[Paper]) -> UpsertReport:
        """Add or replace papers. Unchanged chunks are not re-embedded; stale chunks go."""
        report = UpsertReport()
        if not papers:
            return report
        with self._lock:
            if self._ingest_stats is None:  # first write of an ingest: from the current stats
                self._ingest_stats = deepcopy(self._current_stats())
            # Stamp a new revision first: if we die mid-batch, caches are seen as stale.
            self._set_meta(revision=uuid.uuid4().hex)
            self._invalidate()
            plan = self._plan_upsert(papers, report)
            self._write_upsert(plan, report)
            # written: count it (a batch that failed above is caught by the fingerprint check
            # in _rebuild_cache, and the statistics are then rebuilt)
            self._ingest_stats.remove(plan.counted_before)
            self._ingest_stats.add(plan.counted_now)
        return report

    def _plan_upsert(self, papers: list[Paper], report: UpsertReport) -> _UpsertPlan:
        """Compare `papers` with their stored chunks: what to embed, relabel and remove.
        Counts new, updated and unchanged papers in `report`."""
        ids = [p.paper_id for p in papers]
        existing = self.collection.get(where={"paper_id": {"$in": ids}}, include=["metadatas"])
        plan = _UpsertPlan(
            old_hash={cid: m.get("hash") for cid, m in zip(existing["ids"], existing["metadatas"])},
            old_record={cid: m.get("paper") for cid, m in zip(existing["ids"], existing["metadatas"])})
        old_papers = {m["paper_id"] for m in existing["metadatas"]}
        for paper in papers:
            before = plan.old_record.get(f"{paper.paper_id}::0")
            before_paper = Paper.model_validate_json(before) if before else None
            if before_paper is None or stats_key(before_paper) != stats_key(paper):
                if before_paper is not None:
                    plan.counted_before.append(before_paper)
                plan.counted_now.append(paper)
            changed = self._plan_chunks(paper, plan)
            if changed:
                plan.changed_papers.append(paper)
            if paper.paper_id not in old_papers:
                report.papers_new += 1
            elif changed:
                report.papers_updated += 1
            else:
                report.papers_unchanged += 1
        plan.stale = [cid for cid in plan.old_hash if cid not in plan.keep]
        return plan

    def _plan_chunks(self, paper: Paper, plan: _UpsertPlan) -> bool:
        """Add one paper's chunks to `plan`; True when any of them must be (re-)embedded."""
        changed = False
        for chunk in self.chunker.chunk(paper):
            digest = content_hash(paper, chunk)
            plan.keep.add(chunk.chunk_id)
            if plan.old_hash.get(chunk.chunk_id) == digest:
                # same content from another place (line moved, other file): keep the
                # vector, refresh the stored record's `source`
                if chunk.index == 0 and plan.old_record.get(chunk.chunk_id) != paper.model_dump_json():
                    plan.relabel_ids.append(chunk.chunk_id)
                    plan.relabel_meta.append(chunk_metadata(paper, chunk, digest))
                continue
            changed = True
            plan.new_ids.append(chunk.chunk_id)
            plan.new_docs.append(chunk.text)
            plan.new_meta.append(chunk_metadata(paper, chunk, digest))
            plan.to_embed.append(embedding_text(paper, chunk.text))
        return changed

    def _write_upsert(self, plan: _UpsertPlan, report: UpsertReport) -> None:
        """Apply `plan` to Chroma: remove stale chunks, relabel moved ones, embed the rest."""
        if plan.stale:
            self.collection.delete(ids=plan.stale)
            report.chunks_removed = len(plan.stale)
        if plan.relabel_ids:
            self.collection.update(ids=plan.relabel_ids, metadatas=plan.relabel_meta)
        if plan.new_ids:
            vectors = embed_texts(self.embedder, plan.to_embed, self.settings.embed_batch_size)
            self.collection.upsert(ids=plan.new_ids, documents=plan.new_docs,
                                   metadatas=plan.new_meta, embeddings=vectors)
            report.chunks_embedded = len(plan.new_ids)
            if not self._collection_meta().get("dim"):
                self._set_meta(dim=int(vectors.shape[1]))
        if self.settings.sentence_vectors == "ingest":
            self.keep_sentence_vectors(plan.changed_papers)

    def keep_sentence_vectors(self, papers: Iterable[Paper]) -> int:
        """Embed and keep the title and sentence vectors of `papers` that are not kept yet (at
        ingest with `sentence_vectors = "ingest"`); how many texts were embedded."""
        kept = self.sentence_vectors()
        texts = [t for p in papers for t in paper_sentences(p)]
        if kept is None or not texts:
            return 0
        return kept.ensure(texts, lambda missing: embed_texts(self.embedder, missing,
                                                              SENTENCE_BATCH))

    def finish_ingest(self) -> None:
        """Rebuild and persist the caches after writes, so the next reader starts fast."""
        with self._lock:
            self._ensure_cache(force=True)
            self._write_manifest()
            if self.settings.paper_weight > 0:
                self.paper_rows()  # built now, so the first question after an ingest need not

    def delete_all(self) -> None:
        with self._lock:
            self.client.delete_collection(self.settings.collection)
            self.collection = self.client.get_or_create_collection(
                self.settings.collection, metadata={"hnsw:space": "cosine"})
            self._set_meta(embed_model=model_signature(self.settings), schema=SCHEMA_VERSION,
                           dim=0, revision=uuid.uuid4().hex)
            self._invalidate()
            self._ingest_stats = CorpusStats()
            kept = self.sentence_vectors()
            if kept is not None:
                kept.clear()
            shutil.rmtree(self.cache_dir, ignore_errors=True)
    # -- reading
    def bm25(self) -> Bm25Index:
        self._ensure_cache()
        assert self._bm25 is not None
        return self._bm25

    def papers(self) -> PaperTable:
        self._ensure_cache()
        return self._papers

    def paper(self, paper_id: str) -> Optional[Paper]:
        return self.papers().get(paper_id)

    def allowed_papers(self, filters: Optional[Filters]) -> Optional[frozenset[str]]:
        """Paper ids that pass `filters`, or None when there is no filter (cached per revision
        and filter)."""
        if filters is None or filters.is_empty():
            return None
        return self.filter_index().select(filters).ids

    def dense_search(self, query_vector: np.ndarray, n: int,
                     filters: Optional[Filters] = None) -> list[tuple[str, str, float, str]]:
        """(chunk_id, paper_id, cosine similarity, chunk text), best first, of the chunks of
        papers that pass `filters`. A filter is applied where it costs least (figures at
        100,000 papers in docs/benchmarks.md): a narrow one by exact search over its chunks'
        vectors here, one passing a large share by filtering Chroma's unfiltered neighbours,
        anything else by Chroma's metadata `where` (or paper ids for authors)."""
        count = len(self.bm25().chunk_ids)  # the cached revision's; Chroma's count() costs ~30 ms
        if count == 0:
            return []
        if filters is None or filters.is_empty():
            return self._dense_query(query_vector, min(n, count), None)
        index = self.filter_index()
        selection = index.select(filters)
        if not selection.ids:
            return []
        if selection.chunks <= LOCAL_CHUNKS:
            return self._dense_local(query_vector, n, index.vectors(filters, self._chunk_vectors))
        if selection.share >= OVERFETCH_SHARE:
            fetch = min(count, int(n / selection.share * 3) + n)
            hits = [h for h in self._dense_query(query_vector, fetch, None)
                    if h[1] in selection.ids]
            if len(hits) >= n or fetch >= count:
                return hits[:n]
        if selection.where is not None:  # category and years: Chroma's chunk metadata
            return self._dense_query(query_vector, min(n, count), selection.where)
        return self._dense_query_ids(query_vector, min(n, count), sorted(selection.ids))

    def _dense_local(self, query_vector: np.ndarray, n: int,
                     allowed: tuple[list[str], list[str], np.ndarray]
                     ) -> list[tuple[str, str, float, str]]:
        """Exact cosine search over a filter's chunk vectors (FilterIndex.vectors)."""
        ids, papers, matrix = allowed
        if not ids:
            return []
        sims = matrix @ unit_vector(query_vector)
        top = np.argsort(-sims, kind="stable")[:n]
        texts = self.chunk_texts([ids[i] for i in top])
        return [(ids[i], papers[i], float(sims[i]), texts.get(ids[i], "")) for i in top]

    def _chunk_vectors(self, chunk_ids: list[str]) -> np.ndarray:
        vectors: dict[str, np.ndarray] = {}
        for start in range(0, len(chunk_ids), GET_PAGE):
            res = self.collection.get(ids=chunk_ids[start:start + GET_PAGE],
                                      include=["embeddings"])
            vectors.update(zip(res["ids"], res["embeddings"]))
        dim = int(self._collection_meta().get("dim") or 0)
        return np.stack([np.asarray(vectors[c], dtype=np.float32) if c in vectors
                         else np.zeros(dim, dtype=np.float32) for c in chunk_ids]) \
            if chunk_ids else np.zeros((0, dim), dtype=np.float32)

    def _dense_query(self, query_vector: np.ndarray, n: int,
                     where: Optional[dict]) -> list[tuple[str, str, float, str]]:
        res = self.collection.query(query_embeddings=[query_vector.tolist()], n_results=n,
                                    where=where, include=["documents", "metadatas", "distances"])
        out = []
        for cid, doc, meta, dist in zip(res["ids"][0], res["documents"][0],
                                        res["metadatas"][0], res["distances"][0]):
            out.append((cid, meta["paper_id"], 1.0 - float(dist), doc))
        return out

    def _dense_query_ids(self, query_vector: np.ndarray, n: int,
                         ids: list[str]) -> list[tuple[str, str, float, str]]:
        """A filter Chroma's chunk metadata cannot say (authors): the allowed paper ids, in
        slices of IN_LIMIT (one `$in` with them all can exceed SQLite's 32,766 variables per
        statement), merged by similarity."""
        hits = []
        for start in range(0, len(ids), IN_LIMIT):
            hits += self._dense_query(query_vector, n,
                                      {"paper_id": {"$in": ids[start:start + IN_LIMIT]}})
        hits.sort(key=lambda h: -h[2])
        return hits[:n]

    def paper_vectors(self, paper_ids: list[str]) -> np.ndarray:
        """Each paper's mean chunk embedding, unit length, in the order given (zeros for
        unknown ids)."""
        dim = int(self._collection_meta().get("dim") or 0)
        if not paper_ids:
            return np.zeros((0, dim), dtype=np.float32)
        wanted = set(paper_ids)
        bm25 = self.bm25()
        # by chunk id, in pages: a `$in` of paper ids fails past SQLite's 32,766 variables
        chunks = [(c, p) for c, p in zip(bm25.chunk_ids, bm25.paper_ids) if p in wanted]
        vectors = self._chunk_vectors([c for c, _ in chunks])
        sums: dict[str, np.ndarray] = {}
        for (_, pid), v in zip(chunks, vectors):
            sums[pid] = sums.get(pid, 0) + v
        dim = dim or vectors.shape[1]
        return unit_rows(np.stack([sums.get(pid, np.zeros(dim, dtype=np.float32))
                                   for pid in paper_ids]))

    def all_paper_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every paper's mean chunk embedding, unit length, ids sorted (the same store gives
        the same rows), in one paged pass over the vectors (nothing is embedded). The paper is
        read from the chunk id ("<paper id>::<n>", chunking.py): asking Chroma for the
        metadata too made the read ten times slower (a chunk 0 carries its whole paper)."""
        owners_of: dict[str, int] = {}
        rows: list[np.ndarray] = []
        owners: list[np.ndarray] = []
        offset = 0
        while True:
            res = self.collection.get(include=["embeddings"], limit=EMBEDDING_PAGE, offset=offset)
            if not len(res["ids"]):
                break
            rows.append(np.asarray(res["embeddings"], dtype=np.float32))
            owners.append(np.asarray([owners_of.setdefault(cid.rpartition("::")[0] or cid,
                                                           len(owners_of))
                                      for cid in res["ids"]]))
            offset += len(res["ids"])
        if not owners_of:
            return [], np.zeros((0, 0), dtype=np.float32)
        emb, owner = np.concatenate(rows), np.concatenate(owners)
        sums = np.zeros((len(owners_of), emb.shape[1]), dtype=np.float32)
        np.add.at(sums, owner, emb)
        ids = list(owners_of)
        order = sorted(range(len(ids)), key=ids.__getitem__)
        return [ids[i] for i in order], unit_rows(sums[order])

    def paper_rows(self) -> PaperVectors:
        """Every paper's mean chunk vector for the paper side of hybrid search, for the current
        revision (kept in cache/, built from Chroma's vectors when absent or stale)."""
        with self._lock:
            self._ensure_cache()
            revision = self._cache_revision or ""
            if self._paper_rows is None or self._paper_rows.revision != revision:
                self._paper_rows = PaperVectors.load_or_build(self.cache_dir, revision,
                                                              self.all_paper_vectors)
            return self._paper_rows

    def chunk_texts(self, chunk_ids: list[str]) -> dict[str, str]:
        if not chunk_ids:
            return {}
        res = self.collection.get(ids=chunk_ids, include=["documents"])
        return dict(zip(res["ids"], res["documents"]))

    def stats(self) -> dict:
        papers = self.papers()  # first: refreshes the collection (and its metadata)
        meta = self._collection_meta()
        return {
            "papers": len(papers),
            "chunks": self.collection.count(),
            "embed_model": meta.get("embed_model"),
            "dim": meta.get("dim"),
            "schema": meta.get("schema"),
            "store": self.location(),
            "chroma": "server" if self.settings.chroma_url else "embedded",
            "collection": self.settings.collection,
        }

    def facets(self, authors: int = 50) -> dict:
        """Values for the UI's filters, from the corpus statistics (not the paper table): every
        category, the year range, how many authors, and only the `authors` most prolific names
        (the page searches the rest as the user types: CorpusStats.author_suggestions)."""
        stats = self.corpus_stats()
        year_min, year_max = stats.year_range()
        return {"categories": sorted(stats.categories),
                "authors": stats.author_suggestions("", authors),
                "author_count": len(stats.authors), "year_min": year_min, "year_max": year_max}


IN_LIMIT = 5000  # paper ids in one Chroma `$in` filter (see Store._dense_query_ids)
SENTENCE_BATCH = 64  # sentences are short: larger batches than chunks pay off
OVERFETCH_SHARE = 0.1  # a filter passing this share of papers is applied to unfiltered results
LOCAL_CHUNKS = 30_000  # a filter allowing at most this many chunks is searched exactly here


def iter_batches(items: Iterable, size: int):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; zero rows stay zero."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)
