"""Hybrid retrieval on the seed store (shared, read-only) and filters on a tiny corpus with years."""
from __future__ import annotations

import pytest

from assistant.index import Store, paper_matches
from assistant.retrieve import Retriever
from assistant.types import Filters, Paper
from conftest import make_settings

MODES = ("hybrid", "bm25", "dense")
QUERIES = ["backdoor attacks in federated learning", "Sriraam Natarajan", "causal inference",
           "large language model agents", "zeroth-order optimization for spiking neural networks",
           "sycophantic behavior", "world models"]


@pytest.fixture(scope="module")
def retriever(seed_assistant) -> Retriever:
    return seed_assistant.retriever


def first_author(hit) -> str:
    return hit.paper.authors[0]


def normalise(text: str) -> str:
    return " ".join(text.split())


# ----------------------------------------------------------------------------- the seed store

def test_backdoor_query_finds_the_federated_backdoor_paper(retriever, seed_assistant):
    for mode in MODES:
        hits = retriever.search("backdoor attacks in federated learning", mode=mode)
        assert first_author(hits[0]) == "zhixuan ma", mode
    hits = seed_assistant.search("backdoor attacks in federated learning")
    assert first_author(hits[0]) == "zhixuan ma"
    assert hits[0].bm25_score > 0 and hits[0].dense_score > 0.3
    assert hits[0].score > hits[1].score


def test_author_name_finds_the_paper_through_bm25(retriever):
    hits = retriever.search("Sriraam Natarajan")
    assert "Sriraam Natarajan" in hits[0].paper.authors
    assert hits[0].bm25_score > 0
    # the name is only in the author list, never in an abstract: BM25 is what finds it
    assert "Natarajan" not in hits[0].paper.abstract
    assert "Sriraam Natarajan" in retriever.search("Sriraam Natarajan", mode="bm25")[0].paper.authors


def test_one_hit_per_paper_with_its_own_snippet(retriever):
    for query in QUERIES:
        for mode in MODES:
            hits = retriever.search(query, k=10, mode=mode)
            assert hits, (query, mode)
            ids = [h.paper.paper_id for h in hits]
            assert len(ids) == len(set(ids)), (query, mode)
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
            for h in hits:
                assert h.snippet and normalise(h.snippet) in normalise(h.paper.abstract), (query, mode)
                assert h.chunk_ids and all(c.startswith(h.paper.paper_id + "::") for c in h.chunk_ids)


def test_k_limits_results(retriever):
    assert len(retriever.search("learning", k=3)) == 3
    assert len(retriever.search("learning", k=1)) == 1
    assert len(retriever.search("neural networks and language models", k=50)) <= 20


def test_all_modes_return_results(retriever):
    for mode in MODES:
        hits = retriever.search("diffusion models for weather and climate data", k=5, mode=mode)
        assert 1 <= len(hits) <= 5, mode


def test_rrf_fusion_also_works(seed_settings, seed_assistant):
    settings = seed_settings.model_copy(update={"fusion": "rrf"})
    hits = Retriever(seed_assistant.store, settings).search("backdoor attacks in federated learning")
    assert first_author(hits[0]) == "zhixuan ma"
    hits = Retriever(seed_assistant.store, settings).search("Sriraam Natarajan")
    assert "Sriraam Natarajan" in hits[0].paper.authors


@pytest.mark.parametrize("category", ["General Machine Learning · Causality", "General Machine Learning",
                                      "general machine learning · causality"])
def test_category_filter_on_both_sides(retriever, category):
    filters = Filters(categories=[category])
    for mode in MODES:
        # a query whose best match (the backdoor paper) is outside the category
        hits = retriever.search("backdoor attacks in federated learning", k=10, filters=filters, mode=mode)
        assert hits, mode
        for h in hits:
            assert h.paper.category == "General Machine Learning · Causality", (mode, h.paper.category)
    hits = retriever.search("federated learning", k=10, filters=filters)
    assert "Rémi Khellaf" in [first_author(h) for h in hits]  # the federated causal-inference paper


