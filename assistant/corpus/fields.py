"""Mapping one raw record (a dict of source fields) to a Paper, shared by every format.

Sources name the same thing differently (BEIR `text`, arXiv `categories`, OpenReview `venue`),
so each Paper field has a list of accepted source names, matched case-insensitively. Readers only
turn their syntax into a dict; everything about meaning lives here.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable, Mapping, Optional
from urllib.parse import unquote

from ..types import Paper
from .errors import BadRecord
from .titles import derive_title

# Accepted source field names per Paper field, most specific first.
ID_FIELDS = ("paper_id", "id", "_id", "arxiv_id")
TITLE_FIELDS = ("title",)
ABSTRACT_FIELDS = ("abstract", "text", "summary", "body")
AUTHOR_FIELDS = ("authors", "author")
CATEGORY_FIELDS = ("categories", "category")
YEAR_FIELDS = ("year",)
DATE_FIELDS = ("date", "update_date", "published", "publication_date")
VENUE_FIELDS = ("venue", "journal", "booktitle", "journal-ref", "journal_ref")
URL_FIELDS = ("url", "link")
DOI_FIELDS = ("doi",)

_WHITESPACE = re.compile(r"\s+")
# "A. Smith, B. Jones and C. Wu", "A; B", "A、B": separators between authors in one string.
_AUTHOR_SEPARATORS = re.compile(r"\s*(?:;|,|，|、|\s+and\s+|\s+&\s+)\s*")
# "et al." / Chinese "等" ("and others") closing an author list: the names before it are kept.
ET_AL = re.compile(r"(?:,?\s*(?:\bet\s+al\b\.?|等人?|\betc\b\.?))\s*$", re.IGNORECASE)
# arXiv category codes ("math.AP", "cs.LG", "hep-th"): a space-separated run of them is a list.
_ARXIV_CATEGORY = re.compile(r"[a-z]+(?:-[a-z]+)?(?:\.[A-Za-z]+(?:-[A-Za-z]+)?)?")
_YEAR = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")
# A DOI is "10.<registrant>/<suffix>"; sources write it bare, as "doi:…" or as a resolver link.
_DOI = re.compile(r"10\.\d+(?:\.\d+)*/\S+")
_DOI_PREFIX = re.compile(r"^(?:doi:\s*|https?://(?:dx\.)?doi\.org/)", re.IGNORECASE)
_DOI_LINK = re.compile(r"^https?://(?:dx\.)?doi\.org/", re.IGNORECASE)


def normalise_whitespace(text: str) -> str:
    """Collapse runs of spaces/newlines/tabs to one space and strip."""
    return _WHITESPACE.sub(" ", text).strip()


def content_id(title: str, abstract: str) -> str:
    """A stable id for records without one: 'h' + 12 hex digits of SHA-1 over the normalised text."""
    digest = hashlib.sha1(f"{normalise_whitespace(title)}\n{normalise_whitespace(abstract)}".encode("utf-8"))
    return "h" + digest.hexdigest()[:12]


def paper_from_fields(fields: Mapping[str, Any], source: str) -> Paper:
    """The Paper a raw record describes; raises BadRecord when it cannot be one (no abstract)."""
    record = {str(key).strip().lower(): value for key, value in fields.items()}
    abstract = _text(_first(record, ABSTRACT_FIELDS))
    if not abstract:
        if not any(name in record for name in ABSTRACT_FIELDS):
            raise BadRecord(f"empty abstract (no {'/'.join(ABSTRACT_FIELDS)} field)")
        raise BadRecord("empty abstract")
    # The content hash uses the record's own title ("" when it has none), so an improved title
    # heuristic never changes the ids of already ingested papers.
    own_title = _text(_first(record, TITLE_FIELDS))
    paper_id = _text(_first(record, ID_FIELDS)) or content_id(own_title, abstract)
    return Paper(
        paper_id=paper_id,
        title=own_title or derive_title(abstract),
        title_is_derived=not own_title,
        authors=parse_authors(_first(record, AUTHOR_FIELDS)),
        authors_incomplete=ends_in_et_al(_first(record, AUTHOR_FIELDS)),
        abstract=abstract,
        category=parse_category(_first(record, CATEGORY_FIELDS)),
        year=parse_year(_first(record, YEAR_FIELDS)) or parse_year(_first(record, DATE_FIELDS)),
        venue=_text(_first(record, VENUE_FIELDS)) or None,
        url=parse_url(_first(record, URL_FIELDS), _first(record, DOI_FIELDS)),
        doi=parse_doi(_first(record, DOI_FIELDS)) or doi_from_url(_first(record, URL_FIELDS)),
        source=source,
    )


def ends_in_et_al(value: Any) -> bool:
    """Does the author field end in "et al." (or 等, "and others"): a list known to be cut?"""
    if isinstance(value, Mapping) or value is None:
        return False
    if isinstance(value, str):
        last = value
    elif isinstance(value, Iterable):
        items = list(value)
        last = _author_name(items[-1]) if items else ""
    else:
        last = str(value)
    return bool(ET_AL.search(normalise_whitespace(last or "")))


def parse_authors(value: Any) -> list[str]:
    """Author names from a list of strings, a list of {"name": ...} dicts, or one string
    ("A. Smith, B. Jones and C. Wu", "A; B", "A, B 等")."""
    if value is None:
        return []
    if isinstance(value, str):
        return _split_author_string(value)
    if isinstance(value, Mapping):
        value = [value]
    if isinstance(value, Iterable):
        names = (_author_name(item) for item in value)
        return [name for name in (normalise_whitespace(ET_AL.sub("", n)) for n in names) if name]
    return _split_author_string(str(value))


def _split_author_string(text: str) -> list[str]:
    """Commas separate authors ("A. Smith, B. Jones and C. Wu"), except in BibTeX-style lists
    where every name is "Last, First" ("Smith, John and Doe, Jane", "Smith, J.; Doe, J.")."""
    text = ET_AL.sub("", normalise_whitespace(text))
    if ";" in text:
        parts = text.split(";")
        return [name for name in (_first_name_first(p) for p in parts) if name]
    and_parts = re.split(r"\s+(?:and|&)\s+", text)
    if len(and_parts) > 1 and all(part.count(",") == 1 for part in and_parts):
        return [name for name in (_first_name_first(p) for p in and_parts) if name]
    names = (normalise_whitespace(re.sub(r"^and\s+", "", part)) for part in _AUTHOR_SEPARATORS.split(text))
    return [name for name in names if name]


def _first_name_first(name: str) -> str:
    """'Smith, John' → 'John Smith'; names without exactly one comma are kept as they are."""
    name = normalise_whitespace(name)
    if name.count(",") != 1:
        return name
    last, first = (part.strip() for part in name.split(","))
    return normalise_whitespace(f"{first} {last}")


def _author_name(item: Any) -> str:
    if isinstance(item, Mapping):
        if item.get("name"):
            return str(item["name"])
        parts = (item.get(key) for key in ("given", "first", "forename", "family", "last", "surname"))
        return " ".join(str(part) for part in parts if part)
    return str(item) if item is not None else ""


def parse_category(value: Any) -> Optional[str]:
    """One display string: a list is joined with ', '; an arXiv-style 'math.AP math.PR' string
    becomes 'math.AP, math.PR'; anything else ('Deep Learning · Theory') is kept as it is."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return ", ".join(filter(None, (normalise_whitespace(str(v)) for v in value))) or None
    text = normalise_whitespace(str(value))
    codes = text.split(" ")
    if len(codes) > 1 and all(_ARXIV_CATEGORY.fullmatch(c) and ("." in c or "-" in c) for c in codes):
        return ", ".join(codes)
    return text or None


