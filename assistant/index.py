"""Chunking and the store: Chroma (embedded or server) for vectors + a BM25 index beside it.

Store layout (a folder, `vectorstore/` by default):
  chroma.sqlite3, <uuid>/   Chroma's own files (embedded mode; with --chroma-url they live on the server)
  manifest.json             embedding model, dimension, schema version, paper/chunk counts
  cache/                    BM25 index, chunk→paper map and paper table, tagged with the
                            collection's revision and rebuilt from Chroma when it differs;
                            stats.json, the corpus statistics (stats.CorpusStats) of that
                            revision, kept up to date by ingest rather than rebuilt per reader

Chroma is the source of truth. Every write first stamps a new revision on the collection, so a
cache written before an interrupted ingest can never be mistaken for a current one. Reading the
revision is a query to Chroma: a request (`Store.request()`) reads it once, on entry, and every
read inside it uses the caches it found current.

We write to chromadb directly rather than through llama-index's ChromaVectorStore because we
need upserts keyed by our own chunk ids, a content hash per chunk (so re-ingesting unchanged
papers embeds nothing and a resumed ingest only embeds what is missing), and removal of chunks
an edited abstract no longer has; llama-index's store only adds.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import threading
import uuid
from contextlib import contextmanager
from copy import deepcopy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional
from urllib.parse import urlparse

import numpy as np

from .config import Settings
from .embed import MINILM_MAX_TOKENS, count_tokens, embed_texts, make_embedder, model_signature
from .stats import CorpusStats, fingerprint_of, stats_key
from .types import Chunk, Filters, Paper

SCHEMA_VERSION = 1
GET_PAGE = 2000  # rows fetched from Chroma per call when rebuilding caches
STATS_FILE = "stats.json"  # in cache/: the corpus statistics, tagged with their revision


class StoreError(RuntimeError):
    pass


class StoreMismatch(StoreError):
    """The store was built with another embedding model or schema."""


# ----------------------------------------------------------------------------- chunking

def embedding_text(paper: Paper, chunk_text: str) -> str:
    """What the dense model sees: the title gives every window its paper's context."""
    return f"{paper.title}. {chunk_text}" if paper.title else chunk_text


def lexical_text(paper: Paper, chunk_text: str) -> str:
    """What BM25 sees: title and authors too, so names and method names match lexically."""
    return " ".join(x for x in (paper.title, ", ".join(paper.authors), paper.category or "",
                                chunk_text) if x)


@dataclass
class Chunker:
    """Sentence-aware windows that fit the embedding model's 256-token limit.

    A short abstract stays one chunk; a longer one becomes overlapping windows of whole
    sentences (llama-index's SentenceSplitter, counting tokens with the MiniLM tokenizer).
    """

    chunk_tokens: int = 200
    overlap_tokens: int = 40
    _splitters: dict = field(default_factory=dict, repr=False)

    def _get_splitter(self, size: int):
        if size not in self._splitters:
            from llama_index.core.node_parser import SentenceSplitter

            def tokenize(text: str) -> list[int]:
                return [0] * count_tokens(text)

            self._splitters[size] = SentenceSplitter(
                chunk_size=size, chunk_overlap=min(self.overlap_tokens, size // 4),
                tokenizer=tokenize,
            )
        return self._splitters[size]

    def chunk(self, paper: Paper) -> list[Chunk]:
        # every window is embedded after "title. ": the title's tokens come out of the 256
        budget = max(MINILM_MAX_TOKENS - 2 - count_tokens(paper.title + ". "), 32)
        if count_tokens(paper.abstract) <= budget:
            texts = [paper.abstract]
        else:
            splitter = self._get_splitter(min(self.chunk_tokens, budget))
            texts = [t for t in splitter.split_text(paper.abstract) if t.strip()]
        return [Chunk(chunk_id=f"{paper.paper_id}::{i}", paper_id=paper.paper_id, index=i, text=t)
                for i, t in enumerate(texts)]


def content_hash(paper: Paper, chunk: Chunk) -> str:
    """Changes whenever what is stored for the chunk would change.

    Chunk 0 carries the whole paper record, so its hash covers the whole paper. Fields added
    to Paper later (`doi`) count only when set, so stores built before them are not re-embedded."""
    unset_new = {"doi"} if paper.doi is None else set()
    fields = [paper.model_dump_json(exclude={"source", *unset_new})] if chunk.index == 0 else [
        paper.title, paper.authors, paper.category, paper.year]
    payload = json.dumps([*fields, chunk.text], ensure_ascii=False)
    return hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]


