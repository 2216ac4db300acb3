"""Reading corpus bytes as UTF-8 text with exact positions for error messages.

Files are read in binary and decoded line by line, so a multi-GB file never sits in memory and a
bad byte is reported with its line and byte offset instead of a bare UnicodeDecodeError.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, NamedTuple

from .errors import BadRecord, CorpusError

BOM = b"\xef\xbb\xbf"


class RawLine(NamedTuple):
    number: int  # 1-based line number
    offset: int  # byte offset of the line's first byte in the file
    data: bytes  # the line's bytes, line ending included


def iter_raw_lines(path: Path) -> Iterator[RawLine]:
    """The file's lines as bytes, with a leading UTF-8 BOM removed (its bytes still count)."""
    with open(path, "rb") as f:
        offset = 0
        for number, data in enumerate(f, start=1):
            start = offset
            offset += len(data)
            if number == 1 and data.startswith(BOM):
                data, start = data[len(BOM):], start + len(BOM)
            yield RawLine(number, start, data)


def decode_line(line: RawLine) -> str:
    """The line as text; raises BadRecord("not valid UTF-8 at byte N") with N the file offset."""
    try:
        return line.data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRecord(f"not valid UTF-8 at byte {line.offset + e.start}") from None


def iter_text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text with line ending) for formats where one bad byte breaks the structure
    (CSV quoting, listing blocks): a decoding failure is fatal, even with skip_bad."""
    for line in iter_raw_lines(path):
        try:
            yield line.number, decode_line(line)
        except BadRecord as bad:
            raise CorpusError(str(path), line.number, bad.reason) from None


def read_whole_text(path: Path) -> str:
    """The whole file as text, for formats whose parsers need it all (JSON documents, BibTeX)."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise CorpusError(str(path), line, f"not valid UTF-8 at byte {e.start}") from None


def line_of_offset(text: str, offset: int) -> int:
    """1-based line number of a character offset in `text`."""
    return text.count("\n", 0, offset) + 1