def test_area_prefix_matches_every_category_of_the_area(retriever, seed_assistant):
    in_area = {pid for pid, p in seed_assistant.store.papers().items()
               if (p.category or "").startswith("Deep Learning ·")}
    assert len({seed_assistant.store.paper(p).category for p in in_area}) >= 2  # Theory and LLMs
    for mode in MODES:
        hits = retriever.search("neural network", k=20, filters=Filters(categories=["Deep Learning"]), mode=mode)
        assert hits and {h.paper.paper_id for h in hits} <= in_area, mode
    # a prefix that is not a whole area name is not a match
    assert retriever.search("neural network", filters=Filters(categories=["Deep Learn"])) == []


def test_several_categories_are_alternatives(retriever):
    filters = Filters(categories=["Social Aspects · Security", "Applications · Robotics"])
    hits = retriever.search("learning", k=20, filters=filters)
    assert {h.paper.category for h in hits} == {"Social Aspects · Security", "Applications · Robotics"}


def test_author_filter(retriever):
    for name in ("natarajan", "SRIRAAM", "Sriraam Natarajan"):
        for mode in MODES:
            hits = retriever.search("learning", k=10, filters=Filters(authors=[name]), mode=mode)
            assert len(hits) == 1, (name, mode)
            assert "Sriraam Natarajan" in hits[0].paper.authors
    hits = retriever.search("causal", k=20, filters=Filters(authors=["kostic"]))
    assert len(hits) == 2 and all(any("Kostic" in a for a in h.paper.authors) for h in hits)


def test_combined_filters(retriever):
    filters = Filters(categories=["General Machine Learning"], authors=["kostic"])
    hits = retriever.search("learning", k=20, filters=filters)
    assert len(hits) == 2
    assert all(h.paper.category == "General Machine Learning · Causality" for h in hits)


def test_filter_matching_nothing_gives_no_results(retriever):
    for mode in MODES:
        assert retriever.search("backdoor", filters=Filters(categories=["Astrophysics"]), mode=mode) == []
        assert retriever.search("backdoor", filters=Filters(authors=["Nobody Atall"]), mode=mode) == []
        # the seed listing has no years, so any year filter excludes everything
        assert retriever.search("backdoor", filters=Filters(year_min=2000), mode=mode) == []


def test_query_without_known_words(retriever):
    # nothing for BM25 (unknown tokens only): the dense side still answers in hybrid mode
    assert retriever.search("zzqxv wvvqzz", mode="bm25") == []
    assert len(retriever.search("zzqxv wvvqzz", k=3)) == 3


def test_paper_matches():
    p = Paper(paper_id="x", title="t", abstract="a", authors=["Ada Lovelace"],
              category="Deep Learning · Theory", year=2020)
    assert paper_matches(p, Filters())
    assert paper_matches(p, Filters(categories=["deep learning"]))
    assert not paper_matches(p, Filters(categories=["Deep"]))
    assert paper_matches(p, Filters(authors=["lovelace"]))
    assert paper_matches(p, Filters(year_min=2020, year_max=2020))
    assert not paper_matches(p, Filters(year_min=2021))
    assert not paper_matches(p, Filters(year_max=2019))
    arxiv = p.model_copy(update={"category": "cs.LG, stat.ML"})
    assert paper_matches(arxiv, Filters(categories=["stat.ML"]))
    assert not paper_matches(arxiv, Filters(categories=["math.ST"]))


# ----------------------------------------------------------------------------- years (tiny corpus)

@pytest.fixture(scope="module")
def year_store(tmp_path_factory) -> Store:
    store = Store(make_settings(tmp_path_factory.mktemp("year_store")))
    papers = [
        Paper(paper_id=f"y{year}", title=f"Graph learning study of {year}", authors=[f"Writer {year}"],
              abstract=f"We study graph neural networks for molecules, edition {year}.",
              category="Applications · Chemistry", year=year)
        for year in (2018, 2020, 2022, 2024)
    ] + [Paper(paper_id="ynone", title="Graph learning without a date", authors=["Undated Person"],
               abstract="We study graph neural networks for molecules, undated edition.")]
    store.upsert_papers(papers)
    store.finish_ingest()
    return store


