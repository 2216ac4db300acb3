"""Zotero's own database (`zotero.sqlite`, Zotero 5 and later), read directly and read-only.

A running Zotero holds the database under an exclusive lock, so it is never opened in place: the
file and its `-wal`/`-journal` are copied to a private temporary folder, the copy is opened with
`mode=ro`, and the folder is removed afterwards. Copying is a plain file read, which SQLite's
locks (advisory on Linux and macOS) do not stop: tests/test_zotero.py reads under another
connection's BEGIN EXCLUSIVE, a half-done write, and an uncheckpointed WAL (Zotero 10 keeps
its database in WAL mode; earlier versions use a rollback journal).

Read are the regular items of every library but feeds: not notes, attachments, annotations or
items in the trash. Tables and columns follow Zotero's schema (resource/schema/userdata.sql):

    items(itemID, itemTypeID, libraryID, key)    itemTypes(itemTypeID, typeName)
    itemData(itemID, fieldID, valueID)           fields(fieldID, fieldName)
    itemDataValues(valueID, value)               deletedItems(itemID)
    itemCreators(itemID, creatorID, creatorTypeID, orderIndex)
    creators(creatorID, firstName, lastName, fieldMode)   creatorTypes(creatorTypeID, creatorType)
    itemTags(itemID, tagID)   tags(tagID, name)   libraries(libraryID, type)   groups(groupID, libraryID)
    collectionItems(collectionID, itemID)   collections(collectionID, collectionName, parentCollectionID)

An item becomes a record with the item key as its id ("ABCD2345"; "groups/12345/ABCD2345" in a
group library, as in Zotero's URIs, since keys are unique per library only), so re-ingesting maps
the same item to the same paper and the store's content hash finds the edited ones. An item
without an abstract is skipped (a library holds many: books, web pages) and counted, not refused.
"""
from __future__ import annotations

import re
import shutil
import sqlite3
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from .errors import CorpusError
from .fields import parse_year
from .records import RawRecord

SQLITE_MAGIC = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
SIDE_FILES = ("-wal", "-journal")  # committed pages not yet in the file / a write in progress
# The tables read; a database without them is some other program's.
ZOTERO_TABLES = ("items", "itemTypes", "fields", "itemData", "itemDataValues", "creators",
                 "itemCreators", "creatorTypes", "tags", "itemTags", "collections",
                 "collectionItems", "deletedItems", "libraries", "groups")
NOT_PAPERS = ("note", "attachment", "annotation")  # item types that are parts of other items
# Where the venue is, by item type: journal, proceedings, book (of a chapter), conference,
# preprint server ("arXiv"). Zotero stores each under its own field name.
VENUE_FIELDS = ("publicationTitle", "proceedingsTitle", "bookTitle", "conferenceName", "repository")
READ_FIELDS = ("title", "abstractNote", "date", "DOI", "url", "extra", *VENUE_FIELDS)
COPY_ATTEMPTS = 3  # the library changed while it was copied (Zotero saving): copy again
COLLECTION_SEPARATOR = " · "  # "Thesis · Chapter 2", the house "Area · Subarea" form

# Zotero writes dates as "2019-05-00 2019/05": an SQL date (0 for unknown parts), then as typed.
_SQL_DATE = re.compile(r"^(\d{4})-\d{2}-\d{2}(?:\s|$)")
# Item types that had no DOI field keep it in Extra, one "Key: value" per line.
_EXTRA_DOI = re.compile(r"^\s*DOI:\s*(\S+)", re.IGNORECASE | re.MULTILINE)


def is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC


def read_zotero(path: Path) -> Iterator[RawRecord]:
    """The library is read whole while its copy is open (the fields, creators, tags and
    collections the papers carry), so the copy is removed before the first paper is embedded."""
    if not is_sqlite(path):
        raise CorpusError(str(path), None, "not an SQLite database (Zotero's is zotero.sqlite "
                                           "in the Zotero data folder)")
    with open_copy(path) as db:
        try:
            _require_zotero(path, db)
            items = _regular_items(db)
            values, creators = _field_values(db), _creators(db)
            categories = _categories(db)
        except sqlite3.DatabaseError as e:  # a column of another schema, a damaged copy
            raise CorpusError(str(path), None, f"cannot read this Zotero library: {e}") from None
    for item_id, key, group in items:
        yield _record(item_key(key, group), values.get(item_id, {}), creators.get(item_id, []),
                      categories.get(item_id, []))


# -- the copy -------------------------------------------------------------------------------------

