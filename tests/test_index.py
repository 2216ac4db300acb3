"""Chunking and the store: upserts, stale chunks, the BM25 cache, the manifest, Chroma server mode."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from assistant.config import SEED_CORPUS, Settings
from assistant.corpus import read_papers
from assistant.embed import MINILM_MAX_TOKENS, count_tokens
from assistant.index import (SCHEMA_VERSION, STATS_FILE, Chunker, Store, StoreMismatch,
                             content_hash, embedding_text, lexical_text, paper_matches)
from assistant.index.papers import PAPERS_FILE, PaperTable
from assistant.ingest import ingest_paths
from assistant.library import PaperAssistant
from assistant.retrieve import Retriever
from assistant.stats import CorpusStats
from assistant.text import stem
from assistant.types import Filters, Paper
from conftest import make_settings, write_jsonl


# ----------------------------------------------------------------------------- corpora

def sentences(n: int, word: str = "topic") -> list[str]:
    return [f"Sentence number {i} reports a distinct finding about {word}{i} with several extra "
            f"words attached for length." for i in range(n)]


LONG_SENTENCES = sentences(34)  # ~600 tokens
LONG_ABSTRACT = " ".join(LONG_SENTENCES)
# The stored corpus keeps embedding cheap: its multi-window paper is ~270 tokens, cut into 3
# windows by a store chunking at 120 tokens (anything over ~245 tokens is split).
MID_ABSTRACT = " ".join(sentences(15))


def small_settings(store_dir: Path, **overrides) -> Settings:
    return make_settings(store_dir, chunk_tokens=120, chunk_overlap_tokens=20, **overrides)


def tiny_papers() -> list[Paper]:
    return [
        Paper(paper_id="p-fl", title="Backdoors in federated learning",
              authors=["Alice Zhang", "bob ray"], category="Social Aspects · Security", year=2021,
              abstract="Federated learning is vulnerable to backdoor attacks. We study how a "
                       "malicious client plants a persistent trigger."),
        Paper(paper_id="p-graph", title="Graph networks for molecules",
              authors=["Carol Diaz"], category="Applications · Chemistry", year=2023,
              abstract="Graph neural networks predict molecular properties. We add equivariant "
                       "message passing for chemistry."),
        Paper(paper_id="p-long", title="A long survey of many findings",
              authors=["Dan Evans", "alice zhang"], category="Deep Learning · Theory", year=2019,
              abstract=MID_ABSTRACT),
    ]


def chunk_rows(store: Store, paper_id: str | None = None) -> dict[str, dict]:
    where = {"paper_id": paper_id} if paper_id else None
    res = store.collection.get(where=where, include=["documents", "metadatas"])
    return {cid: {"doc": doc, "meta": meta}
            for cid, doc, meta in zip(res["ids"], res["documents"], res["metadatas"])}


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(small_settings(tmp_path / "store"))


# ----------------------------------------------------------------------------- chunking

def window_tokens(paper: Paper, text: str) -> int:
    """Tokens the model sees for one window: [CLS] title. text [SEP]."""
    return count_tokens(embedding_text(paper, text)) + 2


def test_short_abstract_is_one_chunk():
    paper = tiny_papers()[0]
    chunks = Chunker().chunk(paper)
    assert len(chunks) == 1
    c = chunks[0]
    assert (c.chunk_id, c.paper_id, c.index, c.text) == ("p-fl::0", "p-fl", 0, paper.abstract)


def test_abstract_that_fits_the_model_stays_one_chunk():
    # 230 tokens: more than chunk_tokens (200) but the whole of it fits in 256 with the title
    text = " ".join(sentences(13))
    paper = Paper(paper_id="mid", title="Short", abstract=text)
    assert 200 < count_tokens(text) < 250
    assert [c.text for c in Chunker().chunk(paper)] == [text]


def test_long_abstract_becomes_windows_that_fit_and_cover_it():
    paper = Paper(paper_id="long", title="A long survey of many findings", abstract=LONG_ABSTRACT)
    assert 550 <= count_tokens(LONG_ABSTRACT) <= 700
    chunks = Chunker().chunk(paper)
    assert len(chunks) >= 3
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [c.chunk_id for c in chunks] == [f"long::{i}" for i in range(len(chunks))]
    for c in chunks:
        assert window_tokens(paper, c.text) <= MINILM_MAX_TOKENS
        assert c.text.strip() and c.text in LONG_ABSTRACT
    for s in LONG_SENTENCES:  # whole sentences, none lost
        assert any(s in c.text for c in chunks), s
    # windows follow the abstract's order
    starts = [LONG_ABSTRACT.index(c.text) for c in chunks]
    assert starts == sorted(starts)


def test_windows_fit_with_a_long_title():
    title = "Towards a unified theory of " + " ".join(["scalable robust efficient interpretable"] * 18)
    assert count_tokens(title) > 100
    for n in (10, 34):
        paper = Paper(paper_id="t", title=title, abstract=" ".join(LONG_SENTENCES[:n]))
        chunks = Chunker().chunk(paper)
        assert [window_tokens(paper, c.text) for c in chunks if window_tokens(paper, c.text) > 256] == []
        for s in LONG_SENTENCES[:n]:
            assert any(s in c.text for c in chunks)


def test_seed_corpus_chunks_fit():
    chunker = Chunker()
    multi = 0
    for paper in read_papers(SEED_CORPUS):
        chunks = chunker.chunk(paper)
        multi += len(chunks) > 1
        for c in chunks:
            assert window_tokens(paper, c.text) <= MINILM_MAX_TOKENS
            assert c.text in paper.abstract
    assert multi >= 5  # the seed has long abstracts: windows are really exercised


def test_lexical_text_carries_title_authors_category():
    p = tiny_papers()[0]
    text = lexical_text(p, "chunk body")
    for part in ("Backdoors in federated learning", "Alice Zhang", "bob ray", "Social Aspects · Security",
                 "chunk body"):
        assert part in text


def test_content_hash_changes_with_content():
    p = tiny_papers()[2]
    chunks = Chunker().chunk(p)
    h0, h1 = content_hash(p, chunks[0]), content_hash(p, chunks[1])
    assert content_hash(p, chunks[0]) == h0
    q = p.model_copy(update={"venue": "NeurIPS"})
    assert content_hash(q, chunks[0]) != h0  # chunk 0 carries the whole paper record
    assert content_hash(q, chunks[1]) == h1
    r = p.model_copy(update={"category": "Other"})
    assert content_hash(r, chunks[1]) != h1  # filters' metadata rides on every chunk
    assert content_hash(p.model_copy(update={"doi": "10.1/x"}), chunks[0]) != h0


def test_content_hash_of_a_paper_without_doi_is_what_it_was_before_doi_existed():
    """Stores built before Paper had `doi` (or `authors_incomplete`) are not re-embedded on the
    next ingest."""
    import hashlib

    p = tiny_papers()[2]
    chunk = Chunker().chunk(p)[0]
    before = p.model_dump_json(exclude={"source", "doi", "authors_incomplete"})
    assert '"doi"' not in before and "authors_incomplete" not in before
    payload = json.dumps([before, chunk.text], ensure_ascii=False)
    assert content_hash(p, chunk) == hashlib.sha1(payload.encode("utf-8")).hexdigest()[:16]


# ----------------------------------------------------------------------------- upserts

def test_upsert_is_idempotent(store):
    papers = tiny_papers()
    expected_chunks = sum(len(store.chunker.chunk(p)) for p in papers)
    first = store.upsert_papers(papers)
    assert (first.papers_new, first.papers_updated, first.papers_unchanged) == (3, 0, 0)
    assert first.chunks_embedded == expected_chunks and first.chunks_removed == 0
    assert store.collection.count() == expected_chunks
    second = store.upsert_papers([p.model_copy() for p in papers])
    assert (second.papers_new, second.papers_updated, second.papers_unchanged) == (0, 0, 3)
    assert second.chunks_embedded == 0 and second.chunks_removed == 0
    assert store.collection.count() == expected_chunks
    assert sorted(store.papers()) == ["p-fl", "p-graph", "p-long"]


def test_ingesting_the_same_file_twice_changes_nothing(tmp_path):
    settings = small_settings(tmp_path / "store")
    path = write_jsonl(tmp_path / "papers.jsonl", [
        {"id": p.paper_id, "title": p.title, "authors": p.authors, "abstract": p.abstract,
         "category": p.category, "year": p.year} for p in tiny_papers()])
    store = Store(settings)
    [r1] = ingest_paths(store, [path])
    chunks = store.collection.count()
    assert r1.papers == 3 and r1.upsert.papers_new == 3 and r1.upsert.chunks_embedded == chunks
    [r2] = ingest_paths(Store(settings), [path])
    assert r2.papers == 3
    assert (r2.upsert.papers_new, r2.upsert.papers_updated, r2.upsert.papers_unchanged) == (0, 0, 3)
    assert r2.upsert.chunks_embedded == 0 and r2.upsert.chunks_removed == 0
    assert Store(settings).collection.count() == chunks
    assert len(Store(settings).papers()) == 3


def test_changed_abstract_replaces_its_chunks(store):
    papers = tiny_papers()
    store.upsert_papers(papers)
    long_chunks = len(store.chunker.chunk(papers[2]))
    assert long_chunks == 3
    assert len(chunk_rows(store, "p-long")) == long_chunks
    before = store.collection.count()
    assert store.bm25().scores("topic13").max() > 0

    shorter = papers[2].model_copy(update={"abstract": "A completely rewritten abstract about quokkalyte crystals."})
    report = store.upsert_papers([shorter])
    assert (report.papers_new, report.papers_updated, report.papers_unchanged) == (0, 1, 0)
    assert report.chunks_embedded == 1
    assert report.chunks_removed == long_chunks - 1
    assert store.collection.count() == before - long_chunks + 1

    rows = chunk_rows(store, "p-long")
    assert list(rows) == ["p-long::0"]  # no stale windows left behind
    assert rows["p-long::0"]["doc"] == shorter.abstract
    assert not any("topic13" in r["doc"] for r in chunk_rows(store).values())
    assert store.paper("p-long").abstract == shorter.abstract
    # BM25 follows: the old words are gone, the new one is found
    bm25 = store.bm25()
    assert bm25.scores("topic13").max() == 0
    assert len(bm25.chunk_ids) == store.collection.count()
    retriever = Retriever(store, store.settings)
    assert retriever.search("topic13", mode="bm25") == []
    hits = retriever.search("quokkalyte", mode="bm25")
    assert [h.paper.paper_id for h in hits] == ["p-long"]
    assert "quokkalyte" in hits[0].snippet

    # and it grows again: new windows added, none duplicated
    grown = papers[2].model_copy(update={"abstract": " ".join(sentences(20, "zebra"))})
    report = store.upsert_papers([grown])
    n = len(store.chunker.chunk(grown))
    assert report.papers_updated == 1 and report.chunks_embedded == n and report.chunks_removed == 0
    assert sorted(chunk_rows(store, "p-long")) == sorted(f"p-long::{i}" for i in range(n))
    assert store.collection.count() == before - long_chunks + n


def test_changed_metadata_updates_filters_and_all_chunks(store):
    papers = tiny_papers()
    store.upsert_papers(papers)
    moved = papers[2].model_copy(update={"category": "Optimization · Convex", "year": 2024})
    report = store.upsert_papers([moved])
    assert report.papers_updated == 1
    rows = chunk_rows(store, "p-long")
    assert {r["meta"]["category"] for r in rows.values()} == {"Optimization · Convex"}
    assert {r["meta"]["year"] for r in rows.values()} == {2024}
    assert store.paper("p-long").category == "Optimization · Convex"
    retriever = Retriever(store, store.settings)
    for mode in ("bm25", "dense", "hybrid"):
        assert [h.paper.paper_id for h in retriever.search(
            "topic3 finding", filters=Filters(categories=["Optimization"]), mode=mode)] == ["p-long"]
        assert retriever.search("topic3 finding", filters=Filters(categories=["Deep Learning"]),
                                mode=mode) == []


def test_dense_search_uses_cosine_similarity(store):
    papers = tiny_papers()
    store.upsert_papers(papers)
    p = papers[1]
    vec = np.asarray(store.embedder.get_text_embedding(embedding_text(p, p.abstract)), dtype=np.float32)
    results = store.dense_search(vec, 3)
    cid, pid, sim, text = results[0]
    assert (cid, pid, text) == ("p-graph::0", "p-graph", p.abstract)
    assert sim == pytest.approx(1.0, abs=1e-3)
    assert all(-1.0 <= r[2] <= 1.0 + 1e-3 for r in results)
    assert [r[2] for r in results] == sorted((r[2] for r in results), reverse=True)
    # restricted to the papers a filter allows: by category metadata, by author ids
    for only_fl in (Filters(categories=["Social Aspects"]), Filters(authors=["bob"])):
        assert {r[1] for r in store.dense_search(vec, 10, only_fl)} == {"p-fl"}
    assert store.dense_search(vec, 10, Filters(year_min=2030)) == []


# ----------------------------------------------------------------------------- BM25 cache

def test_bm25_cache_follows_updates_and_is_reloaded_by_a_new_store(tmp_path, monkeypatch):
    settings = small_settings(tmp_path / "store")
    writer = Store(settings)
    writer.upsert_papers(tiny_papers())
    writer.finish_ingest()
    tag = settings.store_dir / "cache" / "revision"
    assert tag.read_text().strip() == writer.revision() != ""
    assert (settings.store_dir / "cache" / PAPERS_FILE).exists()

    # a reader opened now loads the cache files; it must not rebuild from Chroma
    def no_rebuild(self, revision):
        raise AssertionError("cache rebuilt although the cache files were current")

    with monkeypatch.context() as m:
        m.setattr(Store, "_rebuild_cache", no_rebuild)
        reader = Store(settings)
        assert sorted(reader.papers()) == ["p-fl", "p-graph", "p-long"]
        assert reader.bm25().scores("malicious").max() > 0
        assert reader.bm25().scores("wombatronic").max() == 0
        assert reader._cache_revision == writer.revision()

    # the writer updates a paper (no finish_ingest: as if another process were still writing)
    old_revision = writer.revision()
    changed = tiny_papers()[1].model_copy(update={"abstract": "Wombatronic graph kernels for molecules."})
    writer.upsert_papers([changed])
    assert writer.revision() != old_revision
    # the reader that already had a cache notices the new revision and finds the new word
    assert reader.bm25().scores("wombatronic").max() > 0
    assert reader.bm25().scores("equivariant").max() == 0
    assert reader.paper("p-graph").abstract == changed.abstract
    # the writer's own reads are in sync too
    hits = Retriever(writer, settings).search("wombatronic", mode="bm25")
    assert [h.paper.paper_id for h in hits] == ["p-graph"]
    # the rebuilt cache is tagged with the new revision and reused by the next new Store
    assert tag.read_text().strip() == writer.revision()
    with monkeypatch.context() as m:
        m.setattr(Store, "_rebuild_cache", no_rebuild)
        assert Store(settings).bm25().scores("wombatronic").max() > 0


def test_stale_or_damaged_cache_is_rebuilt(tmp_path):
    settings = small_settings(tmp_path / "store")
    store = Store(settings)
    store.upsert_papers(tiny_papers())
    store.finish_ingest()
    tag = settings.store_dir / "cache" / "revision"
    tag.write_text("not-the-revision")
    assert Store(settings).bm25().scores("malicious").max() > 0
    assert tag.read_text().strip() == store.revision()
    (settings.store_dir / "cache" / PAPERS_FILE).write_text("{broken")
    assert len(Store(settings).papers()) == 3


def test_paper_table_reads_papers_on_demand_and_in_order(tmp_path):
    papers = tiny_papers()
    PaperTable.write(tmp_path / PAPERS_FILE, papers)
    table = PaperTable.open(tmp_path / PAPERS_FILE)
    assert list(table) == [p.paper_id for p in papers] and len(table) == 3
    assert [p.model_dump() for p in table.values()] == [p.model_dump() for p in papers]
    assert dict(table.items()) == {p.paper_id: p for p in papers}
    assert list(table.titles()) == [(p.paper_id, p.title) for p in papers]
    assert [f[0] for f in table.facets()] == [p.paper_id for p in papers]
    assert [(f[1], f[2], f[3]) for f in table.facets()] == [(p.year, p.category, p.authors) for p in papers]
    assert table["p-graph"] == papers[1] and table.get("nope") is None and "nope" not in table
    with pytest.raises(KeyError):
        table["nope"]
    assert len(PaperTable.empty()) == 0 and list(PaperTable.empty().facets()) == []


def test_a_cache_from_before_the_paper_table_is_converted_not_rebuilt(tmp_path, monkeypatch):
    settings = small_settings(tmp_path / "store")
    store = Store(settings)
    store.upsert_papers(tiny_papers())
    store.finish_ingest()
    cache = settings.store_dir / "cache"
    (cache / "papers.json").write_text(json.dumps([p.model_dump() for p in store.papers().values()]))
    (cache / PAPERS_FILE).unlink()

    def no_rebuild(self, revision):
        raise AssertionError("rebuilt from Chroma although papers.json was current")

    monkeypatch.setattr(Store, "_rebuild_cache", no_rebuild)
    assert sorted(Store(settings).papers()) == ["p-fl", "p-graph", "p-long"]
    assert (cache / PAPERS_FILE).exists() and not (cache / "papers.json").exists()


def test_a_reader_keeps_its_paper_table_while_a_writer_replaces_the_cache(tmp_path):
    settings = small_settings(tmp_path / "store")
    store = Store(settings)
    store.upsert_papers(tiny_papers())
    store.finish_ingest()
    held = Store(settings).papers()  # a request's table of the old revision
    changed = tiny_papers()[1].model_copy(update={"abstract": "Wombatronic graph kernels."})
    store.upsert_papers([changed])
    store.finish_ingest()
    assert store.paper("p-graph").abstract == changed.abstract
    assert held["p-long"].paper_id == "p-long"  # the old, unlinked file still reads


# ----------------------------------------------------------------------------- manifest

def test_other_embedding_model_raises_store_mismatch(tmp_path):
    settings = small_settings(tmp_path / "store")
    store = Store(settings)
    store.upsert_papers(tiny_papers()[:1])
    store.finish_ingest()
    with pytest.raises(StoreMismatch) as info:
        Store(make_settings(settings.store_dir, embed_backend="openai", embed_model="x"))
    msg = str(info.value)
    assert "onnx:all-MiniLM-L6-v2" in msg and "openai:x" in msg
    assert "paper-assistant ingest --rebuild" in msg
    assert str(settings.store_dir) in msg
    # an empty store is stamped on creation, so the check holds before any paper is written
    empty = make_settings(tmp_path / "empty")
    Store(empty)
    with pytest.raises(StoreMismatch, match="--rebuild"):
        Store(make_settings(empty.store_dir, embed_backend="openai", embed_model="x"))
    # the original model still opens it
    assert len(Store(settings).papers()) == 1


def test_newer_schema_raises_store_mismatch(tmp_path):
    settings = small_settings(tmp_path / "store")
    Store(settings)._set_meta(schema=SCHEMA_VERSION + 1)
    with pytest.raises(StoreMismatch, match="schema"):
        Store(settings)


def test_rebuild_recovers_a_mismatched_store(tmp_path):
    settings = small_settings(tmp_path / "store")
    old = Store(settings)
    old.upsert_papers(tiny_papers())
    old.finish_ingest()
    old._set_meta(embed_model="onnx:some-older-model")  # as if built by another model
    with pytest.raises(StoreMismatch):
        Store(settings)
    path = write_jsonl(tmp_path / "one.jsonl", [{"id": "n1", "title": "New", "abstract": "Fresh start."}])
    pa = PaperAssistant(settings)
    [report] = pa.ingest([path], rebuild=True)
    assert report.upsert.papers_new == 1
    assert pa.stats()["embed_model"] == "onnx:all-MiniLM-L6-v2"
    assert sorted(Store(settings).papers()) == ["n1"]


# ----------------------------------------------------------------------------- stats, facets

def test_stats_facets_and_manifest(tmp_path):
    settings = small_settings(tmp_path / "store")
    store = Store(settings)
    empty = store.stats()
    assert empty["papers"] == 0 and empty["chunks"] == 0
    assert store.facets() == {"categories": [], "authors": [], "author_count": 0,
                              "year_min": None, "year_max": None}

    papers = tiny_papers()
    store.upsert_papers(papers)
    store.finish_ingest()
    chunks = sum(len(store.chunker.chunk(p)) for p in papers)
    stats = Store(settings).stats()
    assert stats == {
        "papers": 3, "chunks": chunks, "embed_model": "onnx:all-MiniLM-L6-v2", "dim": 384,
        "schema": SCHEMA_VERSION, "store": str(settings.store_dir), "chroma": "embedded",
        "collection": "papers",
    }
    facets = store.facets()
    assert facets["categories"] == ["Applications · Chemistry", "Deep Learning · Theory",
                                    "Social Aspects · Security"]
    # one spelling per name (filters match case-insensitively), most prolific first
    assert [a.lower() for a in facets["authors"]] == ["alice zhang", "bob ray", "carol diaz", "dan evans"]
    assert facets["author_count"] == 4
    assert (facets["year_min"], facets["year_max"]) == (2019, 2023)

    manifest = json.loads((settings.store_dir / "manifest.json").read_text())
    assert manifest["papers"] == 3 and manifest["chunks"] == chunks
    assert manifest["embed_model"] == "onnx:all-MiniLM-L6-v2" and manifest["dim"] == 384
    assert manifest["revision"] == store.revision()
    assert manifest["chroma"] == "embedded"


def test_seed_store_stats_and_facets(seed_assistant):
    stats = seed_assistant.stats()
    seed = list(read_papers(SEED_CORPUS))
    chunker = Chunker()
    assert stats["papers"] == 20
    assert stats["chunks"] == sum(len(chunker.chunk(p)) for p in seed) > 20
    assert stats["embed_model"] == "onnx:all-MiniLM-L6-v2" and stats["dim"] == 384
    assert stats["chroma"] == "embedded"
    facets = seed_assistant.facets()
    assert "General Machine Learning · Causality" in facets["categories"]
    assert "Social Aspects · Security" in facets["categories"]
    assert len(facets["categories"]) == len({p.category for p in seed if p.category})
    names = {a.lower() for p in seed for a in p.authors}
    assert facets["author_count"] == len(names) > 50
    # the page gets a bounded list of names and searches the rest as the user types
    assert len(facets["authors"]) == 50 and {a.lower() for a in facets["authors"]} <= names
    assert seed_assistant.author_suggestions("natarajan") == ["Sriraam Natarajan"]
    assert "zhixuan ma" in seed_assistant.author_suggestions("ZHIXUAN")
    assert "Haichang Gao" in seed_assistant.author_suggestions("gao", limit=500)
    assert facets["year_min"] is None and facets["year_max"] is None  # the listing has no years


def test_delete_all_empties_the_store(store):
    store.upsert_papers(tiny_papers())
    store.finish_ingest()
    assert store.cache_dir.exists()
    store.delete_all()
    assert store.collection.count() == 0
    assert store.papers() == {}
    assert store.stats()["embed_model"] == "onnx:all-MiniLM-L6-v2"
    assert Retriever(store, store.settings).search("backdoor") == []
    report = store.upsert_papers(tiny_papers()[:1])
    assert report.papers_new == 1 and store.collection.count() == 1


# ----------------------------------------------------------------------------- Chroma server

def test_chroma_server_mode(chroma_server, tmp_path, monkeypatch):
    settings = small_settings(tmp_path / "local-a", chroma_url=chroma_server, collection="index-test")
    path = write_jsonl(tmp_path / "papers.jsonl", [
        {"id": p.paper_id, "title": p.title, "authors": p.authors, "abstract": p.abstract,
         "category": p.category, "year": p.year} for p in tiny_papers()])
    store = Store(settings)
    [report] = ingest_paths(store, [path])
    chunks = sum(len(store.chunker.chunk(p)) for p in tiny_papers())
    assert report.upsert.papers_new == 3 and report.upsert.chunks_embedded == chunks
    stats = store.stats()
    assert stats["chroma"] == "server" and stats["store"] == chroma_server
    assert stats["papers"] == 3 and stats["chunks"] == chunks and stats["dim"] == 384
    # nothing of Chroma's own is written locally in server mode
    assert not (settings.store_dir / "chroma.sqlite3").exists()

    hits = Retriever(store, settings).search("backdoor attacks in federated learning", k=2)
    assert hits[0].paper.paper_id == "p-fl"

    # a new Store with an empty local folder: everything comes from the server
    other = small_settings(tmp_path / "local-b", chroma_url=chroma_server, collection="index-test")
    again = Store(other)
    assert sorted(again.papers()) == ["p-fl", "p-graph", "p-long"]
    assert again.collection.count() == chunks
    for mode in ("hybrid", "bm25", "dense"):
        hits = Retriever(again, other).search("molecular graph neural networks chemistry", k=2, mode=mode)
        assert hits[0].paper.paper_id == "p-graph", mode
    # re-ingest through the server: idempotent
    [second] = ingest_paths(again, [path])
    assert second.upsert.papers_unchanged == 3 and second.upsert.chunks_embedded == 0
    assert again.collection.count() == chunks
    # updates made through one Store are seen by the other
    again.upsert_papers([tiny_papers()[1].model_copy(update={"abstract": "Wombatronic kernels."})])
    assert store.bm25().scores("wombatronic").max() > 0
    assert store.paper("p-graph").abstract == "Wombatronic kernels."
    # the server store has the same manifest check
    with pytest.raises(StoreMismatch, match="--rebuild"):
        Store(make_settings(tmp_path / "local-c", chroma_url=chroma_server, collection="index-test",
                            embed_backend="openai", embed_model="x"))


def test_open_store_follows_a_rebuild_by_another(tmp_path):
    settings = small_settings(tmp_path / "store")
    writer = Store(settings)
    writer.upsert_papers(tiny_papers()[:2])
    writer.finish_ingest()
    reader = Store(settings)  # e.g. the store of a running `paper-assistant serve`
    retriever = Retriever(reader, settings)
    assert retriever.search("backdoor attacks", k=1)[0].paper.paper_id == "p-fl"

    writer.delete_all()  # `paper-assistant ingest --rebuild` in another terminal
    writer.upsert_papers(tiny_papers()[1:])
    writer.finish_ingest()
    for mode in ("dense", "hybrid", "bm25"):
        hits = retriever.search("graph neural networks for molecules", k=5, mode=mode)
        assert hits[0].paper.paper_id == "p-graph", mode
        assert "p-fl" not in {h.paper.paper_id for h in hits}, mode
    stats = reader.stats()
    assert stats["papers"] == 2 and stats["chunks"] == writer.collection.count()


# ----------------------------------------------------------------------------- corpus statistics

def test_corpus_stats_kept_by_ingest_equal_a_build_from_all_papers(tmp_path):
    settings = small_settings(tmp_path / "store")
    first, second = tiny_papers()[:2], tiny_papers()[2:]
    # the second file also edits a paper of the first (new author, new words): its old
    # record must be uncounted
    edited = first[0].model_copy(update={"authors": ["Erin Fox"], "year": 2025,
                                         "abstract": "Wombatronic backdoors in federated learning."})
    files = [write_jsonl(tmp_path / "a.jsonl", [p.model_dump() for p in first]),
             write_jsonl(tmp_path / "b.jsonl", [p.model_dump() for p in [*second, edited]])]
    store = Store(settings)
    ingest_paths(store, files[:1])
    ingest_paths(store, files[1:])
    final = [edited, first[1], *second]
    expected = CorpusStats.build(final)
    saved = settings.store_dir / "cache" / STATS_FILE
    assert saved.exists()
    assert store.corpus_stats().same_counts(expected)
    loaded, extra = CorpusStats.load(saved)
    assert loaded.same_counts(expected) and extra["revision"] == store.revision()
    assert "bob ray" not in loaded.authors and "erin fox" in loaded.authors
    assert loaded.authors["alice zhang"] == {"p-long"}  # still an author of another paper
    assert loaded.years[2021] == 0 and loaded.years[2025] == 1
    assert loaded.known("wombatronic") and loaded.df[stem("malicious")] == 0


def test_reopened_store_loads_its_stats_without_reading_the_paper_table(tmp_path, monkeypatch):
    settings = small_settings(tmp_path / "store")
    writer = Store(settings)
    writer.upsert_papers(tiny_papers())
    writer.finish_ingest()

    def forbidden(*_args, **_kwargs):
        raise AssertionError("statistics rebuilt from the papers")

    with monkeypatch.context() as m:
        m.setattr(Store, "papers", forbidden)
        m.setattr(CorpusStats, "build", forbidden)
        reader = Store(settings)
        stats = reader.corpus_stats()
        assert stats.same_counts(writer.corpus_stats()) and stats.n_docs == 3
        assert reader.corpus_stats() is stats  # held in memory while the revision holds
        facets = reader.facets(authors=2)
        assert facets["author_count"] == 4 and len(facets["authors"]) == 2
        assert facets["authors"][0].lower() == "alice zhang"  # two papers: most prolific
        assert (facets["year_min"], facets["year_max"]) == (2019, 2023)


def test_store_without_saved_stats_builds_them_once_and_saves_them(tmp_path, monkeypatch):
    settings = small_settings(tmp_path / "store")
    writer = Store(settings)
    writer.upsert_papers(tiny_papers())
    writer.finish_ingest()
    saved = settings.store_dir / "cache" / STATS_FILE
    saved.unlink()  # as a store written before the statistics were saved
    assert Store(settings).corpus_stats().n_docs == 3
    assert CorpusStats.load(saved)[1]["revision"] == writer.revision()
    # stats of another revision are not used
    saved.write_text(saved.read_text().replace(writer.revision(), "some-other-revision"))
    assert Store(settings)._load_stats(writer.revision()) is None
    assert Store(settings).corpus_stats().n_docs == 3


def test_a_write_the_ingest_did_not_count_falls_back_to_a_build(tmp_path):
    settings = small_settings(tmp_path / "store")
    store = Store(settings)
    store.upsert_papers(tiny_papers()[:1])
    store._ingest_stats = CorpusStats()  # as if a batch had been written but not counted
    store.finish_ingest()
    assert not (settings.store_dir / "cache" / STATS_FILE).exists()
    assert store.corpus_stats().same_counts(CorpusStats.build(tiny_papers()[:1]))


def test_revision_is_read_once_per_search_and_per_plan(tmp_path, monkeypatch):
    pa = PaperAssistant(small_settings(tmp_path / "store"))
    pa.store.upsert_papers(tiny_papers())
    pa.store.finish_ingest()
    pa.search("warm up")  # loads the embedder
    calls = []
    original = Store.revision
    monkeypatch.setattr(Store, "revision", lambda self: calls.append(1) or original(self))
    hits = pa.search("backdoor attacks", filters=Filters(authors=["zhang"]))
    assert hits and len(calls) == 1
    calls.clear()
    pa.engine.planner.plan("Summarize the papers on federated learning.", [], None, None, None)
    assert len(calls) == 1
    # a write in this process during a request is still seen by the reads after it
    calls.clear()
    with pa.store.request():
        changed = tiny_papers()[1].model_copy(update={"abstract": "Wombatronic graph kernels."})
        pa.store.upsert_papers([changed])
        assert pa.store.paper("p-graph").abstract == changed.abstract


@pytest.fixture(scope="module")
def dated_seed_store(tmp_path_factory) -> Store:
    """The seed corpus (categories, no years) with years given, on a store of its own."""
    papers = [p.model_copy(update={"year": 2015 + i % 7})
              for i, p in enumerate(read_papers(SEED_CORPUS))]
    store = Store(small_settings(tmp_path_factory.mktemp("dated") / "store"))
    store.upsert_papers(papers)
    store.finish_ingest()
    return store


def seed_filters(store: Store) -> list[Filters]:
    """Filters of every kind: categories (exact, area, any case), years, authors, and their
    combinations, each passing a different share of the papers."""
    papers = list(store.papers().values())
    category = papers[0].category
    area = category.split(" ·")[0]
    surname = papers[1].authors[0].split()[-1].lower()
    return [Filters(categories=[category]), Filters(categories=[area.upper()]),
            Filters(categories=[category, "No Such Category"]), Filters(year_min=2018),
            Filters(year_max=2015), Filters(year_min=2016, year_max=2019),
            Filters(authors=[surname]), Filters(authors=[surname], year_min=2016),
            Filters(categories=[area], year_min=2016), Filters(categories=["No Such Category"])]


def test_a_filter_selects_what_paper_matches_selects(dated_seed_store):
    """FilterIndex (arrays) and paper_matches (one paper at a time) agree on every kind of
    filter; the BM25 mask marks exactly the chunks of the allowed papers."""
    store = dated_seed_store
    bm25 = store.bm25()
    for f in seed_filters(store):
        selection = store.filter_index().select(f)
        expected = {pid for pid, p in store.papers().items() if paper_matches(p, f)}
        assert set(selection.ids) == expected, f
        assert [pid for pid, m in zip(bm25.paper_ids, selection.chunk_mask) if m] == [
            pid for pid in bm25.paper_ids if pid in expected], f
        assert store.filter_index().select(f) is selection  # cached for the revision
    assert 0 < len(store.allowed_papers(Filters(year_min=2018))) < len(store.papers())


def test_filtered_dense_search_is_the_filtered_ranking_by_every_path(dated_seed_store,
                                                                     monkeypatch):
    """Whichever way a filter is applied (exact search over its chunks' vectors here, Chroma's
    unfiltered results filtered here, the chunk metadata `where`, `$in` slices of paper ids),
    the result is the ranking of all chunks by similarity, keeping the allowed papers' chunks."""
    import assistant.index.store as store_module

    store = dated_seed_store
    vector = np.asarray(store.embedder.get_query_embedding("federated learning"))
    ranking = store._dense_query(vector, store.collection.count(), None)
    for f in seed_filters(store):
        allowed = store.allowed_papers(f)
        expected = [h[0] for h in ranking if h[1] in allowed][:5]
        for local, share, in_limit in ((30_000, 0.1, 5000), (0, 0.0, 5000), (0, 1.1, 5000),
                                       (0, 1.1, 2)):
            monkeypatch.setattr(store_module, "LOCAL_CHUNKS", local)
            monkeypatch.setattr(store_module, "OVERFETCH_SHARE", share)
            monkeypatch.setattr(store_module, "IN_LIMIT", in_limit)
            got = store.dense_search(vector, 5, f)
            assert [h[0] for h in got] == expected, (f, local, share, in_limit)
            assert [(h[1], h[3]) for h in got] == [(h[1], h[3]) for h in ranking
                                                   if h[0] in expected]
            assert [h[2] for h in got] == pytest.approx(
                [h[2] for h in ranking if h[1] in allowed][:5], abs=1e-5)
