"""The public Python API. The CLI, the Gradio UI and the HTTP API are thin shells over it.

    from assistant import PaperAssistant
    pa = PaperAssistant()                    # settings from env (PAPER_ASSISTANT_*) and defaults
    pa.ingest(["papers.jsonl"])
    pa.search("federated backdoor attacks")
    answer = pa.ask("Which paper studies backdoors in FL?")
    pa.ask("Who wrote it?", history=[Turn(role="user", ...), answer.as_turn()])
    PaperAssistant(settings, store=pa.store, llm=my_llm)   # parts passed in, e.g. by tests
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

from .config import SEED_CORPUS, Settings, load_settings
from .index import Store, chroma_errors
from .ingest import FileReport, ingest_paths
from .retrieve import Retriever
from .evaluate import EvalReport, evaluate
from .similar import SimilarPaper, find_similar
from .tuning import save_tuned_alpha
from .types import Answer, Filters, Hit, Turn

log = logging.getLogger("assistant")


class PaperAssistant:
    def __init__(self, settings: Optional[Settings] = None, store: Optional[Store] = None,
                 llm=None, embedder=None, **overrides):
        """Every part defaults to what `settings` name, made on first use; pass one in to share
        it or to choose it (tests pass a small real model, or the `none` backend, this way).

        `store`: an open store to use (e.g. one shared by several assistants).
        `llm`: the language model that answers (a llama-index LLM), instead of the one
        `settings.llm_backend` names; it answers only when that backend is not "none".
        `embedder`: the embedding model (a llama-index BaseEmbedding) of the store this
        assistant opens, instead of the one `settings` name; a given `store` has its own."""
        if store is not None and embedder is not None and embedder is not store.embedder:
            raise ValueError("the store given embeds with its own model: pass `embedder` to its Store")
        self.settings = settings or load_settings(**overrides)
        self._store: Optional[Store] = store
        self._embedder = embedder
        self._llm = llm
        self._retriever: Optional[Retriever] = None
        self._engine = None
        self._lock = threading.RLock()
        self._map = None  # the collection map of the store's current revision (assistant/map.py)
        self._map_lock = threading.Lock()  # one build at a time
        self._map_start_lock = threading.Lock()  # one background build started at a time
        self._map_build = None  # the latest map build's MapProgress

    # -- parts, created on first use so `--help` and `stats` stay fast
    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                with self._chroma():
                    self._store = self._open_store()
            return self._store

    def _open_store(self, rebuild: bool = False) -> Store:
        """The store `settings` name, embedding with the injected embedder if there is one."""
        return Store(self.settings, embedder=self._embedder, rebuild=rebuild)

    def _chroma(self):
        """A Chroma server that stops answering is a StoreUnavailable (a StoreError) with a
        clear message for every front (/v1 answers 503); the next call after it is back works."""
        return chroma_errors(self.settings.chroma_url or str(self.settings.store_dir))

    @property
    def retriever(self) -> Retriever:
        if self._retriever is None:
            self._retriever = Retriever(self.store, self.settings)
        return self._retriever

    @property
    def engine(self):
        # imported on first use, as the map below: they pull in llama-index and the model code,
        # which `ingest`, `search` and `--help` never need (seconds of start-up on two cores)
        from .answer import AnswerEngine

        with self._lock:
            if self._engine is None:
                self._engine = AnswerEngine(self.settings, self.retriever, llm=self._llm)
            return self._engine

    # -- corpus
    def ingest(self, paths: Iterable[Path | str], skip_bad: bool = False, rebuild: bool = False,
               progress_factory=None, background_map: bool = False) -> list[FileReport]:
        """Read corpus files into the store, then (map_after_ingest) build the map of the new
        revision: before returning, or with `background_map` in a thread followed by
        `map_build` (the page's upload, so the upload answers at once)."""
        if rebuild:
            with self._lock:
                if self._store is None:  # opening it normally would raise StoreMismatch
                    self._store = self._open_store(rebuild=True)
                else:
                    self._store.delete_all()
        with self._chroma():
            reports = ingest_paths(self.store, [Path(p) for p in paths], skip_bad, progress_factory,
                                   self.settings.ingest_batch_papers)
            if self.settings.map_after_ingest and any(r.papers for r in reports):
                # built now and cached with the store: the page opens it at once
                if background_map:
                    self.start_map_build()
                else:
                    self.collection_map()
        return reports

    def ensure_corpus(self, progress_factory=None) -> Optional[list[FileReport]]:
        """Index the bundled demo corpus when the store is empty (what `make run` relies on)."""
        with self._chroma():
            if self.store.collection.count() > 0:
                return None
        return self.ingest([SEED_CORPUS], progress_factory=progress_factory)

    def stats(self) -> dict:
        with self._chroma():
            return self.store.stats()

    def facets(self, authors: int = 50) -> dict:
        """Categories, the year range, the author count and the `authors` most prolific names."""
        with self._chroma():
            return self.store.facets(authors)

    def author_suggestions(self, typed: str = "", limit: int = 50) -> list[str]:
        """Author names containing `typed` (any part of a name), most prolific first."""
        with self._chroma():
            return self.store.corpus_stats().author_suggestions(typed, limit)

    def collection_map(self, rebuild: bool = False, progress=None):
        """The map of the collection (assistant.map.CollectionMap): every paper in 2-D, coloured
        by labelled themes. Cached in memory and in the store's cache folder, both tagged with
        the store revision: after a write it is rebuilt on the next call (reporting to
        `progress`, an assistant.map.MapProgress, or to a new one in `map_build`)."""
        from .map import MapProgress, build_map, map_signature

        signature = map_signature(self.settings)
        progress = progress or MapProgress()
        error = None
        try:
            with self._map_lock:
                found = None if rebuild else self._current_map(signature)
                if found is None:
                    self._map_build = progress
                    found = build_map(self.store, self.settings.map_max_clusters,
                                      method=self.settings.map_layout,
                                      threads=self.settings.map_threads, progress=progress)
                    self._save_map(found, signature)
                found.signature = signature
                self._map = found
                return found
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            progress.finish(error)

    def _current_map(self, signature: dict):
        """The map of the store's current revision from memory or the store's cache, or None
        when it has to be built."""
        from .map import CollectionMap

        revision = self.store.revision()
        current = self._map
        if current is not None and current.revision == revision \
                and getattr(current, "signature", None) == signature:
            return current
        found = CollectionMap.load(self.store.cache_dir, revision, signature)
        if found is not None:
            found.signature = signature
            self._map = found
        return found

    def _save_map(self, found, signature: dict) -> None:
        folder = self.store.cache_dir
        try:  # only beside the cache of the same revision (which a new revision replaces)
            if (folder / "revision").read_text().strip() == found.revision:
                found.save(folder, signature)
        except OSError:
            pass  # a read-only store still gets its map, in memory

    @property
    def map_build(self):
        """The latest map build (assistant.map.MapProgress): under way until its `done` is set;
        None before any."""
        return self._map_build

    def start_map_build(self):
        """Build the map of the current revision in a background thread (unless one is under
        way); the MapProgress to follow. Errors end up in its `error`."""
        from .map import MapProgress

        with self._map_start_lock:
            build = self._map_build
            if build is not None and not build.done.is_set():
                return build
            build = self._map_build = MapProgress()
            threading.Thread(target=self._build_map_quietly, args=(build,), daemon=True,
                             name="map").start()
            return build

    def _build_map_quietly(self, progress) -> None:
        try:
            self.collection_map(progress=progress)
        except Exception:  # recorded in progress.error for whoever follows the build
            log.exception("the map could not be built")

    def map_progress(self):
        """None when the map of the current revision is ready (in memory or cached); else the
        build under way, started in the background now if none is: what the Map tab shows
        instead of waiting without a word."""
        from .map import map_signature

        build = self._map_build
        if build is not None and not build.done.is_set():
            return build
        if self._current_map(map_signature(self.settings)) is not None:
            return None
        return self.start_map_build()

    # -- retrieval
    def search(self, query: str, k: Optional[int] = None,
               filters: Optional[Filters] = None) -> list[Hit]:
        with self._chroma():
            return self.retriever.search(query, k=k, filters=filters)

    def similar(self, paper_id: str, k: Optional[int] = None) -> list[SimilarPaper]:
        """The k papers nearest `paper_id` by meaning, each with its sentence that best links it
        to the source paper. Raises UnknownPaper (a StoreError) for an id not in the store."""
        k = k or self.settings.similar_k
        # the engine's sentence embedder: its cache is shared with answering
        with self._chroma(), self.store.request():
            return find_similar(self.store, self.engine.embed, paper_id, k,
                                self.settings.similar_candidates)

    def evaluate(self, n: Optional[int] = None, seed: Optional[int] = None,
                 tune: bool = False) -> EvalReport:
        """Recall@k and MRR of bm25, dense and hybrid retrieval on known-item queries built from
        a seeded sample of the store's own papers. With tune, also tries the settings'
        `tune_alphas` and stores the best one beside the store, where search then uses it."""
        if tune and self.settings.fusion != "convex":
            raise ValueError("--tune chooses the convex fusion weight; set fusion=convex")
        n = self.settings.eval_sample if n is None else n
        seed = self.settings.eval_seed if seed is None else seed
        report = evaluate(self.retriever, self.settings, n, seed, tune)
        if tune and report.best_alpha is not None and report.queries:
            report.saved_to = str(save_tuned_alpha(self.settings.store_dir, report.best_alpha, {
                "queries": report.queries, "seed": seed, "revision": self.store.revision(),
                "mrr": report.tuning[report.best_alpha].mrr}))
        return report

    # -- answers
    def ask(self, message: str, history: Sequence[Turn] = (), mode: Optional[str] = None,
            filters: Optional[Filters] = None, k: Optional[int] = None) -> Answer:
        with self._chroma():
            return self.engine.answer(message, list(history), mode=mode, filters=filters, k=k)

    def ask_stream(self, message: str, history: Sequence[Turn] = (), mode: Optional[str] = None,
                   filters: Optional[Filters] = None, k: Optional[int] = None) -> Iterator:
        """Events: ("reading", [Hit]) when the model first reads the closest papers to judge
        which answer the message, ("retrieved", [Hit]), ("waiting", requests ahead),
        ("token", str)..., ("final", Answer)."""
        with self._chroma():
            events = self.engine.stream(message, list(history), mode=mode, filters=filters, k=k)
        return self._guarded(events)

    def _guarded(self, events: Iterator) -> Iterator:
        with self._chroma():
            yield from events

    def warm_up(self) -> None:
        """Load the embedding session and the language model now, not on the first question
        (a server calls this in a background thread at start)."""
        self.store.embedder.get_query_embedding("warm up")
        llm = self.engine._get_llm([])
        load = getattr(llm, "load", None)
        if callable(load):
            load()

    def backend_label(self) -> str:
        from .llm import backend_label

        return backend_label(self.settings)
