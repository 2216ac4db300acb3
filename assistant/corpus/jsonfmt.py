"""JSON Lines (one object per line; streamed) and JSON documents (read whole).

JSON documents are a top-level array of objects, an object holding that array under "papers",
"data" or "records", or a single paper object. Their records are located with the standard
decoder's `raw_decode`, so each one still gets the line it starts on for error messages.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator, Optional

from .errors import BadRecord, CorpusError
from .records import RawRecord
from .textio import decode_line, iter_raw_lines, line_of_offset, read_whole_text

RECORD_LIST_KEYS = ("papers", "data", "records")

_DECODER = json.JSONDecoder()
_WHITESPACE = re.compile(r"[ \t\n\r]*")


def read_jsonl(path: Path) -> Iterator[RawRecord]:
    """One record per non-blank line; a line that is not UTF-8 or not a JSON object is a bad record."""
    for line in iter_raw_lines(path):
        if not line.data.strip():
            continue
        try:
            value = json.loads(decode_line(line))
        except BadRecord as bad:
            yield RawRecord.bad(line.number, bad.reason)
            continue
        except json.JSONDecodeError as e:
            yield RawRecord.bad(line.number, f"invalid JSON: {e.msg} (column {e.colno})")
            continue
        yield _record(line.number, value)


def read_json(path: Path) -> Iterator[RawRecord]:
    text = read_whole_text(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as e:
        raise CorpusError(str(path), e.lineno, f"invalid JSON: {e.msg} (column {e.colno})") from None
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
