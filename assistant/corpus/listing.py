"""The plain-text listing format of the bundled demo corpus (assistant/data/seed_corpus.txt).

Blank-line-separated blocks; each paper is

    Area · Subarea                      (optional category line: contains " · ")
    Name One, Name Two, Name Three 等    (author line: comma-separated names; 等 = "et al.")
    The abstract, as long prose ...

Blocks before the first paper that do not fit this shape ("论文检索", "paper search") are a header.
There are no titles; the Paper gets a label derived from the abstract (title_is_derived=True).

A small state machine reads the blocks in order and holds at most one pending category line and
one pending author line, so the file is streamed. A structure that cannot be a paper (an author
line followed by a category line, an abstract with no author line) is reported at its line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Iterator, Optional

from .fields import ET_AL
from .records import RawRecord
from .textio import iter_text_lines

HEADER_MAX_CHARS = 200  # before the first paper, shorter stray blocks are taken as a header

# One name: 1-6 words of letters (with . ' ’ - inside), e.g. "B. R. Vinay Kumar", "jianfengyang".
_NAME = re.compile(r"[^\W\d_][\w.'’-]*(?:\s+[^\W\d_][\w.'’-]*){0,5}")
# Words that occur in prose but not in names: a short sentence is never mistaken for a name.
_PROSE_WORDS = frozenset(
    "a an the of in on to for with from by is are was were be we our this that these it its as at"
    " or not can via using based than into show propose".split()
)
_NAME_SEPARATORS = re.compile(r"\s*(?:,|，|、|;|\s+and\s+)\s*")
# A word with a dot is an initial or abbreviation ("B.", "Jr.", "J.-P."), not "abstract."
_ABBREVIATION = re.compile(r"[^\W\d_]{1,3}\.|(?:[^\W\d_]{1,2}\.-?)+")


class Kind(Enum):
    CATEGORY = "category line"
    AUTHORS = "author line"
    ABSTRACT = "abstract"


@dataclass(frozen=True)
class Unit:
    line: int
    kind: Kind
    text: str


def read_listing(path: Path) -> Iterator[RawRecord]:
    parser = _ListingParser()
    for unit in _units(_blocks(path)):
        yield from parser.feed(unit)
    yield from parser.finish()


# -- blocks and their kinds ---------------------------------------------------------------------

def _blocks(path: Path) -> Iterator[list[tuple[int, str]]]:
    """Groups of consecutive non-blank lines, each line with its 1-based number."""
    block: list[tuple[int, str]] = []
    for number, text in iter_text_lines(path):
        text = text.strip()
        if text:
            block.append((number, text))
        elif block:
            yield block
            block = []
    if block:
        yield block


def _units(blocks: Iterator[list[tuple[int, str]]]) -> Iterator[Unit]:
    """Classify blocks. A category or author line written directly above its abstract (no blank
    line between) is split off, so such files read the same as the blank-line-separated form."""
    for block in blocks:
        while len(block) > 1 and _leading_line_kind(block[0][1]) is not None:
            number, text = block.pop(0)
            yield Unit(number, _leading_line_kind(text), text)
        text = " ".join(line for _, line in block)
        yield Unit(block[0][0], _kind(text) if len(block) == 1 else Kind.ABSTRACT, text)


def _leading_line_kind(line: str) -> Optional[Kind]:
    if is_category_line(line):
        return Kind.CATEGORY
    # Only unmistakable author lines (several names) are split off the top of a block; a single
    # short phrase could be the first wrapped line of an abstract.
    if is_author_line(line) and (len(_name_parts(line)) > 1 or ET_AL.search(line)):
        return Kind.AUTHORS
    return None


def _kind(text: str) -> Kind:
    if is_category_line(text):
        return Kind.CATEGORY
    if is_author_line(text):
        return Kind.AUTHORS
    return Kind.ABSTRACT


def is_category_line(line: str) -> bool:
    """'Deep Learning · Theory', 'Applications · Chemistry, Physics, and Earth Sciences'."""
    return " · " in line and len(line) <= 120 and not line.rstrip().endswith(".")


def is_author_line(line: str) -> bool:
    """'Puyu Wang, Junyu Zhou', 'Sherry Yang', 'Yu Qi, Haibo Zhao 等': every comma-separated part
    looks like a name (1-6 words of letters, no prose words such as 'the' or 'we')."""
    parts = _name_parts(line)
    return bool(parts) and all(_looks_like_name(part) for part in parts)


def _name_parts(line: str) -> list[str]:
    return [part for part in _NAME_SEPARATORS.split(ET_AL.sub("", line.strip())) if part]


def _looks_like_name(part: str) -> bool:
    words = part.split()
    return (
        bool(_NAME.fullmatch(part))
        and not any(word.lower() in _PROSE_WORDS for word in words)
        and all(_ABBREVIATION.fullmatch(word) for word in words if "." in word)
    )


# -- the state machine --------------------------------------------------------------------------

class _ListingParser:
    """Holds the pending category and author line of the paper being read."""

    def __init__(self) -> None:
        self.category: Optional[Unit] = None
        self.authors: Optional[Unit] = None
        self.seen_paper = False  # before the first paper, stray short blocks are a header

    def feed(self, unit: Unit) -> Iterator[RawRecord]:
        if unit.kind is Kind.ABSTRACT:
            yield from self._abstract(unit)
        elif unit.kind is Kind.CATEGORY:
            yield from self._category(unit)
        else:
            yield from self._author_line(unit)

    def finish(self) -> Iterator[RawRecord]:
        pending = self.authors or self.category
        if pending is not None:
            yield self._bad(f"{pending.kind.value} at line {pending.line} has no abstract (end of file)")

    def _category(self, unit: Unit) -> Iterator[RawRecord]:
        if self.authors is not None and not self.seen_paper:
            self.authors = None  # the "author line" was a header such as "论文检索"
        if self.authors is not None:
            yield self._bad(
                f"author line at line {self.authors.line} is followed by a category line "
                f"(line {unit.line}) instead of an abstract"
            )
        elif self.category is not None:
            yield self._bad(
                f"category line at line {self.category.line} is followed by another category line "
                f"(line {unit.line}) instead of an author line"
            )
        self.category = unit

    def _author_line(self, unit: Unit) -> Iterator[RawRecord]:
        if self.authors is not None and not self.seen_paper and self.category is None:
            self.authors = None  # a header line before the first paper's author line
        if self.authors is not None:
            yield self._bad(
                f"author line at line {self.authors.line} is followed by another author line "
                f"(line {unit.line}) instead of an abstract"
            )
        self.authors = unit

    def _abstract(self, unit: Unit) -> Iterator[RawRecord]:
        if self.authors is not None:
            start = (self.category or self.authors).line
            fields = {"authors": self.authors.text, "abstract": unit.text}
            if self.category is not None:
                fields["category"] = self.category.text
            self._reset()
            self.seen_paper = True
            yield RawRecord(line=start, fields=fields)
        elif not self.seen_paper and self.category is None and len(unit.text) <= HEADER_MAX_CHARS:
            return  # a short header paragraph before the first paper
        elif self.category is not None:
            yield self._bad(
                f"category line at line {self.category.line} is followed by an abstract "
                f"(line {unit.line}) with no author line"
            )
        else:
            yield RawRecord.bad(unit.line, "abstract has no author line before it")

    def _bad(self, problem: str) -> RawRecord:
        """A bad record starting at the pending paper's first line; the pending state is dropped."""
        start = (self.category or self.authors).line
        self._reset()
        return RawRecord.bad(start, problem)

    def _reset(self) -> None:
        self.category = None
        self.authors = None
