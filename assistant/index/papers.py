"""The paper table of one store revision, in SQLite beside the BM25 index (cache/papers.sqlite),
read on demand.

Held in memory as `Paper` objects, a 100,000-paper table costs ~370 MB of RSS and ~9 s to load
at every start (docs/benchmarks.md); here only the ids and titles are in memory (titles: "more
like <title>" and named comparisons scan them), a paper is read when it is asked for (a
primary-key lookup, ~60 µs) and the last few thousand read are kept.

`PaperTable` is a read-only `Mapping[str, Paper]` in the store's order; `write` makes the file
from the papers of a rebuild, `open` reads one, `empty()` stands for a store with nothing
cached. The file is replaced, never changed, when the revision changes: a request still holding
the old table keeps reading the old (unlinked) file.
"""
from __future__ import annotations

import json
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import ItemsView, ValuesView
from pathlib import Path
from typing import Iterable, Iterator, Mapping, Optional

from ..types import Paper

PAPERS_FILE = "papers.sqlite"  # in the store's cache/ folder
KEPT_PAPERS = 4096  # papers kept decoded after a read (a question reads a few dozen)
SCAN_PAGE = 2000  # rows decoded per query when every paper is read in order

_SCHEMA = """CREATE TABLE papers (
    pos INTEGER PRIMARY KEY,   -- the store's order
    paper_id TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    year INTEGER,
    category TEXT,
    authors TEXT NOT NULL,     -- JSON list
    json TEXT NOT NULL         -- Paper.model_dump_json()
)"""


class PaperTable(Mapping[str, Paper]):
    """paper id → Paper, read from `path` (None: the empty table)."""

    def __init__(self, path: Optional[Path], ids: list[str], titles: list[str]):
        """`ids` and `titles`: the file's, in its order (what `open` reads from it)."""
        self._ids = ids
        self._titles = titles
        self._position = {pid: i for i, pid in enumerate(ids)}
        self._kept: OrderedDict[str, Paper] = OrderedDict()
        self._lock = threading.Lock()  # one connection, shared by the server's threads
        self._db = _read_only(path, check_same_thread=False) if path is not None else None

    @classmethod
    def empty(cls) -> "PaperTable":
        return cls(None, [], [])

    @classmethod
    def write(cls, path: Path, papers: Iterable[Paper]) -> None:
        """A new table file at `path` (replacing one there) holding `papers` in their order."""
        path.unlink(missing_ok=True)
        db = sqlite3.connect(path)
        try:
            db.execute(_SCHEMA)
            db.executemany(
                "INSERT INTO papers (paper_id, title, year, category, authors, json) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                ((p.paper_id, p.title, p.year, p.category, json.dumps(p.authors, ensure_ascii=False),
                  p.model_dump_json()) for p in papers))
            db.commit()
        finally:
            db.close()

    @classmethod
    def open(cls, path: Path) -> "PaperTable":
        """The table at `path`; sqlite3.Error (or FileNotFoundError) when it is not one."""
        if not path.is_file():
            raise FileNotFoundError(path)
        db = _read_only(path)
        try:
            rows = db.execute("SELECT paper_id, title FROM papers ORDER BY pos").fetchall()
        finally:
            db.close()
        return cls(path, [r[0] for r in rows], [r[1] for r in rows])

    # -- Mapping
    def __getitem__(self, paper_id: str) -> Paper:
        with self._lock:
            paper = self._kept.get(paper_id)
            if paper is not None:
                self._kept.move_to_end(paper_id)
                return paper
        if paper_id not in self._position:
            raise KeyError(paper_id)
        with self._lock:
            row = self._db.execute("SELECT json FROM papers WHERE paper_id = ?", (paper_id,)).fetchone()
        if row is None:  # listed when opened, so the file changed under us: a broken cache
            raise KeyError(paper_id)
        return self._keep(Paper.model_validate_json(row[0]))

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, paper_id: object) -> bool:
        return paper_id in self._position

    def values(self) -> "PaperValues":  # type: ignore[override]
        return PaperValues(self)

    def items(self) -> "PaperItems":  # type: ignore[override]
        return PaperItems(self)

    def scan(self) -> Iterator[Paper]:
        """Every paper in order, decoded a page at a time (not kept: a scan would evict the
        papers a question is using). Rows are numbered 1..n in order (INTEGER PRIMARY KEY)."""
        for start in range(0, len(self._ids), SCAN_PAGE):
            with self._lock:
                rows = self._db.execute("SELECT json FROM papers WHERE pos > ? ORDER BY pos LIMIT ?",
                                        (start, SCAN_PAGE)).fetchall()
            for (text,) in rows:
                yield Paper.model_validate_json(text)

    # -- what callers read without decoding papers
    def titles(self) -> Iterator[tuple[str, str]]:
        """(paper id, title) of every paper, in order, from memory."""
        return zip(self._ids, self._titles)

    def facets(self) -> Iterator[tuple[str, Optional[int], Optional[str], list[str]]]:
        """(paper id, year, category, authors) of every paper, in order: what filters read."""
        with self._lock:
            rows = (self._db.execute("SELECT paper_id, year, category, authors FROM papers ORDER BY pos")
                    .fetchall() if self._db is not None else [])
        return ((pid, year, category, json.loads(authors)) for pid, year, category, authors in rows)

    def _keep(self, paper: Paper) -> Paper:
        with self._lock:
            self._kept[paper.paper_id] = paper
            while len(self._kept) > KEPT_PAPERS:
                self._kept.popitem(last=False)
        return paper


class PaperValues(ValuesView):
    """`table.values()`: every paper, read from the file on each iteration."""

    def __init__(self, table: PaperTable):
        super().__init__(table)
        self._table = table

    def __iter__(self) -> Iterator[Paper]:
        return self._table.scan()


class PaperItems(ItemsView):
    """`table.items()`: (paper id, paper) pairs, read from the file on each iteration."""

    def __init__(self, table: PaperTable):
        super().__init__(table)
        self._table = table

    def __iter__(self) -> Iterator[tuple[str, Paper]]:
        return ((p.paper_id, p) for p in self._table.scan())


def _read_only(path: Path, **kwargs) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, **kwargs)
