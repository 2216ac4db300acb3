"""RIS (.ris): the tagged export of Zotero, Mendeley, EndNote and most publisher sites.

A record is a run of `XX  - value` lines from `TY  - type` to `ER  -`. Repeatable tags (AU, KW,
UR) collect lists. A line without a tag continues the previous field: EndNote and some
publishers wrap long abstracts. Structure errors (a record without its TY or ER, text outside a
record) become bad records on the line where they are seen, so `--skip-bad` still loads the rest.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

from .records import RawRecord
from .textio import iter_text_lines

# "TY  - JOUR": two upper-case letters or digits, two spaces, a dash. Exporters differ in the
# spaces after the dash ("ER  -" has none), so any amount is accepted there.
_TAG_LINE = re.compile(r"^([A-Z][A-Z0-9])  -(?: (.*)|\s*)$")

# RIS tag → field name understood by fields.paper_from_fields. First tag wins for single values.
SINGLE_TAGS = {
    "ID": "id",
    "TI": "title", "T1": "title", "CT": "title",
    "AB": "abstract", "N2": "abstract",
    "PY": "year", "Y1": "year", "DA": "date",
    "DO": "doi",
    "UR": "url",
    "JO": "journal", "JF": "journal", "T2": "journal", "JA": "journal", "BT": "booktitle",
}
AUTHOR_TAGS = ("AU", "A1")  # A2/A3 are editors and series editors, not authors
KEYWORD_TAG = "KW"


@dataclass
class _Open:
    """The record being read: its first line and tag → values in file order."""

    line: int
    values: dict[str, list[str]] = field(default_factory=dict)
    last_tag: Optional[str] = None

    def add(self, tag: str, value: str) -> None:
        self.values.setdefault(tag, []).append(value)
        self.last_tag = tag

    def extend_last(self, text: str) -> None:
        values = self.values[self.last_tag]
        values[-1] = f"{values[-1]} {text}".strip()


def read_ris(path: Path) -> Iterator[RawRecord]:
    record: Optional[_Open] = None
    for number, text in iter_text_lines(path):
        line = text.rstrip("\r\n")
        if not line.strip():
            continue
        match = _TAG_LINE.match(line)
        bad, record = _step(record, number, match, line)
        if bad is not None:
            yield bad
        if match and match.group(1) == "ER" and record is not None:
            yield _to_record(record)
            record = None
    if record is not None:
        yield RawRecord.bad(record.line, "record not closed: no 'ER  -' line before the end of the file")


def _step(record: Optional[_Open], number: int, match, line: str) -> tuple[Optional[RawRecord], Optional[_Open]]:
    """Apply one non-blank line; returns (a bad record to report or None, the open record)."""
    if match is None:
        if record is None or record.last_tag is None:
            return RawRecord.bad(number, f"not an RIS line (expected 'XX  - value'): {line[:60]!r}"), record
        record.extend_last(line.strip())  # a wrapped continuation of the previous field
        return None, record
    tag, value = match.group(1), (match.group(2) or "").strip()
    if tag == "TY":
        bad = None if record is None else RawRecord.bad(
            record.line, f"record not closed: no 'ER  -' line before the next 'TY' at line {number}")
        return bad, _Open(line=number, values={"TY": [value]})
    if record is None:
        return RawRecord.bad(number, f"'{tag}' outside a record (no 'TY  -' line before it)"), None
    if tag != "ER":
        record.add(tag, value)
    return None, record


def _to_record(record: _Open) -> RawRecord:
    values = record.values
    fields: dict = {}
    for tag, name in SINGLE_TAGS.items():
        if name not in fields and values.get(tag) and values[tag][0]:
            fields[name] = values[tag][0]
    authors = [ris_name(a) for tag in AUTHOR_TAGS for a in values.get(tag, []) if a]
    if authors:
        fields["authors"] = authors
    if values.get(KEYWORD_TAG):
        # RIS has no subject category; keywords are the closest thing, and a category list
        # "a, b" is what the --category filter already matches item by item.
        fields["category"] = [k for k in values[KEYWORD_TAG] if k]
    name = f"record {fields['id']}" if "id" in fields else None
    return RawRecord(line=record.line, fields=fields, name=name)


def ris_name(value: str) -> str:
    """RIS writes 'Last, First, Suffix' ('Smith, John A., Jr.') → 'John A. Smith Jr.';
    a name without a comma (an organisation) is kept as written."""
    parts = [p.strip() for p in value.split(",")]
    if len(parts) == 1:
        return parts[0]
    last, first, *suffix = parts
    return " ".join(p for p in (first, last, *suffix) if p)
