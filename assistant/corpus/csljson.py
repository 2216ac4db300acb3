"""CSL-JSON: the citation format of Zotero ("Export → CSL JSON"), Mendeley and citeproc tools.

A JSON array of items; the document is located and parsed by jsonfmt, so every item keeps the
line it starts on. Only the CSL fields whose shape differs from a plain record are translated
(`author` [{family, given}], `issued` {date-parts}, `container-title`, `keyword`); every other
field passes through, so a plain JSON file taken for CSL still reads as it would have.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

from .errors import BadRecord
from .jsonfmt import read_json
from .records import RawRecord

# Keys only CSL uses: enough of them in a .json file's start means the file is CSL-JSON.
CSL_MARKERS = re.compile(r'"(issued|container-title|date-parts|citation-key|citation-label)"\s*:')
_KEYWORD_SEPARATORS = re.compile(r"\s*[,;]\s*")


def looks_like_csl(head: str) -> bool:
    return bool(CSL_MARKERS.search(head))


def read_csl_json(path: Path) -> Iterator[RawRecord]:
    for record in read_json(path):
        if record.fields is None:
            yield record
            continue
        try:
            yield RawRecord(line=record.line, fields=csl_fields(record.fields),
                            name=_item_name(record.fields))
        except BadRecord as bad:
            yield RawRecord.bad(record.line, bad.reason, name=_item_name(record.fields))


def csl_fields(item: Mapping[str, Any]) -> dict:
    """The item as a plain record: CSL-shaped fields replaced by what fields.py understands."""
    fields = {k: v for k, v in item.items() if k not in ("author", "issued", "keyword")}
    if "author" in item:
        fields["authors"] = csl_authors(item["author"])
    year = csl_year(item.get("issued"))
    if year is not None:
        fields["year"] = year
    if item.get("container-title"):
        fields["venue"] = item["container-title"]
    if item.get("keyword") and not item.get("category"):
        # CSL has no subject category; keywords are the closest, as a list --category matches
        fields["category"] = [k for k in _KEYWORD_SEPARATORS.split(str(item["keyword"])) if k]
    return fields


def csl_authors(value: Any) -> list[str]:
    """[{"family": "Smith", "given": "John"}, {"literal": "CERN"}] → ["John Smith", "CERN"]."""
    if not isinstance(value, list):
        raise BadRecord(f"'author' must be a list of names, got {type(value).__name__}")
    return [name for name in (_csl_name(person) for person in value) if name]


def _csl_name(person: Any) -> str:
    if isinstance(person, str):
        return person.strip()
    if not isinstance(person, Mapping):
        raise BadRecord(f"an 'author' entry must be an object, got {type(person).__name__}")
    if person.get("literal"):
        return str(person["literal"]).strip()
    parts = (person.get(key) for key in ("given", "non-dropping-particle", "family", "suffix"))
    return " ".join(str(p).strip() for p in parts if p)


def csl_year(issued: Any) -> Optional[Any]:
    """The year of {"date-parts": [[2020, 5, 1]]}; {"raw"/"literal": "May 2020"} is handed to
    the usual year parser. A date-parts that is not a list of lists is a malformed item."""
    if issued is None:
        return None
    if not isinstance(issued, Mapping):
        return issued  # a plain "2020" or "2020-05-01", as some converters write
    if "date-parts" in issued:
        parts = issued["date-parts"]
        if not (isinstance(parts, list) and parts and isinstance(parts[0], list)):
            raise BadRecord("'issued.date-parts' must be a list of [year, month, day] lists")
        return parts[0][0] if parts[0] else None
    return issued.get("raw") or issued.get("literal")


def _item_name(item: Mapping[str, Any]) -> Optional[str]:
    return f"item {item['id']}" if item.get("id") not in (None, "") else None
