"""Ingest: all-or-nothing per file, --skip-bad, resuming an interrupted ingest, batched streaming."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.corpus import CorpusError
from assistant.index import Store
from assistant.ingest import ingest_file, ingest_paths, validate_file
from assistant.library import PaperAssistant
from assistant.types import Paper
from conftest import make_settings, write_jsonl

TOPICS = ["federated backdoor attacks", "graph neural networks for molecules",
          "protein folding with diffusion", "causal discovery from time series",
          "speech recognition for low-resource languages", "robot grasping from tactile sensing",
          "sparse attention for long documents", "privacy auditing of language models",
          "weather forecasting with transformers"]


def record(i: int, **extra) -> dict:
    topic = TOPICS[i % len(TOPICS)]
    return {"id": f"paper-{i}", "title": f"On {topic} (study {i})", "authors": [f"Author {i}", "Shared Person"],
            "abstract": f"We study {topic}. Our method number{i} improves results on standard benchmarks.",
            "category": "Area · Topic", "year": 2010 + i, **extra}


def records(n: int) -> list[dict]:
    return [record(i) for i in range(n)]


@pytest.fixture
def settings(tmp_path):
    return make_settings(tmp_path / "store")


@pytest.fixture
def store(settings) -> Store:
    return Store(settings)


def snapshot(store: Store) -> tuple:
    """What a reader can observe of the store."""
    res = store.collection.get(include=["documents", "metadatas"])
    rows = sorted(zip(res["ids"], res["documents"], [m.get("hash") for m in res["metadatas"]]))
    return store.revision(), store.collection.count(), sorted(store.papers()), rows


def broken_line3(tmp_path: Path, name: str = "bad.jsonl") -> Path:
    path = tmp_path / name
    lines = [json.dumps(record(1)), json.dumps(record(2)), '{"id": "paper-3", "abstract": "broken',
             json.dumps(record(4))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- all or nothing

def test_malformed_file_writes_nothing(tmp_path, store):
    ingest_paths(store, [write_jsonl(tmp_path / "first.jsonl", records(2))])  # something already there
    before = snapshot(store)
    assert before[2] == ["paper-0", "paper-1"]
    bad = broken_line3(tmp_path)

    with pytest.raises(CorpusError) as info:
        ingest_paths(store, [bad])
    assert f"{bad}:3:" in str(info.value)
    assert info.value.line == 3 and info.value.path == str(bad)
    assert "invalid JSON" in str(info.value)
    # exactly as it was: lines 1-2 (paper-1, paper-2) were NOT written, the revision is the same
    assert snapshot(store) == before
    assert snapshot(Store(store.settings)) == before
    assert "paper-2" not in Store(store.settings).papers()

    # the same through ingest_file and the library
    with pytest.raises(CorpusError, match=r"bad\.jsonl:3:"):
        ingest_file(store, bad)
    with pytest.raises(CorpusError, match=r"bad\.jsonl:3:"):
        PaperAssistant(store.settings).ingest([bad])
    assert snapshot(store) == before


def test_bad_second_file_keeps_the_first(tmp_path, store):
    good = write_jsonl(tmp_path / "good.jsonl", records(2))
    bad = broken_line3(tmp_path)
    with pytest.raises(CorpusError, match=r"bad\.jsonl:3:"):
        ingest_paths(store, [good, bad])
    # the good file went in, and the caches were finished despite the error
    assert sorted(Store(store.settings).papers()) == ["paper-0", "paper-1"]
    assert (store.settings.store_dir / "cache" / "revision").read_text().strip() == store.revision()


def test_missing_file(tmp_path, store):
    with pytest.raises(CorpusError, match="no such file"):
        ingest_paths(store, [tmp_path / "nope.jsonl"])
    assert store.collection.count() == 0


def test_skip_bad_writes_the_good_and_reports_the_bad(tmp_path, store):
    bad = broken_line3(tmp_path)
    [report] = ingest_paths(store, [bad], skip_bad=True)
    assert report.papers == 3
    assert [(e.path, e.line) for e in report.bad] == [(str(bad), 3)]
    assert "invalid JSON" in report.bad[0].reason
    assert report.upsert.papers_new == 3
    assert sorted(Store(store.settings).papers()) == ["paper-1", "paper-2", "paper-4"]
    # a record without an abstract is skipped too, with its line
    path = write_jsonl(tmp_path / "noabs.jsonl", [record(5), {"id": "x", "title": "No abstract"}, record(6)])
    report = validate_file(path, skip_bad=True)
    assert report.papers == 2 and [e.line for e in report.bad] == [2]
    with pytest.raises(CorpusError, match=r"noabs\.jsonl:2: .*abstract"):
        validate_file(path, skip_bad=False)


# ----------------------------------------------------------------------------- resuming

def test_interrupted_ingest_resumes_without_duplicates(tmp_path, store, monkeypatch):
    path = write_jsonl(tmp_path / "five.jsonl", records(5))
    real_upsert = Store.upsert_papers
    calls = []

    def dies_after_first_batch(self, papers):
        calls.append([p.paper_id for p in papers])
        if len(calls) > 1:
            raise KeyboardInterrupt("killed")  # like Ctrl-C in the middle of an ingest
        return real_upsert(self, papers)

    monkeypatch.setattr(Store, "upsert_papers", dies_after_first_batch)
    with pytest.raises(KeyboardInterrupt):
        ingest_file(store, path, batch_size=2)
    monkeypatch.setattr(Store, "upsert_papers", real_upsert)
    assert calls == [["paper-0", "paper-1"], ["paper-2", "paper-3"]]
    assert store.collection.count() == 2

    # a new process opens the store and ingests the same file again
    fresh = Store(store.settings)
    assert sorted(fresh.papers()) == ["paper-0", "paper-1"]
    report = ingest_file(fresh, path, batch_size=2)
    assert report.papers == 5
    assert report.upsert.papers_unchanged == 2 and report.upsert.papers_new == 3
    assert report.upsert.chunks_embedded == 3  # only what was missing
    assert report.upsert.chunks_removed == 0

    fresh.finish_ingest()
    res = fresh.collection.get(include=["metadatas"])
    assert sorted(res["ids"]) == [f"paper-{i}::0" for i in range(5)]  # each paper exactly once
    assert sorted(m["paper_id"] for m in res["metadatas"]) == [f"paper-{i}" for i in range(5)]
    assert sorted(Store(store.settings).papers()) == [f"paper-{i}" for i in range(5)]
    assert len(Store(store.settings).bm25().chunk_ids) == 5


def test_interruption_inside_a_write_leaves_caches_stale_not_wrong(tmp_path, store, monkeypatch):
    """Dying after the revision stamp but before Chroma is written: readers rebuild, not trust."""
    ingest_paths(store, [write_jsonl(tmp_path / "a.jsonl", records(2))])
    old_revision = store.revision()

    def dies(*args, **kwargs):
        raise KeyboardInterrupt("killed mid-write")

    monkeypatch.setattr(store.collection, "upsert", dies)
    with pytest.raises(KeyboardInterrupt):
        store.upsert_papers([Paper(paper_id="paper-9", title="t", abstract="A new abstract about wombats.")])
    assert store.revision() != old_revision
    reader = Store(store.settings)
    assert sorted(reader.papers()) == ["paper-0", "paper-1"]
    assert reader._cache_revision == store.revision()


# ----------------------------------------------------------------------------- streaming

def test_large_file_is_streamed_in_batches(tmp_path, store, monkeypatch):
    n = 9
    path = write_jsonl(tmp_path / "nine.jsonl", records(n))
    progress: list[tuple[int, int]] = []
    sizes: list[int] = []
    real_upsert = Store.upsert_papers

    def spy(self, papers):
        sizes.append(len(papers))
        return real_upsert(self, papers)

    monkeypatch.setattr(Store, "upsert_papers", spy)
    report = ingest_file(store, path, progress=lambda done, total: progress.append((done, total)),
                         batch_size=2)
    assert sizes == [2, 2, 2, 2, 1]
    assert progress == [(2, n), (4, n), (6, n), (8, n), (9, n)]
    assert report.papers == n and report.upsert.papers_new == n and report.upsert.chunks_embedded == n
    store.finish_ingest()
    assert len(store.papers()) == n


def test_progress_factory_of_ingest_paths(tmp_path, store):
    paths = [write_jsonl(tmp_path / "a.jsonl", records(3)),
             write_jsonl(tmp_path / "b.jsonl", [record(i) for i in range(3, 5)])]
    seen: dict[str, list] = {}

    from contextlib import contextmanager

    @contextmanager
    def factory(path):
        calls = seen.setdefault(Path(path).name, [])
        yield lambda done, total: calls.append((done, total))

    reports = ingest_paths(store, paths, progress_factory=factory)
    assert [r.papers for r in reports] == [3, 2]
    assert seen == {"a.jsonl": [(3, 3)], "b.jsonl": [(2, 2)]}
    assert len(Store(store.settings).papers()) == 5


def test_reingest_after_edit_updates_in_place(tmp_path, store):
    path = write_jsonl(tmp_path / "p.jsonl", records(3))
    ingest_paths(store, [path])
    edited = records(3)
    edited[1]["abstract"] = "Rewritten: we now study quokkas."
    write_jsonl(path, edited)
    [report] = ingest_paths(store, [path])
    assert (report.upsert.papers_new, report.upsert.papers_updated, report.upsert.papers_unchanged) == (0, 1, 2)
    assert report.upsert.chunks_embedded == 1
    assert Store(store.settings).paper("paper-1").abstract == "Rewritten: we now study quokkas."
    assert store.collection.count() == 3


def test_unchanged_papers_on_other_lines_are_not_reembedded(tmp_path, store):
    path = write_jsonl(tmp_path / "p.jsonl", records(4))
    ingest_paths(store, [path])
    write_jsonl(path, [record(10)] + records(4))  # a new paper at the top: the others move down
    [report] = ingest_paths(store, [path])
    assert (report.upsert.papers_new, report.upsert.papers_updated, report.upsert.papers_unchanged) == (1, 0, 4)
    assert report.upsert.chunks_embedded == 1
    # the same papers from another file are unchanged too
    [copy] = ingest_paths(store, [write_jsonl(tmp_path / "copy.jsonl", records(4))])
    assert copy.upsert.papers_unchanged == 4 and copy.upsert.chunks_embedded == 0
    assert store.collection.count() == 5