@contextmanager
def open_copy(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a private copy of the database, removed on leaving."""
    folder = Path(tempfile.mkdtemp(prefix="paper-assistant-zotero-"))
    try:
        copy = _copy_database(path, folder)
        db = _connect_read_only(path, copy)
        try:
            yield db
        finally:
            db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _copy_database(path: Path, folder: Path) -> Path:
    """Copy the file and its side files; again when any of them changed meanwhile, as the
    copies must be of one moment to fit together."""
    copy = folder / path.name
    for attempt in range(COPY_ATTEMPTS):
        before = _file_states(path)
        for side in (copy.with_name(copy.name + s) for s in SIDE_FILES):
            side.unlink(missing_ok=True)  # left by an earlier attempt
        for suffix in ("", *SIDE_FILES):
            source = path.with_name(path.name + suffix)
            if source.is_file():
                shutil.copyfile(source, copy.with_name(copy.name + suffix))
        if _file_states(path) == before:
            return copy
        time.sleep(0.2 * (attempt + 1))
    raise CorpusError(str(path), None, "the library kept changing while it was copied "
                                       "(Zotero is saving); try again in a moment")


def _file_states(path: Path) -> list[tuple[str, int, int]]:
    states = []
    for suffix in ("", *SIDE_FILES):
        try:
            stat = path.with_name(path.name + suffix).stat()
        except FileNotFoundError:
            continue
        states.append((suffix, stat.st_size, stat.st_mtime_ns))
    return states


def _connect_read_only(path: Path, copy: Path) -> sqlite3.Connection:
    """Open the copy with mode=ro. A copied `-journal` of a write in progress must first be
    rolled back, which needs write access: that is done on the copy, leaving the last
    committed state (the original is never opened)."""
    try:
        return _open_ro(copy)
    except sqlite3.DatabaseError as e:
        if not _needs_rollback(e):
            raise CorpusError(str(path), None, f"not a readable SQLite database ({e})") from None
    try:
        writable = sqlite3.connect(copy)
        try:
            writable.execute("SELECT count(*) FROM sqlite_master").fetchone()  # rolls back
        finally:
            writable.close()
        return _open_ro(copy)
    except sqlite3.DatabaseError as e:
        raise CorpusError(str(path), None, f"not a readable SQLite database ({e})") from None


def _open_ro(copy: Path) -> sqlite3.Connection:
    db = sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the header now
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def _needs_rollback(error: sqlite3.DatabaseError) -> bool:
    return (getattr(error, "sqlite_errorname", None) == "SQLITE_READONLY_ROLLBACK"
            or "readonly database" in str(error))  # Python 3.10 has no sqlite_errorname


def _require_zotero(path: Path, db: sqlite3.Connection) -> None:
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in ZOTERO_TABLES if t not in tables]
    if missing:
        named = ", ".join(missing[:4]) + (", …" if len(missing) > 4 else "")
        raise CorpusError(str(path), None, "an SQLite database but not a Zotero library (it has "
                          f"no {named} table{'s' * (len(missing) > 1)})")


# -- the queries ----------------------------------------------------------------------------------

def _regular_items(db: sqlite3.Connection) -> list[tuple[int, str, Optional[int]]]:
    """(itemID, key, groupID or None) of the items that can be papers, in the order they were
    added."""
    marks = ", ".join("?" * len(NOT_PAPERS))
    # LEFT JOIN: an item of a type missing from itemTypes (a custom type) is still read
    return db.execute(f"""
        SELECT i.itemID, i.key, g.groupID FROM items i
        LEFT JOIN itemTypes t ON t.itemTypeID = i.itemTypeID
        LEFT JOIN groups g ON g.libraryID = i.libraryID
        WHERE COALESCE(t.typeName, '') NOT IN ({marks})
          AND i.itemID NOT IN (SELECT itemID FROM deletedItems)
          AND i.libraryID IN (SELECT libraryID FROM libraries WHERE type <> 'feed')
        ORDER BY i.itemID""", NOT_PAPERS).fetchall()


def _field_values(db: sqlite3.Connection) -> dict[int, dict[str, str]]:
    marks = ", ".join("?" * len(READ_FIELDS))
    values: dict[int, dict[str, str]] = defaultdict(dict)
    for item_id, name, value in db.execute(f"""
            SELECT d.itemID, f.fieldName, v.value FROM itemData d
            JOIN fields f ON f.fieldID = d.fieldID JOIN itemDataValues v ON v.valueID = d.valueID
            WHERE f.fieldName IN ({marks})""", READ_FIELDS):
        if value is not None:
            values[item_id][name] = str(value)
    return values


def _creators(db: sqlite3.Connection) -> dict[int, list[tuple[str, str]]]:
    """itemID → [(creator type, name)] in the item's order."""
    creators: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for item_id, first, last, mode, kind in db.execute("""
            SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, ct.creatorType
            FROM itemCreators ic JOIN creators c ON c.creatorID = ic.creatorID
            LEFT JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID
            ORDER BY ic.itemID, ic.orderIndex"""):
        name = creator_name(first, last, mode)
        if name:
            creators[item_id].append((kind or "", name))
    return creators


def creator_name(first: Optional[str], last: Optional[str], field_mode: Optional[int]) -> str:
    """fieldMode 1 is a one-field name kept in lastName ("OpenAI"); else "First Last"."""
    if field_mode == 1:
        return (last or "").strip()
    return " ".join(part.strip() for part in (first, last) if part and part.strip())


def _categories(db: sqlite3.Connection) -> dict[int, list[str]]:
    """itemID → its collections ("Parent · Child", sorted), then its tags (sorted)."""
    paths = collection_paths(db)
    found: dict[int, list[str]] = defaultdict(list)
    for item_id, collection_id in db.execute("SELECT itemID, collectionID FROM collectionItems"):
        if collection_id in paths:
            found[item_id].append(paths[collection_id])
    tags: dict[int, list[str]] = defaultdict(list)
    for item_id, name in db.execute(
            "SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID"):
        if name and name.strip():
            tags[item_id].append(name.strip())
    # sorted: the order of rows is not part of an item, and a changed order must not read as an edit
    return {item_id: list(dict.fromkeys(sorted(found.get(item_id, []), key=_order)
                                        + sorted(tags.get(item_id, []), key=_order)))
            for item_id in found.keys() | tags.keys()}


def _order(name: str) -> tuple[str, str]:
    return name.casefold(), name  # "ML" and "ml" in one order whatever the rows' order


def collection_paths(db: sqlite3.Connection) -> dict[int, str]:
    """collectionID → "Thesis · Chapter 2", leaving out collections in the trash (and those
    under one). A parent that is missing or a loop ends the path where it is found."""
    rows = {cid: (name, parent) for cid, name, parent in db.execute(
        "SELECT collectionID, collectionName, parentCollectionID FROM collections")}
    trashed = set()
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'deletedCollections'").fetchone():
        trashed = {row[0] for row in db.execute("SELECT collectionID FROM deletedCollections")}
    paths = {}
    for cid in rows:
        names, seen, at = [], set(), cid
        while at in rows and at not in seen:
            seen.add(at)
            names.append(rows[at][0].strip())
            at = rows[at][1]
        if not seen & trashed:
            paths[cid] = COLLECTION_SEPARATOR.join(reversed(names))
    return paths


# -- one item -------------------------------------------------------------------------------------

def item_key(key: str, group: Optional[int]) -> str:
    """The paper id: the key in My Library; in a group library the group's path before it, as
    Zotero's URIs have it (zotero.org/groups/12345/items/ABCD2345): two libraries may share a key."""
    return key if group is None else f"groups/{group}/{key}"


def _record(key: str, values: dict[str, str], creators: list[tuple[str, str]],
            categories: list[str]) -> RawRecord:
    name = f"item {key}"
    abstract = values.get("abstractNote", "")
    if not abstract.strip():
        title = values.get("title", "").strip()
        return RawRecord.skip(None, f'no abstract ("{title[:60]}")' if title else "no abstract",
                              name=name)
    fields: dict = {"id": key, "title": values.get("title", ""), "abstract": abstract,
                    "authors": item_authors(creators), "category": categories,
                    "url": values.get("url", ""), "doi": values.get("DOI") or extra_doi(values)}
    year = zotero_year(values.get("date", ""))
    if year is not None:
        fields["year"] = year
    fields["venue"] = next((values[f] for f in VENUE_FIELDS if values.get(f, "").strip()), "")
    return RawRecord(line=None, fields=fields, name=name)


def item_authors(creators: list[tuple[str, str]]) -> list[str]:
    """The creators of type author; an item without any (an edited book) lists all its
    creators instead, so it is still found by its editors' names."""
    authors = [name for kind, name in creators if kind == "author"]
    return authors or [name for _, name in creators]


def zotero_year(date: str) -> Optional[int]:
    """2019 from "2019-05-00 2019/05"; "0000-00-00 Spring" has none. A date not in Zotero's
    form (an old import) goes to the usual year parser."""
    match = _SQL_DATE.match(date)
    if match and match.group(1) != "0000":
        return parse_year(int(match.group(1)))
    return parse_year(date[match.end():] if match else date)


def extra_doi(values: dict[str, str]) -> Optional[str]:
    match = _EXTRA_DOI.search(values.get("extra", ""))
    return match.group(1) if match else None
