"""`detect_format` and `read_papers`: the one entry point the ingest code calls.

Format readers (listing, jsonfmt, csljson, csvfmt, bibtex, ris, zotero) turn syntax into
RawRecords; this module turns those into Papers, drops exact repeats, either raises or collects the
bad ones, and collects the ones a reader left out on purpose (Zotero items without an abstract).
"""
from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from ..types import Paper
from .bibtex import read_bibtex
from .csljson import looks_like_csl, read_csl_json
from .csvfmt import read_csv
from .errors import BadRecord, CorpusError, RecordError
from .fields import ABSTRACT_FIELDS, paper_from_fields
from .jsonfmt import read_json, read_jsonl
from .listing import read_listing
from .records import RawRecord
from .ris import read_ris
from .textio import BOM
from .zotero import is_sqlite, read_zotero

log = logging.getLogger(__name__)

PathLike = Union[str, Path]


@dataclass(frozen=True)
class Format:
    """A corpus format: its reader, what the fronts call it, and the files it is read from."""

    label: str  # how the page and the docs name it ("BibTeX")
    read: Callable[[Path], Iterator[RawRecord]]
    extensions: tuple[str, ...] = ()  # files read as this format by their extension
    # a format sharing another's extensions (`within`) is told from it by the file's start
    within: Optional[str] = None
    sniff: Optional[Callable[[str], object]] = None


_RIS_START = re.compile(r"^TY  -")

# The registry: detection, reading and the list of accepted files (the page's upload) all come
# from here, so a format added here is accepted and listed everywhere.
REGISTRY: dict[str, Format] = {
    "listing": Format("seed listing", read_listing, (".txt", ".md")),
    "jsonl": Format("JSON Lines", read_jsonl, (".jsonl", ".ndjson")),
    "json": Format("JSON", read_json, (".json",)),
    "csv": Format("CSV/TSV", read_csv, (".csv", ".tsv")),
    "bibtex": Format("BibTeX", read_bibtex, (".bib",)),
    # EndNote exports RIS as .txt; Zotero and Mendeley export CSL-JSON as plain .json
    "ris": Format("RIS", read_ris, (".ris",), within="listing", sniff=_RIS_START.match),
    "csljson": Format("CSL-JSON", read_csl_json, within="json", sniff=looks_like_csl),
    "zotero": Format("Zotero library (zotero.sqlite)", read_zotero, (".sqlite",)),
}
READERS: dict[str, Callable[[Path], Iterator[RawRecord]]] = {
    name: f.read for name, f in REGISTRY.items()}
FORMATS = tuple(REGISTRY)
EXTENSIONS = {ext: name for name, f in REGISTRY.items() for ext in f.extensions}
SNIFF_BYTES = 64 * 1024


def accepted_files() -> list[tuple[str, tuple[str, ...]]]:
    """(label, extensions) of every format, in the registry's order: a format's own extensions,
    else those of the format it shares them with (CSL-JSON: .json)."""
    return [(f.label, f.extensions or REGISTRY[f.within].extensions) for f in REGISTRY.values()]


def detect_format(path: PathLike) -> str:
    """One of FORMATS, by extension, else by the file's start. A format that shares an
    extension with another (RIS in EndNote's .txt, CSL-JSON in Zotero's .json) is told from it
    by the file's start. An SQLite database under another name (Zotero's backup,
    zotero.sqlite.bak) is read as Zotero's."""
    path = Path(path)
    by_extension = EXTENSIONS.get(path.suffix.lower())
    if by_extension and (not _sharing(by_extension) or not path.is_file()):
        return by_extension
    if not by_extension:
        _require_file(path)
        if is_sqlite(path):
            return "zotero"
    head = _head(path)
    return _refine(by_extension or _sniff(head), head)


def _sharing(fmt: str) -> list[str]:
    """The formats read from `fmt`'s extensions when their start says so."""
    return [name for name, f in REGISTRY.items() if f.within == fmt]


def _refine(fmt: str, head: str) -> str:
    for name in _sharing(fmt):
        if REGISTRY[name].sniff(head):
            return name
    return fmt