def chunk_metadata(paper: Paper, chunk: Chunk, digest: str) -> dict:
    """Flat metadata for Chroma filters; the whole paper rides on chunk 0 only."""
    meta: dict = {"paper_id": paper.paper_id, "chunk_index": chunk.index, "hash": digest,
                  "title": paper.title}
    if paper.category:
        meta["category"] = paper.category
    if paper.year is not None:
        meta["year"] = int(paper.year)
    if chunk.index == 0:
        meta["paper"] = paper.model_dump_json()
    return meta


# ----------------------------------------------------------------------------- BM25

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


def open_chroma_client(settings: Settings):
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_url:
        url = urlparse(settings.chroma_url)
        if not url.hostname:
            raise StoreError(f"--chroma-url {settings.chroma_url!r} is not http://HOST:PORT")
        try:
            return chromadb.HttpClient(host=url.hostname, port=url.port or 8000,
                                       ssl=url.scheme == "https", settings=chroma_settings)
        except Exception as exc:
            raise StoreError(f"cannot reach the Chroma server at {settings.chroma_url}: {exc}") from exc
    settings.store_dir.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(settings.store_dir), settings=chroma_settings)


class Store:
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
        self._papers: dict[str, Paper] = {}
        self._stats: Optional[CorpusStats] = None
        self._stats_revision: Optional[str] = None
        # statistics kept up to date by the writes of an ingest, saved by finish_ingest
        self._ingest_stats: Optional[CorpusStats] = None
        self._local = threading.local()  # .depth: this thread is inside request()
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
            ids = [p.paper_id for p in papers]
            existing = self.collection.get(where={"paper_id": {"$in": ids}}, include=["metadatas"])
            old_hash = {cid: m.get("hash") for cid, m in zip(existing["ids"], existing["metadatas"])}
            old_record = {cid: m.get("paper") for cid, m in zip(existing["ids"], existing["metadatas"])}
            relabel_ids, relabel_meta = [], []
            old_papers = {m["paper_id"] for m in existing["metadatas"]}

            new_ids, new_docs, new_meta, to_embed = [], [], [], []
            keep: set[str] = set()
            counted_before, counted_now = [], []  # for the corpus statistics
            for paper in papers:
                before = old_record.get(f"{paper.paper_id}::0")
                before_paper = Paper.model_validate_json(before) if before else None
                if before_paper is None or stats_key(before_paper) != stats_key(paper):
                    if before_paper is not None:
                        counted_before.append(before_paper)
                    counted_now.append(paper)
                changed = False
                for chunk in self.chunker.chunk(paper):
                    digest = content_hash(paper, chunk)
                    keep.add(chunk.chunk_id)
                    if old_hash.get(chunk.chunk_id) == digest:
                        # same content from another place (line moved, other file): keep the
                        # vector, refresh the stored record's `source`
                        if chunk.index == 0 and old_record.get(chunk.chunk_id) != paper.model_dump_json():
                            relabel_ids.append(chunk.chunk_id)
                            relabel_meta.append(chunk_metadata(paper, chunk, digest))
                        continue
                    changed = True
                    new_ids.append(chunk.chunk_id)
                    new_docs.append(chunk.text)
                    new_meta.append(chunk_metadata(paper, chunk, digest))
                    to_embed.append(embedding_text(paper, chunk.text))
                if paper.paper_id not in old_papers:
                    report.papers_new += 1
                elif changed:
                    report.papers_updated += 1
                else:
                    report.papers_unchanged += 1

            stale = [cid for cid in old_hash if cid not in keep]
            if stale:
                self.collection.delete(ids=stale)
                report.chunks_removed = len(stale)
            if relabel_ids:
                self.collection.update(ids=relabel_ids, metadatas=relabel_meta)
            if new_ids:
                vectors = embed_texts(self.embedder, to_embed, self.settings.embed_batch_size)
                self.collection.upsert(ids=new_ids, documents=new_docs, metadatas=new_meta,
                                       embeddings=vectors)
                report.chunks_embedded = len(new_ids)
                if not self._collection_meta().get("dim"):
                    self._set_meta(dim=int(vectors.shape[1]))
            # written: count it (a batch that failed above is caught by the fingerprint check
            # in _rebuild_cache, and the statistics are then rebuilt)
            self._ingest_stats.remove(counted_before)
            self._ingest_stats.add(counted_now)
        return report

    def finish_ingest(self) -> None:
        """Rebuild and persist the caches after writes, so the next reader starts fast."""
        with self._lock:
            self._ensure_cache(force=True)
            self._write_manifest()

    def delete_all(self) -> None:
        with self._lock:
            self.client.delete_collection(self.settings.collection)
            self.collection = self.client.get_or_create_collection(
                self.settings.collection, metadata={"hnsw:space": "cosine"})
            self._set_meta(embed_model=model_signature(self.settings), schema=SCHEMA_VERSION,
                           dim=0, revision=uuid.uuid4().hex)
            self._invalidate()
            self._ingest_stats = CorpusStats()
            shutil.rmtree(self.cache_dir, ignore_errors=True)

    # -- caches (BM25, paper table)
    def _invalidate(self) -> None:
        self._cache_revision = None
        self._bm25 = None
        self._papers = {}
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
            rows = json.loads((self.cache_dir / "papers.json").read_text())
            self._papers = {r["paper_id"]: Paper(**r) for r in rows}
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
        (tmp / "papers.json").write_text(json.dumps(
            [p.model_dump() for p in papers.values()], ensure_ascii=False))
        (tmp / "revision").write_text(revision)
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        tmp.rename(self.cache_dir)
        self._bm25, self._papers, self._cache_revision = bm25, papers, revision
        self._stats, self._stats_revision = stats, (revision if stats is not None else None)

    # -- reading
    def bm25(self) -> Bm25Index:
        self._ensure_cache()
        assert self._bm25 is not None
        return self._bm25

    def papers(self) -> dict[str, Paper]:
        self._ensure_cache()
        return self._papers

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

    def paper(self, paper_id: str) -> Optional[Paper]:
        return self.papers().get(paper_id)

    def allowed_papers(self, filters: Optional[Filters]) -> Optional[set[str]]:
        """Paper ids that pass `filters`, or None when there is no filter."""
        if filters is None or filters.is_empty():
            return None
        return {pid for pid, p in self.papers().items() if paper_matches(p, filters)}

    def dense_search(self, query_vector: np.ndarray, n: int,
                     allowed: Optional[set[str]] = None) -> list[tuple[str, str, float, str]]:
        """(chunk_id, paper_id, cosine similarity, chunk text), best first."""
        self._ensure_cache()  # also picks up a collection re-created by another process
        count = self.collection.count()
        if count == 0 or (allowed is not None and not allowed):
            return []
        where = {"paper_id": {"$in": sorted(allowed)}} if allowed is not None else None
        res = self.collection.query(query_embeddings=[query_vector.tolist()],
                                    n_results=min(n, count), where=where,
                                    include=["documents", "metadatas", "distances"])
        out = []
        for cid, doc, meta, dist in zip(res["ids"][0], res["documents"][0],
                                        res["metadatas"][0], res["distances"][0]):
            out.append((cid, meta["paper_id"], 1.0 - float(dist), doc))
        return out

    def paper_vectors(self, paper_ids: list[str]) -> np.ndarray:
        """Each paper's mean chunk embedding, in the order given (zeros for unknown ids)."""
        dim = int(self._collection_meta().get("dim") or 0)
        if not paper_ids:
            return np.zeros((0, dim), dtype=np.float32)
        res = self.collection.get(where={"paper_id": {"$in": list(paper_ids)}},
                                  include=["embeddings", "metadatas"])
        sums: dict[str, np.ndarray] = {}
        for emb, meta in zip(res["embeddings"], res["metadatas"]):
            v = np.asarray(emb, dtype=np.float32)
            sums[meta["paper_id"]] = sums.get(meta["paper_id"], 0) + v
        dim = dim or next((len(v) for v in sums.values()), 0)
        return np.stack([sums.get(pid, np.zeros(dim, dtype=np.float32)) for pid in paper_ids])

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


def paper_matches(paper: Paper, filters: Filters) -> bool:
    if filters.categories:
        cat = (paper.category or "").lower()
        wanted = [c.lower() for c in filters.categories]
        # a filter matches the exact category or its area ("Deep Learning" ⊃ "Deep Learning · Theory")
        if not any(cat == w or cat.startswith(w + " ·") or w in [x.strip() for x in cat.split(",")]
                   for w in wanted):
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


def iter_batches(items: Iterable, size: int):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
