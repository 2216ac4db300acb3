"""CSV and TSV with a header row, streamed with the csv module.

Header names are matched case-insensitively against the same field names as JSON (fields.py).
Each record is reported at the physical line where it starts, which differs from its row number
when quoted fields span lines.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Iterator

from .errors import CorpusError
from .fields import ABSTRACT_FIELDS
from .records import RawRecord
from .textio import iter_text_lines

# Abstracts can exceed the csv module's default 128 KiB field limit (a process-wide setting,
# only ever raised here).
FIELD_SIZE_LIMIT = 64 * 1024 * 1024


def read_csv(path: Path) -> Iterator[RawRecord]:
    if csv.field_size_limit() < FIELD_SIZE_LIMIT:
        csv.field_size_limit(min(FIELD_SIZE_LIMIT, sys.maxsize))
    lines = (text for _, text in iter_text_lines(path))
    header_line = next(lines, None)
    if header_line is None or not header_line.strip():
        raise CorpusError(str(path), 1, "no header row (expected column names, including 'abstract')")
    delimiter = _delimiter(path, header_line)
    # strict: a quote left open at the end of the file is an error, not a field that silently
    # swallowed every line after it
    reader = csv.reader(_prepend(header_line, lines), delimiter=delimiter, strict=True)
    header = [name.strip() for name in _next_row(reader, path, 1)]
    _check_header(path, header)
    yield from _rows(path, reader, header)


def _rows(path: Path, reader, header: list[str]) -> Iterator[RawRecord]:
    line_before = reader.line_num
    while True:
        start = line_before + 1
        row = _next_row(reader, path, start)
        if row is None:
            return
        line_before = reader.line_num
        if not any(cell.strip() for cell in row):
            continue  # blank line
        if len(row) != len(header):
            yield RawRecord.bad(start, f"expected {len(header)} fields as in the header, got {len(row)}")
            continue
        yield RawRecord(line=start, fields=dict(zip(header, row)))


def _next_row(reader, path: Path, line: int):
    try:
        return next(reader, None)
    except csv.Error as e:  # e.g. a quoted field left open: the rest of the file cannot be trusted
        raise CorpusError(str(path), line, f"malformed CSV: {e}") from None


def _check_header(path: Path, header: list[str]) -> None:
    names = {name.lower() for name in header}
    if not names.intersection(ABSTRACT_FIELDS):
        found = ", ".join(repr(name) for name in header) or "none"
        raise CorpusError(
            str(path), 1,
            f"no abstract column (one of {', '.join(ABSTRACT_FIELDS)}); the header has: {found}",
        )


def _delimiter(path: Path, header_line: str) -> str:
    if path.suffix.lower() == ".tsv" or header_line.count("\t") > header_line.count(","):
        return "\t"
    return ","


def _prepend(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest
