"""Zotero's own database (zotero.sqlite), read directly: a test library laid out as Zotero's is.

The DDL below is this test's own, with the columns of Zotero's schema (resource/schema/userdata.sql
in github.com/zotero/zotero, Zotero 5-7) for the tables the reader queries and the ones beside
them (notes, attachments, annotations). Nothing is written outside a private temporary folder,
which is removed after each test.
"""
from __future__ import annotations

import hashlib
import shutil
import sqlite3
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator, Optional

import pytest

from assistant.corpus import CorpusError, RecordError, detect_format, read_papers
from assistant.library import PaperAssistant
from conftest import make_settings

DDL = """
CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, type TEXT NOT NULL, editable INT NOT NULL,
    filesEditable INT NOT NULL, version INT NOT NULL DEFAULT 0, storageVersion INT NOT NULL DEFAULT 0,
    lastSync INT NOT NULL DEFAULT 0, archived INT NOT NULL DEFAULT 0);
CREATE TABLE groups (groupID INTEGER PRIMARY KEY, libraryID INT NOT NULL UNIQUE, name TEXT NOT NULL,
    description TEXT NOT NULL, version INT NOT NULL);
CREATE TABLE itemTypes (itemTypeID INTEGER PRIMARY KEY, typeName TEXT, templateItemTypeID INT,
    display INT DEFAULT 1);
CREATE TABLE fields (fieldID INTEGER PRIMARY KEY, fieldName TEXT, fieldFormatID INT);
CREATE TABLE creatorTypes (creatorTypeID INTEGER PRIMARY KEY, creatorType TEXT);
CREATE TABLE items (itemID INTEGER PRIMARY KEY, itemTypeID INT NOT NULL,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL, key TEXT NOT NULL, version INT NOT NULL DEFAULT 0,
    synced INT NOT NULL DEFAULT 0, UNIQUE (libraryID, key));
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE);
CREATE TABLE itemData (itemID INT, fieldID INT, valueID, PRIMARY KEY (itemID, fieldID));
CREATE INDEX itemData_fieldID ON itemData(fieldID);
CREATE TABLE itemNotes (itemID INTEGER PRIMARY KEY, parentItemID INT, note TEXT, title TEXT);
CREATE TABLE itemAttachments (itemID INTEGER PRIMARY KEY, parentItemID INT, linkMode INT,
    contentType TEXT, charsetID INT, path TEXT, syncState INT DEFAULT 0, storageModTime INT,
    storageHash TEXT);
CREATE TABLE itemAnnotations (itemID INTEGER PRIMARY KEY, parentItemID INT NOT NULL,
    type INTEGER NOT NULL, authorName TEXT, text TEXT, comment TEXT, color TEXT, pageLabel TEXT,
    sortIndex TEXT NOT NULL, position TEXT NOT NULL, isExternal INT NOT NULL);
CREATE TABLE tags (tagID INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE itemTags (itemID INT NOT NULL, tagID INT NOT NULL, type INT NOT NULL,
    PRIMARY KEY (itemID, tagID));
CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, fieldMode INT,
    UNIQUE (lastName, firstName, fieldMode));
CREATE TABLE itemCreators (itemID INT NOT NULL, creatorID INT NOT NULL,
    creatorTypeID INT NOT NULL DEFAULT 1, orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex), UNIQUE (itemID, orderIndex));
CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, collectionName TEXT NOT NULL,
    parentCollectionID INT DEFAULT NULL, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL, key TEXT NOT NULL, version INT NOT NULL DEFAULT 0,
    synced INT NOT NULL DEFAULT 0, UNIQUE (libraryID, key));
CREATE TABLE collectionItems (collectionID INT NOT NULL, itemID INT NOT NULL,
    orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (collectionID, itemID));
CREATE TABLE deletedCollections (collectionID INTEGER PRIMARY KEY,
    dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
"""
ITEM_TYPES = ["note", "book", "bookSection", "journalArticle", "report", "attachment",
              "conferencePaper", "preprint", "annotation"]
FIELDS = ["title", "abstractNote", "date", "DOI", "url", "extra", "publicationTitle",
          "proceedingsTitle", "repository", "pages", "accessDate"]
CREATOR_TYPES = ["author", "contributor", "editor"]
USER, GROUP, FEED = 1, 2, 3  # libraryIDs

TOPICS = ["federated backdoor attacks", "graph neural networks for molecules",
          "protein folding with diffusion", "causal discovery from time series",
          "speech recognition for low-resource languages", "robot grasping from tactile sensing",
          "sparse attention for long documents", "privacy auditing of language models",
          "weather forecasting with transformers", "symbolic regression with search"]


def abstract(n: int) -> str:
    topic = TOPICS[n % len(TOPICS)]
    return f"We study {topic}. Our method number {n} improves results on standard benchmarks."


class Library:
    """A zotero.sqlite written the way Zotero stores items: values interned in itemDataValues,
    creators in creators + itemCreators by orderIndex, tags, nested collections, the trash."""

    def __init__(self, path: Path):
        self.path = path
        self.db = sqlite3.connect(path)
        self.db.executescript(DDL)
        self.db.executemany("INSERT INTO libraries (libraryID, type, editable, filesEditable) "
                            "VALUES (?, ?, 1, 1)", [(USER, "user"), (GROUP, "group"), (FEED, "feed")])
        self.db.execute("INSERT INTO groups VALUES (12345, ?, 'Lab', '', 1)", (GROUP,))
        self.db.executemany("INSERT INTO itemTypes (itemTypeID, typeName) VALUES (?, ?)",
                            list(enumerate(ITEM_TYPES, 1)))
        self.db.executemany("INSERT INTO fields (fieldID, fieldName) VALUES (?, ?)",
                            list(enumerate(FIELDS, 1)))
        self.db.executemany("INSERT INTO creatorTypes (creatorTypeID, creatorType) VALUES (?, ?)",
                            list(enumerate(CREATOR_TYPES, 1)))
        self.ids: dict[str, int] = {}

    def _id(self, table: str, id_column: str, where: dict) -> int:
        """The row of `table` with these values, added when missing (Zotero's interned tables)."""
        columns = ", ".join(where)
        test = " AND ".join(f"{c} IS ?" for c in where)
        row = self.db.execute(f"SELECT {id_column} FROM {table} WHERE {test}", list(where.values())).fetchone()
        if row:
            return row[0]
        return self.db.execute(f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * len(where))})",
                               list(where.values())).lastrowid

    def item(self, type_name: str, key: str, library: int = USER, fields: Optional[dict] = None,
             creators: tuple = (), tags: tuple = (), collections: tuple = (),
             trashed: bool = False) -> int:
        """creators: (creatorType, first, last, fieldMode) in the item's order; tags: (name, type)."""
        item_id = self.db.execute(
            "INSERT INTO items (itemTypeID, libraryID, key, dateAdded, dateModified, clientDateModified) "
            "VALUES (?, ?, ?, '2024-01-01 10:00:00', '2024-01-01 10:00:00', '2024-01-01 10:00:00')",
            (ITEM_TYPES.index(type_name) + 1, library, key)).lastrowid
        self.ids[key] = item_id
        for name, value in (fields or {}).items():
            self._set(item_id, name, value)
        # written last first: the order must come from orderIndex, not from the rows' order
        for index, (kind, first, last, mode) in reversed(list(enumerate(creators))):
            creator = self._id("creators", "creatorID", {"firstName": first, "lastName": last, "fieldMode": mode})
            self.db.execute("INSERT INTO itemCreators VALUES (?, ?, ?, ?)",
                            (item_id, creator, CREATOR_TYPES.index(kind) + 1, index))
        for name, tag_type in tags:
            tag = self._id("tags", "tagID", {"name": name})
            self.db.execute("INSERT INTO itemTags VALUES (?, ?, ?)", (item_id, tag, tag_type))
        for collection in collections:
            self.db.execute("INSERT INTO collectionItems (collectionID, itemID) VALUES (?, ?)",
                            (collection, item_id))
        if trashed:
            self.db.execute("INSERT INTO deletedItems (itemID) VALUES (?)", (item_id,))
        return item_id

    def _set(self, item_id: int, name: str, value: str) -> None:
        value_id = self._id("itemDataValues", "valueID", {"value": value})
        self.db.execute("INSERT OR REPLACE INTO itemData VALUES (?, ?, ?)",
                        (item_id, FIELDS.index(name) + 1, value_id))

    def note(self, key: str, parent: Optional[int], text: str) -> None:
        item_id = self.item("note", key)
        self.db.execute("INSERT INTO itemNotes VALUES (?, ?, ?, ?)", (item_id, parent, text, text[:20]))

    def attachment(self, key: str, parent: int) -> int:
        item_id = self.item("attachment", key, fields={"title": "Full Text PDF", "url": "https://example.org/x.pdf"})
        self.db.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
                        "VALUES (?, ?, 1, 'application/pdf', 'storage:x.pdf')", (item_id, parent))
        return item_id

    def annotation(self, key: str, attachment: int) -> None:
        item_id = self.item("annotation", key)
        self.db.execute("INSERT INTO itemAnnotations (itemID, parentItemID, type, text, sortIndex, "
                        "position, isExternal) VALUES (?, ?, 1, 'highlighted words', '00000|000', '{}', 0)",
                        (item_id, attachment))

    def collection(self, name: str, parent: Optional[int] = None, trashed: bool = False) -> int:
        collection_id = self.db.execute(
            "INSERT INTO collections (collectionName, parentCollectionID, libraryID, key) VALUES (?, ?, ?, ?)",
            (name, parent, USER, f"COLL{name[:4].upper()}")).lastrowid
        if trashed:
            self.db.execute("INSERT INTO deletedCollections (collectionID) VALUES (?)", (collection_id,))
        return collection_id

    def edit(self, key: str, name: str, value: str) -> None:
        """As Zotero saves an edit: the new value, and the item's modification time and version."""
        item_id = self.ids[key]
        self._set(item_id, name, value)
        self.db.execute("UPDATE items SET dateModified = '2024-06-01 12:00:00', "
                        "clientDateModified = '2024-06-01 12:00:00', version = version + 1 "
                        "WHERE itemID = ?", (item_id,))
        self.db.commit()

    def close(self) -> None:
        self.db.commit()
        self.db.close()


def build_library(path: Path) -> Library:
    """32 papers (10 journal articles, 8 conference papers, 7 preprints, 5 books in My Library,
    2 articles in a group library), 2 items without an abstract, and what is not a paper: notes,
    attachments, an annotation, items in the trash, a feed item."""
    lib = Library(path)
    thesis = lib.collection("Thesis")
    chapter = lib.collection("Chapter 2", parent=thesis)
    related = lib.collection("Related work", parent=chapter)
    reading = lib.collection("Reading list")
    old = lib.collection("Old", trashed=True)
    n = iter(range(100))

    j0 = lib.item("journalArticle", "JRNL0000", fields={
        "title": "Backdoor attacks on federated learning", "abstractNote": abstract(next(n)),
        "date": "2019-05-00 2019/05", "DOI": "10.1234/fl.2019.7", "url": "https://example.org/fl",
        "publicationTitle": "Journal of Robust Learning", "pages": "1-20"},
        creators=[("editor", "Ed", "Itor", 0), ("author", "Alice", "Zhang", 0),
                  ("author", None, "OpenAI Research", 1), ("author", "Bob", "Stone", 0)],
        tags=[("security", 0), ("Federated learning", 1)], collections=(chapter, reading))
    for i in range(1, 10):
        lib.item("journalArticle", f"JRNL000{i}", fields={
            "title": f"Journal paper {i}", "abstractNote": abstract(next(n)),
            "date": f"20{10 + i}-03-15 3/15/20{10 + i}", "publicationTitle": "Journal of Things"},
            creators=[("author", "Jo", f"Writer{i}", 0)], collections=(thesis,) if i < 3 else ())
    lib.item("conferencePaper", "CONF0000", fields={
        "title": "Sparse attention at scale", "abstractNote": abstract(next(n)),
        "date": "2021-07-18 7/18/2021", "proceedingsTitle": "Proceedings of ICML",
        "url": "https://example.org/sparse"},
        creators=[("author", "Carla", "Diaz", 0), ("contributor", "Dan", "Help", 0)],
        collections=(related,), tags=[("attention", 0)])
    for i in range(1, 8):
        lib.item("conferencePaper", f"CONF000{i}", fields={
            "title": f"Conference paper {i}", "abstractNote": abstract(next(n)),
            "date": f"2022-0{i}-00 {i}/2022", "proceedingsTitle": "NeurIPS"},
            creators=[("author", "Con", f"Ference{i}", 0)])
    lib.item("preprint", "PREP0000", fields={
        "title": "Diffusion for proteins", "abstractNote": abstract(next(n)),
        "date": "2021-01-00 January 2021", "repository": "arXiv",
        "extra": "arXiv: 2101.00001\nDOI: 10.48550/arXiv.2101.00001"},
        creators=[("author", "Eve", "Li", 0)], collections=(old,))
    for i in range(1, 7):
        lib.item("preprint", f"PREP000{i}", fields={
            "title": f"Preprint {i}", "abstractNote": abstract(next(n)), "date": "2023-00-00 2023",
            "repository": "arXiv"}, creators=[("author", "Pre", f"Print{i}", 0)])
    lib.item("book", "BOOK0000", fields={
        "title": "An edited volume", "abstractNote": abstract(next(n)), "date": "0000-00-00 Spring"},
        creators=[("editor", "Fay", "Editor", 0), ("editor", None, "The Consortium", 1)])
    lib.item("book", "BOOK0001", fields={
        "title": "A book from an old import", "abstractNote": abstract(next(n)), "date": "March 2018"},
        creators=[("author", "Gus", "Old", 0)])
    for i in range(2, 5):
        lib.item("book", f"BOOK000{i}", fields={
            "title": f"Book {i}", "abstractNote": abstract(next(n)), "date": "2015-00-00 2015"},
            creators=[("author", "Bo", f"Ok{i}", 0)])
    lib.item("journalArticle", "GRUP0000", library=GROUP, fields={
        "title": "A shared paper", "abstractNote": abstract(next(n)), "date": "2020-00-00 2020"},
        creators=[("author", "Gro", "Up", 0)])
    # keys are unique per library: the group may hold one of My Library's
    lib.item("journalArticle", "JRNL0001", library=GROUP, fields={
        "title": "Same key, other library", "abstractNote": abstract(next(n))})

    # left out, and counted: no abstract
    lib.item("bookSection", "SECT0000", fields={"title": "A chapter without an abstract", "date": "2010"})
    lib.item("report", "REPT0000", fields={"title": "A report", "abstractNote": "   \n "})
    # not papers, not counted
    lib.note("NOTE0000", j0, "<p>my notes on the backdoor paper</p>")
    lib.note("NOTE0001", j0, "<p>more notes</p>")
    lib.note("NOTE0002", None, "<p>a standalone note</p>")
    pdf = lib.attachment("ATTC0000", j0)
    lib.attachment("ATTC0001", lib.ids["CONF0000"])
    lib.annotation("ANNO0000", pdf)
    lib.item("journalArticle", "TRSH0000", trashed=True, fields={
        "title": "In the trash", "abstractNote": abstract(next(n)), "DOI": "10.1/trash"})
    lib.item("conferencePaper", "TRSH0001", trashed=True, fields={
        "title": "Also in the trash", "abstractNote": abstract(next(n))})
    lib.item("journalArticle", "FEED0000", library=FEED, fields={
        "title": "A feed item", "abstractNote": abstract(next(n))})
    lib.db.commit()
    return lib


PAPER_KEYS = ({"JRNL0000", "CONF0000", "PREP0000", "BOOK0000", "BOOK0001", "groups/12345/GRUP0000",
               "groups/12345/JRNL0001"}
              | {f"JRNL000{i}" for i in range(1, 10)} | {f"CONF000{i}" for i in range(1, 8)}
              | {f"PREP000{i}" for i in range(1, 7)} | {f"BOOK000{i}" for i in range(2, 5)})
PAPERS = len(PAPER_KEYS)
NOT_READ = {"NOTE0000", "NOTE0001", "NOTE0002", "ATTC0000", "ATTC0001", "ANNO0000", "TRSH0000",
            "TRSH0001", "FEED0000"}


# -- fixtures: a private temporary folder, and the reader's copies watched -------------------------

@pytest.fixture
def work(monkeypatch) -> Iterator[Path]:
    """A folder removed after the test (not pytest's tmp_path, which is kept). The reader's
    temporary copies go under work/tmp, and none may be left there."""
    folder = Path(tempfile.mkdtemp(prefix="test-zotero-"))
    copies = folder / "tmp"
    copies.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(copies))
    try:
        yield folder
        assert not list(copies.glob("paper-assistant-zotero-*")), "a temporary copy was left behind"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def library(work) -> Iterator[Library]:
    lib = build_library(work / "zotero.sqlite")
    lib.close()
    yield lib


def read(path: Path) -> tuple[dict, list[RecordError]]:
    skipped: list[RecordError] = []
    papers = {p.paper_id: p for p in read_papers(path, skipped=skipped)}
    return papers, skipped


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- reading --------------------------------------------------------------------------------------

def test_detected_by_extension_and_by_content(library, work):
    assert detect_format(library.path) == "zotero"
    backup = work / "zotero.sqlite.bak"  # Zotero's own backup, under another extension
    shutil.copyfile(library.path, backup)
    assert detect_format(backup) == "zotero"
    assert len(read(backup)[0]) == PAPERS


def test_counts_and_what_is_not_a_paper(library):
    papers, skipped = read(library.path)
    assert set(papers) == PAPER_KEYS and len(papers) == PAPERS
    assert not NOT_READ & set(papers)
    # only the regular items without an abstract are counted as left out, with their key and title
    assert [str(s) for s in skipped] == [
        f'{library.path}: item SECT0000: no abstract ("A chapter without an abstract")',
        f'{library.path}: item REPT0000: no abstract ("A report")']
    assert all(s.line is None for s in skipped)


def test_fields_map_to_paper(library):
    papers, _ = read(library.path)
    fl = papers["JRNL0000"]
    assert fl.title == "Backdoor attacks on federated learning" and not fl.title_is_derived
    # authors only (not the editor), in orderIndex order; a one-field name is kept as written
    assert fl.authors == ["Alice Zhang", "OpenAI Research", "Bob Stone"]
    assert fl.year == 2019
    assert fl.doi == "10.1234/fl.2019.7" and fl.url == "https://example.org/fl"
    assert fl.venue == "Journal of Robust Learning"
    # collections (with their parents) first, then tags, each sorted
    assert fl.category == "Reading list, Thesis · Chapter 2, Federated learning, security"
    assert fl.abstract == abstract(0)
    assert fl.source == "zotero.sqlite:item JRNL0000"

    sparse = papers["CONF0000"]
    assert sparse.authors == ["Carla Diaz"]  # the contributor is not an author
    assert (sparse.year, sparse.venue) == (2021, "Proceedings of ICML")
    assert sparse.category == "Thesis · Chapter 2 · Related work, attention"
    assert sparse.doi is None and sparse.url == "https://example.org/sparse"

    preprint = papers["PREP0000"]
    assert preprint.doi == "10.48550/arXiv.2101.00001"  # from Extra
    assert preprint.url == "https://doi.org/10.48550/arXiv.2101.00001"
    assert (preprint.year, preprint.venue) == (2021, "arXiv")
    assert preprint.category is None  # its only collection is in the trash

    edited = papers["BOOK0000"]
    assert edited.authors == ["Fay Editor", "The Consortium"]  # no author: all creators
    assert edited.year is None  # "0000-00-00 Spring"
    assert papers["BOOK0001"].year == 2018  # "March 2018", not in Zotero's date form
    assert papers["JRNL0001"].category == "Thesis"
    assert [papers[f"JRNL000{i}"].year for i in range(1, 4)] == [2011, 2012, 2013]
    assert {papers[f"CONF000{i}"].year for i in range(1, 8)} == {2022}
    # a group library's items: the group in the id, so a key My Library also has is another paper
    assert papers["groups/12345/GRUP0000"].authors == ["Gro Up"]
    assert papers["groups/12345/JRNL0001"].title == "Same key, other library"
    assert papers["JRNL0001"].title == "Journal paper 1"


# -- the database is only read -----------------------------------------------------------------------

def test_never_modified_and_read_under_an_exclusive_lock(library):
    before = digest(library.path)
    holder = sqlite3.connect(library.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # what a running Zotero holds
    try:
        blocked = sqlite3.connect(f"{library.path.as_uri()}?mode=ro", uri=True, timeout=0.1)
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            blocked.execute("SELECT count(*) FROM items").fetchone()  # opening it in place fails
        blocked.close()
        # the lock is SQLite's, not the file system's: the file copies and reads
        papers, skipped = read(library.path)
        assert len(papers) == PAPERS and len(skipped) == 2
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert digest(library.path) == before
    assert sorted(p.name for p in library.path.parent.iterdir()) == ["tmp", "zotero.sqlite"]


def test_a_write_in_progress_reads_as_the_last_committed_state(library):
    writer = sqlite3.connect(library.path, isolation_level=None)
    writer.execute("PRAGMA cache_size = 1")  # spill: the half-done write reaches the file
    writer.execute("BEGIN EXCLUSIVE")
    try:
        writer.execute("UPDATE itemDataValues SET value = 'half-written ' || value")
        writer.execute("CREATE TABLE filler (x)")
        writer.execute("INSERT INTO filler SELECT randomblob(2000) FROM itemData")
        journal = library.path.with_name("zotero.sqlite-journal")
        assert journal.exists()
        before = digest(library.path), digest(journal)
        papers, _ = read(library.path)  # the copied journal is rolled back, in the copy
        assert papers["JRNL0000"].abstract == abstract(0)
        assert (digest(library.path), digest(journal)) == before
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_wal_mode_reads_what_is_committed_in_the_wal(library):
    """Zotero 10 keeps the database in WAL mode: committed edits wait in zotero.sqlite-wal."""
    writer = sqlite3.connect(library.path, isolation_level=None)
    writer.execute("PRAGMA locking_mode = EXCLUSIVE")
    assert writer.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        writer.execute("INSERT INTO itemDataValues (value) VALUES ('An abstract that waits in the WAL.')")
        writer.execute("UPDATE itemData SET valueID = last_insert_rowid() WHERE fieldID = 2 AND itemID = "
                       "(SELECT itemID FROM items WHERE key = 'CONF0003')")
        wal = library.path.with_name("zotero.sqlite-wal")
        assert wal.stat().st_size > 0
        before = digest(library.path), digest(wal)
        papers, _ = read(library.path)
        assert papers["CONF0003"].abstract == "An abstract that waits in the WAL."
        assert (digest(library.path), digest(wal)) == before
    finally:
        writer.close()


def test_a_library_that_keeps_changing_while_copied_is_refused(library, monkeypatch):
    from assistant.corpus import zotero

    moments = iter(range(100))
    monkeypatch.setattr(zotero, "_file_states", lambda path: [next(moments)])  # never the same twice
    monkeypatch.setattr(zotero, "time", SimpleNamespace(sleep=lambda seconds: None))
    with pytest.raises(CorpusError, match=r"zotero\.sqlite: the library kept changing while it was "
                                          r"copied \(Zotero is saving\); try again"):
        list(read_papers(library.path))
    assert next(moments) == 2 * zotero.COPY_ATTEMPTS  # copied that many times, each checked


# -- not a Zotero library ----------------------------------------------------------------------

def test_other_sqlite_and_non_sqlite_files_are_refused(work):
    other = work / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    db.close()
    with pytest.raises(CorpusError, match=r"other\.sqlite: an SQLite database but not a Zotero "
                                          r"library \(it has no items, itemTypes, fields, itemData, … tables\)"):
        list(read_papers(other))
    text = work / "fake.sqlite"
    text.write_text("not a database\n")
    with pytest.raises(CorpusError, match=r"fake\.sqlite: not an SQLite database"):
        list(read_papers(text))
    # an SQLite file under another name is taken for Zotero's, and refused the same way
    renamed = work / "other.db"
    shutil.copyfile(other, renamed)
    assert detect_format(renamed) == "zotero"
    with pytest.raises(CorpusError, match="not a Zotero library"):
        list(read_papers(renamed))


# -- ingesting and re-ingesting ----------------------------------------------------------------

def stored(pa: PaperAssistant) -> dict:
    """paper id → (record, chunk hashes) as the store holds them."""
    res = pa.store.collection.get(include=["metadatas"])
    hashes: dict = {}
    for meta in res["metadatas"]:
        hashes.setdefault(meta["paper_id"], []).append(meta["hash"])
    return {pid: (p.model_dump_json(), sorted(hashes[pid])) for pid, p in pa.store.papers().items()}


def test_reingest_changes_exactly_the_edited_item(work):
    lib = build_library(work / "zotero.sqlite")
    lib.db.commit()
    pa = PaperAssistant(make_settings(work / "store"))
    [first] = pa.ingest([lib.path])
    assert (first.papers, first.upsert.papers_new, len(first.skipped), first.bad) == (PAPERS, PAPERS, 2, [])
    before = stored(pa)
    assert set(before) == PAPER_KEYS

    [same] = pa.ingest([lib.path])
    assert (same.upsert.papers_unchanged, same.upsert.chunks_embedded) == (PAPERS, 0)

    lib.edit("CONF0002", "abstractNote", "We revisit sparse attention. The new abstract says so.")
    [second] = pa.ingest([lib.path])
    assert (second.upsert.papers_new, second.upsert.papers_updated, second.upsert.papers_unchanged) == (0, 1, PAPERS - 1)
    after = stored(pa)
    assert {pid for pid in after if after[pid] != before[pid]} == {"CONF0002"}
    assert pa.store.paper("CONF0002").abstract == "We revisit sparse attention. The new abstract says so."
    # an edit to a field a paper does not carry (pages) changes nothing
    lib.edit("JRNL0000", "pages", "1-21")
    [third] = pa.ingest([lib.path])
    assert third.upsert.papers_unchanged == PAPERS
    lib.close()


def test_cli_ingest_lists_what_was_left_out(library, work):
    from typer.testing import CliRunner

    from assistant.cli import app

    result = CliRunner().invoke(app, ["ingest", "--store", str(work / "store"), "--quiet", str(library.path)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stderr.split())
    assert "zotero.sqlite: 32 papers (32 new, 0 updated, 0 unchanged; 32 chunks embedded); 2 left out" in text
    assert 'left out ' + str(library.path) + ': item SECT0000: no abstract ("A chapter without an abstract")' in text


def test_page_upload_accepts_sqlite(library, work):
    from assistant.ui import CORPUS_TYPES
    from assistant.ui.handlers import Page, PageHandlers

    assert ".sqlite" in CORPUS_TYPES
    page = Page(stats="stats", upload_status="status", categories="categories", authors="authors",
                year_min="year_min", year_max="year_max")
    pa = PaperAssistant(make_settings(work / "store"))
    result = PageHandlers(pa, page, work).upload(str(library.path), progress=lambda *a, **k: None)
    assert "zotero.sqlite</code>: 32 papers (32 new" in result["status"]
    assert "2 items without an abstract were left out" in result["status"]
