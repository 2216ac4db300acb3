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

The package: chunking.py (chunks and what is stored with them), bm25.py (the lexical index),
store.py (Store: upserts, reads), chroma.py (the Chroma client and the store's errors) and cache.py (Store's caches and corpus
statistics). Everything is importable from `assistant.index` as before; a test or benchmark that
patches a module attribute must patch it where it is used (e.g. `assistant.index.store.embed_texts`).
"""
from .bm25 import Bm25Index, _stemmer
from .cache import GET_PAGE, STATS_FILE, CacheMixin
from .chunking import Chunker, chunk_metadata, content_hash, embedding_text, lexical_text
from .chroma import (StoreError, StoreMismatch, StoreUnavailable, chroma_errors, is_unreachable,
                     open_chroma_client)
from .filtering import FilterIndex, Selection, paper_matches
from .sentences import SENTENCES_FILE, SentenceVectors, paper_sentences
from .store import SCHEMA_VERSION, Store, UpsertReport, iter_batches

__all__ = [
    "GET_PAGE", "SCHEMA_VERSION", "STATS_FILE",
    "Bm25Index", "CacheMixin", "Chunker", "Store", "StoreError", "StoreMismatch", "StoreUnavailable",
    "UpsertReport", "chroma_errors", "is_unreachable",
    "chunk_metadata", "content_hash", "embedding_text", "iter_batches", "lexical_text",
    "open_chroma_client", "paper_matches", "FilterIndex", "Selection", "SENTENCES_FILE",
    "SentenceVectors", "paper_sentences",
]
