"""BibTeX (.bib) via bibtexparser 2.x: each entry with an abstract is a paper, its key the id.

bibtexparser parses the whole string (BibTeX files are small). Entries it could not parse come
back as failed blocks with their start line, which become bad records. LaTeX in titles, authors
and abstracts ({\\"o}, {BERT}, \\emph{x}) is turned into plain text with pylatexenc, which
bibtexparser itself depends on.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Iterator, Optional

import bibtexparser
from bibtexparser.middlewares.names import parse_single_name_into_parts, split_multiple_persons_names
from bibtexparser.model import DuplicateBlockKeyBlock, DuplicateFieldKeyBlock, Entry, ParsingFailedBlock
from pylatexenc.latex2text import LatexNodes2Text

from .records import RawRecord
from .textio import read_whole_text

# bibtexparser logs every failed block; those become our own error messages instead, so keep
# its logger from printing them through logging's last-resort handler.
logging.getLogger("bibtexparser").addHandler(logging.NullHandler())

TEXT_FIELDS = ("title", "abstract", "journal", "booktitle")
PLAIN_FIELDS = ("year", "date", "url", "doi")

_LATEX = LatexNodes2Text(math_mode="verbatim")  # keep $x^2$ as written
# pylatexenc's time grows faster than the text (a 1 MB abstract took over a minute); real fields
# are a few KB, so longer ones (hostile or broken files) only lose their braces.
LATEX_MAX_CHARS = 20_000
_UNESCAPED_PERCENT = re.compile(r"(?<!\\)%")


def read_bibtex(path: Path) -> Iterator[RawRecord]:
    library = bibtexparser.parse_string(read_whole_text(path))
    for block in library.blocks:
        line = block.start_line + 1 if block.start_line is not None else None  # 0-based in bibtexparser
        if isinstance(block, DuplicateBlockKeyBlock) and isinstance(block.ignore_error_block, Entry):
            # A repeated key: hand it on like any entry, so identical repeats are dropped and
            # conflicting ones reported naming both lines, as in the other formats.
            yield _entry_record(block.ignore_error_block, line)
        elif isinstance(block, DuplicateFieldKeyBlock):
            fields = ", ".join(sorted(block.duplicate_keys))
            name = _entry_name(block.ignore_error_block)
            yield RawRecord.bad(line, f"field given twice: {fields}", name=name)
        elif isinstance(block, ParsingFailedBlock):
            yield RawRecord.bad(line, f"could not parse BibTeX: {_failure_reason(block)}",
                                name=_entry_name(block.ignore_error_block))
        elif isinstance(block, Entry):
            yield _entry_record(block, line)


def _entry_record(entry: Entry, line: int | None) -> RawRecord:
    values = {field.key.lower(): field.value for field in entry.fields}
    fields: dict[str, Any] = {"id": entry.key}
    for name in TEXT_FIELDS:
        if name in values:
            fields[name] = latex_to_text(str(values[name]))
    for name in PLAIN_FIELDS:
        if name in values:
            fields[name] = strip_braces(str(values[name]))
    if "author" in values:
        fields["authors"] = parse_bibtex_authors(str(values["author"]))
    return RawRecord(line=line, fields=fields, name=_entry_name(entry))


def _entry_name(block: Any) -> Optional[str]:
    key = getattr(block, "key", None)
    return f"entry {key}" if key else None


def parse_bibtex_authors(value: str) -> list[str]:
    """'Smith, John and Jane Doe and {Simon and Schuster}'
    → ['John Smith', 'Jane Doe', 'Simon and Schuster']; a trailing 'and others' becomes
    "et al.", which the paper's fields read as a cut list (its names are kept)."""
    names = []
    for person in split_multiple_persons_names(value):
        if person.strip().lower() == "others":  # BibTeX's "and others" = et al.
            names.append("et al.")
            continue
        parts = parse_single_name_into_parts(person, strict=False)
        names.append(latex_to_text(parts.merge_first_name_first))
    return [name for name in names if name]


def latex_to_text(value: str) -> str:
    """Plain text of a BibTeX field value. An unescaped '%' is kept literally: to LaTeX it would
    start a comment and silently drop the rest of an abstract."""
    if len(value) > LATEX_MAX_CHARS:
        return strip_braces(value)
    try:
        return _LATEX.latex_to_text(_UNESCAPED_PERCENT.sub(r"\\%", value)).strip()
    except Exception:  # pylatexenc is tolerant, but never let markup cost a record
        return strip_braces(value)


def strip_braces(value: str) -> str:
    return value.replace("{", "").replace("}", "").strip()


def _failure_reason(block: ParsingFailedBlock) -> str:
    error = block.error
    reason = getattr(error, "abort_reason", None) or str(error) or type(error).__name__
    return " ".join(reason.split())
