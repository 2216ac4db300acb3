"""Sentence vectors on disk beside the store, so a question embeds only itself.

Answering compares the question with the sentences (and titles) of its candidate papers: the
relevance judgement, the evidence chosen for the prompt, the citation check and table cells all
do. Each sentence's vector is computed once, the first time a question needs it (or at ingest,
`Settings.sentence_vectors = "ingest"`), and kept in `sentences.sqlite` in the store folder, keyed
by the text's hash and the embedding model; a later question, or a restarted server, reads it back.

SQLite rather than Chroma: these are exact lookups by key, never a nearest-neighbour search, and
one small file that several processes can read while one writes (WAL). A store folder that cannot
be written (read-only, disk full) leaves the vectors in memory only: answers are the same, slower.
"""
from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from ..text import split_sentences
from ..types import Paper

log = logging.getLogger(__name__)

SENTENCES_FILE = "sentences.sqlite"
READ_BATCH = 500  # keys per SELECT (SQLite allows 32,766 variables in a statement)


def paper_sentences(paper: Paper) -> list[str]:
    """The texts of a paper that answering compares with a question: its title and sentences."""
    return [t for t in (paper.title, *split_sentences(paper.abstract)) if t]


def text_key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()[:16]


class SentenceVectors:
    """Vectors of texts by their hash, for one embedding model, in one SQLite file."""

    def __init__(self, path: Path, model: str):
        self.path = Path(path)
        self.model = model
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=10, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
                db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB)")
                row = db.execute("SELECT v FROM meta WHERE k = 'model'").fetchone()
                if row is None or row[0] != self.model:  # another model's vectors: start afresh
                    db.execute("DELETE FROM vectors")
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('model', ?)", (self.model,))
                db.commit()
                self._db = db
            except (sqlite3.Error, OSError) as exc:
                self._disable(exc)
        return self._db

    def _disable(self, exc: Exception) -> None:
        log.warning("sentence vectors stay in memory only (%s: %s)", self.path, exc)
        self._broken = True
        self._db = None

    def get(self, texts: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those `texts` that have one."""
        with self._lock:
            db = self._connect()
            if db is None or not texts:
                return {}
            by_key = {text_key(t): t for t in texts}
            keys = list(by_key)
            found: dict[str, np.ndarray] = {}
            try:
                for start in range(0, len(keys), READ_BATCH):
                    part = keys[start:start + READ_BATCH]
                    rows = db.execute(f"SELECT key, vec FROM vectors WHERE key IN "
                                      f"({','.join('?' * len(part))})", part).fetchall()
                    for key, blob in rows:
                        found[by_key[key]] = np.frombuffer(blob, dtype=np.float32).copy()
            except sqlite3.Error as exc:
                self._disable(exc)
            return found

    def put(self, vectors: dict[str, np.ndarray]) -> None:
        with self._lock:
            db = self._connect()
            if db is None or not vectors:
                return
            try:
                db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)",
                               [(text_key(t), np.asarray(v, dtype=np.float32).tobytes())
                                for t, v in vectors.items()])
                db.commit()
            except sqlite3.Error as exc:
                self._disable(exc)

    def ensure(self, texts: Iterable[str], embed: Callable[[list[str]], np.ndarray]) -> int:
        """Embed and keep the texts that have no vector yet; how many were embedded."""
        unique = list(dict.fromkeys(texts))
        have = self.get(unique)
        missing = [t for t in unique if t not in have]
        if missing:
            self.put(dict(zip(missing, embed(missing))))
        return len(missing)

    def clear(self) -> None:
        with self._lock:
            db = self._connect()
            if db is not None:
                try:
                    db.execute("DELETE FROM vectors")
                    db.commit()
                except sqlite3.Error as exc:
                    self._disable(exc)

    def count(self) -> int:
        with self._lock:
            db = self._connect()
            return 0 if db is None else db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
