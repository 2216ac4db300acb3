"""JSON Lines (one object per line; streamed) and JSON documents (read whole).

JSON documents are a top-level array of objects, an object holding that array under "papers",
"data" or "records", or a single paper object. Their records are located with the standard
decoder's `raw_decode`, so each one still gets the line it starts on for error messages.

Input the standard decoder cannot take (nesting deeper than Python's recursion limit, an integer
of more than 4,300 digits) is invalid JSON like any other, reported at its line.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

from .errors import BadRecord, CorpusError
from .records import RawRecord
from .textio import decode_line, iter_raw_lines, line_of_offset, read_whole_text

RECORD_LIST_KEYS = ("papers", "data", "records")
DEEP = 500  # nesting reported as "too deep" (the decoder itself gives up near 1,000 levels)

_DECODER = json.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
# Python refuses to convert integers longer than this (CVE-2020-10735); 0 means no limit.
MAX_DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300
_LONG_NUMBER = re.compile(r"\d{%d,}" % (MAX_DIGITS + 1))


class _Invalid(Exception):
    """The text is not JSON the decoder can take; `offset` is where (a character index)."""

    def __init__(self, reason: str, offset: int):
        self.reason, self.offset = reason, offset
        super().__init__(reason)


def _loads(text: str) -> Any:
    """json.loads, with every way it can refuse the text raised as _Invalid(reason, offset)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise _Invalid(f"invalid JSON: {e.msg} (column {e.colno})", e.pos) from None
    except RecursionError:
        raise _Invalid(f"invalid JSON: nested more than {DEEP} levels deep", _deep_offset(text)) from None
    except ValueError:  # an integer with more digits than int() converts
        match = _LONG_NUMBER.search(text)
        raise _Invalid(f"invalid JSON: a number of more than {MAX_DIGITS} digits",
                       match.start() if match else 0) from None


def _deep_offset(text: str) -> int:
    """Where the nesting first goes deeper than DEEP (0 when it never does)."""
    depth = 0
    for m in _STRING_OR_BRACKET.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > DEEP:
                return m.start()
        elif token in "]}":
            depth -= 1
    return 0


def read_jsonl(path: Path) -> Iterator[RawRecord]:
    """One record per non-blank line; a line that is not UTF-8 or not a JSON object is a bad record."""
    for line in iter_raw_lines(path):
        if not line.data.strip():
            continue
        try:
            value = _loads(decode_line(line))
        except BadRecord as bad:
            yield RawRecord.bad(line.number, bad.reason)
            continue
        except _Invalid as e:
            yield RawRecord.bad(line.number, e.reason)
            continue
        yield _record(line.number, value)


def read_json(path: Path) -> Iterator[RawRecord]:
    text = read_whole_text(path)
    try:
        document = _loads(text)
    except _Invalid as e:
        raise CorpusError(str(path), line_of_offset(text, e.offset), e.reason) from None
    start = _skip_whitespace(text, 0)
    if isinstance(document, list):
        items = _array_items(text, start)
    elif isinstance(document, dict) and _record_list_key(document):
        items = _array_items(text, _member_value_offset(text, start, _record_list_key(document)))
    elif isinstance(document, dict):
        items = iter([(start, document)])  # a single paper
    else:
        raise CorpusError(
            str(path), 1, f"expected a list of papers or an object with one of {list(RECORD_LIST_KEYS)}"
        )
    for offset, value in items:
        yield _record(line_of_offset(text, offset), value)


def _record(line: int, value: Any) -> RawRecord:
    if not isinstance(value, dict):
        return RawRecord.bad(line, f"expected a JSON object, got {type(value).__name__}")
    return RawRecord(line=line, fields=value)


def _record_list_key(document: dict) -> Optional[str]:
    return next((key for key in RECORD_LIST_KEYS if isinstance(document.get(key), list)), None)


# Walking an already validated JSON document to find where each record starts. The standard
# decoder parses every value; this only steps over the whitespace, commas and colons between them.

def _skip_whitespace(text: str, index: int) -> int:
    return _WHITESPACE.match(text, index).end()


def _array_items(text: str, index: int) -> Iterator[tuple[int, Any]]:
    """(offset, value) of each element of the array starting at text[index] == '['."""
    index = _skip_whitespace(text, index + 1)
    while text[index] != "]":
        value, end = _DECODER.raw_decode(text, index)
        yield index, value
        index = _skip_whitespace(text, end)
        if text[index] == ",":
            index = _skip_whitespace(text, index + 1)


def _member_value_offset(text: str, index: int, wanted: str) -> int:
    """Offset of the value of the top-level member `wanted` of the object at text[index] == '{'.
    The last occurrence wins, as in json.loads."""
    found = -1
    index = _skip_whitespace(text, index + 1)
    while text[index] != "}":
        key, end = _DECODER.raw_decode(text, index)
        index = _skip_whitespace(text, _skip_whitespace(text, end) + 1)  # past the ':'
        if key == wanted:
            found = index
        _, end = _DECODER.raw_decode(text, index)
        index = _skip_whitespace(text, end)
        if text[index] == ",":
            index = _skip_whitespace(text, index + 1)
    return found