@pytest.mark.parametrize("year_min,year_max,expected", [
    (2020, None, {"y2020", "y2022", "y2024"}),
    (None, 2020, {"y2018", "y2020"}),
    (2019, 2023, {"y2020", "y2022"}),
    (2022, 2022, {"y2022"}),
    (2025, None, set()),
    (2021, 2021, set()),
])
def test_year_filter(year_store, year_min, year_max, expected):
    retriever = Retriever(year_store, year_store.settings)
    filters = Filters(year_min=year_min, year_max=year_max)
    for mode in MODES:
        hits = retriever.search("graph neural networks for molecules", k=10, filters=filters, mode=mode)
        assert {h.paper.paper_id for h in hits} == expected, mode
        assert all(h.paper.year is not None for h in hits)
    # without a filter every paper is there, the undated one too
    all_hits = retriever.search("graph neural networks for molecules", k=10)
    assert {h.paper.paper_id for h in all_hits} == {"y2018", "y2020", "y2022", "y2024", "ynone"}


# ----------------------------------------------------------------------------- the paper side

def test_paper_side_blends_each_papers_whole_abstract_cosine(seed_assistant):
    # score with the paper side = (1-γ)·best chunk's fused score + γ·mean-chunk-vector cosine
    store, settings = seed_assistant.store, seed_assistant.settings
    gamma = 0.5
    on = Retriever(store, settings.model_copy(update={"paper_weight": gamma}))
    off = Retriever(store, settings.model_copy(update={"paper_weight": 0.0}))
    query = "keeping a poisoned update effective after the server averages the weights"
    before = {h.paper.paper_id: h.score for h in off.search(query, k=20)}
    after = {h.paper.paper_id: h.score for h in on.search(query, k=20)}
    cosines = store.paper_rows().cosines(on.embed_query(query), list(before))
    assert set(before) <= set(after) and cosines
    for pid, score in before.items():
        assert after[pid] == pytest.approx((1 - gamma) * score + gamma * cosines[pid], abs=1e-5)


def test_paper_side_pools_its_papers_with_their_chunks_scored(seed_assistant):
    # at γ = 1 the order is the whole-abstract cosine's alone, so each of its nearest papers
    # must have joined the pool (few chunks per side), scored and with a snippet
    settings = seed_assistant.settings.model_copy(update={"paper_weight": 1.0, "fusion_candidates": 3})
    retriever = Retriever(seed_assistant.store, settings)
    query = "models that flatter their users"
    hits = retriever.search(query, k=5, fusion_candidates=3)
    near = seed_assistant.store.paper_rows().search(retriever.embed_query(query), 5)
    assert [h.paper.paper_id for h in hits] == [pid for pid, _ in near]
    assert [h.score for h in hits] == pytest.approx([cos for _, cos in near], abs=1e-5)
    assert all(h.snippet and h.dense_score > 0 for h in hits)


def test_paper_rows_are_kept_per_revision(tmp_path, monkeypatch):
    settings = make_settings(tmp_path / "store")
    store = Store(settings)
    paper = lambda i, topic: Paper(paper_id=f"p{i}", title=f"A study of {topic}",  # noqa: E731
                                   authors=[f"Author {i}"], abstract=f"We study {topic} in depth.")
    store.upsert_papers([paper(1, "graph neural networks"), paper(2, "protein folding")])
    store.finish_ingest()  # builds the rows and keeps them in cache/
    assert (settings.store_dir / "cache" / "paper_vectors.npz").exists()
    again = Store(settings)
    monkeypatch.setattr(Store, "all_paper_vectors", lambda self: pytest.fail("rows not re-read"))
    rows = again.paper_rows()
    assert sorted(rows.ids) == ["p1", "p2"]
    near = rows.search(again.embedder.get_query_embedding("protein structure prediction"), 2)
    assert near[0][0] == "p2" and near[0][1] > near[1][1]
    assert [pid for pid, _ in rows.search(rows.matrix[0], 2, allowed=frozenset({"p2"}))] == ["p2"]
    monkeypatch.undo()
    again.upsert_papers([paper(3, "sea ice")])
    again.finish_ingest()  # a new revision: rebuilt with the new paper
    assert sorted(again.paper_rows().ids) == ["p1", "p2", "p3"]
    kept = settings.store_dir / "cache" / "paper_vectors.npz"
    kept.write_bytes(b"PK\x03\x04 torn")  # a damaged file is rebuilt from Chroma, not an error
    assert sorted(Store(settings).paper_rows().ids) == ["p1", "p2", "p3"]
    assert not list(kept.parent.glob("*.tmp.npz"))