def parse_year(value: Any) -> Optional[int]:
    """A year from 2017, "2017", "2025-05-12" or "Mon, 12 May 2025"; None when there is none."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 1500 <= value <= 2999 else None
    if isinstance(value, float) and value.is_integer():
        return parse_year(int(value))
    match = _YEAR.search(str(value))
    return int(match.group(1)) if match else None


def parse_url(url: Any, doi: Any) -> Optional[str]:
    """The record's link, else a DOI resolver link ('10.1/x', 'doi:10.1/x' → https://doi.org/10.1/x)."""
    link = _text(url)
    if link:
        return link
    bare = parse_doi(doi)
    return f"https://doi.org/{bare}" if bare else None


def parse_doi(value: Any) -> Optional[str]:
    """The bare DOI of '10.1/x', 'doi:10.1/x' or 'https://doi.org/10.1/x'; None for anything
    that is not a DOI (an ISBN or "n/a" in a doi field must not become a dead link)."""
    text = _DOI_PREFIX.sub("", _text(value)).rstrip(".")
    return text if _DOI.fullmatch(text) else None


def doi_from_url(url: Any) -> Optional[str]:
    """The DOI of a resolver link ('https://doi.org/10.1%2Fx' → '10.1/x'); None for other links."""
    text = _text(url)
    return parse_doi(unquote(text)) if _DOI_LINK.match(text) else None


def _first(record: Mapping[str, Any], names: Iterable[str]) -> Any:
    """The value of the first of `names` the record has with a non-empty value."""
    for name in names:
        value = record.get(name)
        if value not in (None, "", [], {}):
            return value
    return None


def _text(value: Any) -> str:
    """A field as one line of text: paragraphs (lists) are joined, whitespace normalised."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return normalise_whitespace(" ".join(str(v) for v in value if v is not None))
    return normalise_whitespace(str(value))
