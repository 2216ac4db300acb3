"""Exports: BibTeX of cited papers (the page's "Export cited papers" button) and a literature
table as CSV (the page's "Download table (CSV)" button).

    bibtex_entries(citations) -> str     @misc entries, one per paper, with unique keys
    table_csv(table) -> str              one row per paper: number, paper id, title, one column per aspect

The entries parse back through the corpus reader (assistant/corpus/bibtex.py).
"""
from __future__ import annotations

import csv
import io
import re
import unicodedata
from typing import Iterable

from .types import Citation, LiteratureTable


def _ascii_word(text: str) -> str:
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^A-Za-z0-9]", "", text).lower()


_STOP = {"a", "an", "the", "on", "of", "for", "and", "in", "to", "with", "towards", "toward"}


def bibtex_key(c: Citation) -> str:
    surname = ""
    if c.authors:
        first = c.authors[0].strip()
        surname = first.split(",")[0] if "," in first else (first.split() or [""])[-1]
    word = next((w for w in (_ascii_word(t) for t in c.title.split())
                 if w and w not in _STOP), "")
    key = f"{_ascii_word(surname) or 'anon'}{c.year or ''}{word}"
    return key or c.paper_id


def bib_escape(text: str) -> str:
    """Escape what would break a braced BibTeX value: backslashes and braces."""
    out = []
    for ch in str(text):
        if ch == "\\":
            out.append(r"\textbackslash{}")
        elif ch in "{}":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def bibtex_fields(c: Citation) -> list[tuple[str, str]]:
    """The (name, escaped value) pairs of one paper's entry."""
    fields = [("title", bib_escape(c.title))]
    if c.authors:
        fields.append(("author", " and ".join(bib_escape(a) for a in c.authors)))
    if c.year:
        fields.append(("year", str(c.year)))
    for name, value in (("howpublished", c.venue), ("url", c.url), ("doi", c.doi),
                        ("keywords", c.category)):
        if value:
            fields.append((name, bib_escape(value)))
    notes = []
    if c.category:
        notes.append(f"Category: {bib_escape(c.category)}")
    if c.title_is_derived:
        notes.append("Title is a label derived from the abstract")
    notes.append(f"paper-assistant id: {bib_escape(c.paper_id)}")
    fields.append(("note", "; ".join(notes)))
    return fields


def bibtex_entries(citations: Iterable[Citation]) -> str:
    """@misc entries for the cited papers (deduplicated by paper id, keys made unique)."""
    seen: set[str] = set()
    keys: set[str] = set()
    entries = []
    for c in citations:
        if c.paper_id in seen:
            continue
        seen.add(c.paper_id)
        key = base = bibtex_key(c)
        suffix = ord("a")
        while key in keys:
            key = f"{base}{chr(suffix)}"
            suffix += 1
        keys.add(key)
        body = ",\n".join(f"  {name} = {{{value}}}" for name, value in bibtex_fields(c))
        entries.append(f"@misc{{{key},\n{body}\n}}\n")
    return "\n".join(entries)


def table_csv(table: LiteratureTable) -> str:
    """The table as CSV (RFC 4180 quoting, so commas and quotes inside quoted phrases survive):
    a header of number, paper_id, title and the aspects, then one line per paper."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["number", "paper_id", "title", *table.aspects])
    for row in table.rows:
        writer.writerow([row.number, row.paper_id, row.title, *row.cells])
    return out.getvalue()