def _head(path: Path) -> str:
    with open(path, "rb") as f:
        return f.read(SNIFF_BYTES).removeprefix(BOM).decode("utf-8", errors="replace").lstrip()


def _sniff(head: str) -> str:
    first_line = head.split("\n", 1)[0].strip()
    if head.startswith("["):
        return "json"
    if head.startswith("{"):
        return "jsonl" if _is_json_object(first_line) else "json"
    if re.search(r"^\s*@\w+\s*[{(]", head, re.MULTILINE):
        return "bibtex"
    columns = {c.strip().strip("\"'").lower() for c in re.split(r"[,\t]", first_line)}
    if len(columns) > 1 and columns.intersection(ABSTRACT_FIELDS):
        return "csv"
    return "listing"


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def read_papers(
    path: PathLike,
    *,
    skip_bad: bool = False,
    errors: Optional[list[RecordError]] = None,
    fmt: Optional[str] = None,
    skipped: Optional[list[RecordError]] = None,
) -> Iterator[Paper]:
    """Stream the papers of a corpus file.

    A malformed record raises CorpusError ("path:line: reason") when it is reached, after the
    papers before it have been yielded. With skip_bad=True it is appended to `errors` (or logged
    when no list is given) and reading goes on. Errors that leave the rest of the file unreadable
    (bad UTF-8 outside JSON Lines, invalid JSON document, CSV without an abstract column) raise
    even with skip_bad. The file and format are checked at call time; the content lazily.

    Records a reader leaves out on purpose (a Zotero item without an abstract) are neither
    papers nor errors: they are appended to `skipped`, with or without skip_bad.
    """
    path = Path(path)
    _require_file(path)
    fmt = fmt or detect_format(path)
    if fmt not in READERS:
        raise ValueError(f"unknown corpus format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return _papers(path, READERS[fmt](path), skip_bad, errors, skipped)


def _papers(
    path: Path, records: Iterator[RawRecord], skip_bad: bool, errors: Optional[list[RecordError]],
    skipped: Optional[list[RecordError]] = None,
) -> Iterator[Paper]:
    seen = _SeenIds()
    for record in records:
        if record.skipped is not None:
            left_out = RecordError(path=str(path), line=record.line, reason=_named(record, record.skipped))
            if skipped is not None:
                skipped.append(left_out)
            else:
                log.info("skipped: %s", left_out)
            continue
        try:
            paper = _paper(path, record)
            if seen.is_repeat(paper, record.line if record.line is not None else record.name):
                continue
        except BadRecord as bad:
            error = RecordError(path=str(path), line=record.line, reason=_named(record, bad.reason))
            if not skip_bad:
                raise error.to_exception() from None
            if errors is not None:
                errors.append(error)
            else:
                log.warning("skipped bad record: %s", error)
            continue
        yield paper


def _named(record: RawRecord, reason: str) -> str:
    return f"{record.name}: {reason}" if record.name else reason


def _paper(path: Path, record: RawRecord) -> Paper:
    if record.fields is None:
        raise BadRecord(record.problem or "unreadable record")
    return paper_from_fields(record.fields, source=f"{path.name}:{record.where()}")


class _SeenIds:
    """paper_id → (first line, content digest), to drop exact repeats and report conflicting ones.
    A few dozen bytes per paper, so even millions of records fit in memory. A record without a
    line (a database row) is placed by its name instead ("item ABCD2345")."""

    def __init__(self) -> None:
        self._first: dict[str, tuple[Union[int, str, None], bytes]] = {}

    def is_repeat(self, paper: Paper, line: Union[int, str, None]) -> bool:
        digest = hashlib.blake2b(
            paper.model_dump_json(exclude={"source"}).encode("utf-8"), digest_size=8
        ).digest()
        first = self._first.get(paper.paper_id)
        if first is None:
            self._first[paper.paper_id] = (line, digest)
            return False
        if first[1] == digest:
            return True
        place = f"line {first[0]}" if isinstance(first[0], int) else first[0]
        raise BadRecord(f"duplicate id {paper.paper_id} with different content (first at {place})")


def _require_file(path: Path) -> None:
    if not path.exists():
        raise CorpusError(str(path), None, "no such file")
    if not path.is_file():
        raise CorpusError(str(path), None, "not a file")
