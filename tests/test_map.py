"""The map of the collection (assistant/map.py), `paper-assistant map`, and the page's Map tab in
headless Chromium (hover, click → card, "More like this" from the card, cited papers ringed).

Screenshots go to the test's temporary folder unless PAPER_ASSISTANT_MAP_SCREENSHOT /
PAPER_ASSISTANT_TABLE_SCREENSHOT name a file (how docs/map.png and docs/table.png were made):
the suite leaves the git tree as it found it.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from assistant import layout
from assistant.answer.themes import target_groups
from assistant.cli import app
from assistant.map import (MAP_FORMAT, TSNE_MIN_PAPERS, CollectionMap, MapCluster, MapProgress, kmeans,
                           lay_out, layout_method, pca_2d)
from assistant.map_labels import OTHER, name_groups, paper_phrases
from assistant.types import Paper
from assistant.server import create_app
from conftest import seeded_assistant, write_jsonl
from servers import (BOT_MESSAGES, CHROMIUM, CHROMIUM_ARGS, GRADIO_WARNINGS, chat_on_page, open_page,
                     running_app, wait_for_reply)

pytestmark = [pytest.mark.filterwarnings(w) for w in GRADIO_WARNINGS]

ML_CONF = Path(__file__).resolve().parents[2] / "shared" / "data" / "ml_conf" / "papers.jsonl"

NEW_PAPERS = [
    {"id": "map-test-1", "title": "Tidal Forecasting with Graph Neural Operators",
     "authors": ["Grace Hopper"], "category": "Testing", "year": 2023,
     "abstract": "Graph neural operators forecast coastal tides from sparse gauge stations, "
                 "outperforming harmonic analysis on a decade of tide-gauge records."},
    {"id": "map-test-2", "title": "Coral Reef Acoustics for Biodiversity Monitoring",
     "authors": ["Ada Lovelace"], "category": "Testing", "year": 2024,
     "abstract": "Passive acoustic recordings of coral reefs estimate fish biodiversity; a "
                 "small convolutional model counts species calls in hydrophone audio."},
]


@pytest.fixture(scope="module")
def pa(seed_assistant):
    """The session's seed store (read-only: the map only adds its cache files)."""
    return seed_assistant


# ----------------------------------------------------------------------------- library

def test_map_has_every_paper_deterministic_layout_and_labelled_themes(pa):
    first = pa.collection_map()
    again = pa.collection_map(rebuild=True)  # from the vectors again, not from the cache
    papers = pa.store.papers()
    assert sorted(first.ids) == sorted(papers) and first.size == 20
    assert first.ids == again.ids
    assert np.allclose(first.xy, again.xy, atol=1e-5)
    assert first.cluster.tolist() == again.cluster.tolist()
    assert [c.label for c in first.clusters] == [c.label for c in again.clusters]
    assert ((first.xy >= 0) & (first.xy <= 1)).all()
    assert len(set(map(tuple, first.xy.round(4).tolist()))) == 20  # no two papers on one spot
    assert len(first.clusters) == target_groups(20, pa.settings.map_max_clusters)
    assert sum(c.size for c in first.clusters) == 20
    # themes are named by terms their papers use (at least most of them: a theme of unrelated
    # leftovers may be "Other papers")
    named = [c for c in first.clusters if c.terms]
    assert len(named) >= len(first.clusters) - 1
    for c in named:
        text = " ".join((papers[pid].title + " " + papers[pid].abstract).lower()
                        for pid, k in zip(first.ids, first.cluster.tolist()) if k == c.id)
        for term in c.terms:
            assert term in text, (c.label, term)


def test_map_is_cached_with_the_store_and_rebuilt_after_ingest(tmp_path, monkeypatch):
    from assistant import map as map_module

    pa = seeded_assistant(tmp_path / "store")  # its ingest built the map and cached it in the store
    cache = pa.store.cache_dir
    meta = json.loads((cache / "map.json").read_text())
    assert meta["revision"] == pa.store.revision() and meta["papers"] == 20
    # a new process loads it from the store's cache folder instead of building it
    from assistant import PaperAssistant

    fresh = PaperAssistant(pa.settings)
    built = []
    real_build = map_module.build_map
    monkeypatch.setattr(map_module, "build_map", lambda *a, **k: built.append(1) or real_build(*a, **k))
    loaded = fresh.collection_map()
    assert not built and loaded.size == 20 and loaded.revision == meta["revision"]
    # an ingest (a new revision) makes it stale: rebuilt with the new papers
    fresh.ingest([write_jsonl(tmp_path / "new.jsonl", NEW_PAPERS)])
    assert built, "the map was not rebuilt after ingest"
    after = fresh.collection_map()
    assert after.revision == fresh.store.revision() != meta["revision"]
    assert after.size == 22 and {"map-test-1", "map-test-2"} <= set(after.ids)
    assert json.loads((cache / "map.json").read_text())["revision"] == after.revision
    # and a process holding the old map in memory sees the new revision too
    assert pa.collection_map().size == 22


def test_the_page_gets_a_per_theme_sample_above_the_limit(pa):
    cmap = pa.collection_map()
    papers = pa.store.papers()
    whole = cmap.view(papers, max_points=100)
    assert len(whole.points) == 20 and not whole.sampled
    small = cmap.view(papers, max_points=6)
    assert small.sampled and len(small.points) <= 6 and small.total == 20
    assert {p.cluster for p in small.points} == set(range(len(cmap.clusters)))  # every theme
    assert [p.paper_id for p in small.points] == [p.paper_id for p in cmap.view(papers, 6).points]
    # a paper to highlight (cited by the latest answer) is drawn even when not sampled
    outside = next(pid for pid in cmap.ids if pid not in {p.paper_id for p in small.points})
    marked = cmap.view(papers, max_points=6, highlight=[outside, "no-such-paper"])
    assert marked.highlighted == [outside]
    assert [p.paper_id for p in marked.points if p.highlighted] == [outside]
    assert len(marked.points) == len(small.points) + 1
    # at scale: proportional per theme, and exactly bounded
    n = 30000
    rng = np.random.default_rng(1)
    cluster = np.repeat(np.arange(3), [20000, 9000, 1000]).astype(np.int16)
    big = CollectionMap("r", [f"p{i}" for i in range(n)], rng.random((n, 2)).astype(np.float32),
                        cluster, [MapCluster(i, f"t{i}", [], int((cluster == i).sum()), .5, .5)
                                  for i in range(3)])
    rows = big.sample(3000)
    assert len(rows) <= 3000 and len(set(rows.tolist())) == len(rows)
    assert np.bincount(cluster[rows], minlength=3).tolist() == [2000, 900, 100]


def test_pca_and_kmeans_recover_separated_groups():
    rng = np.random.default_rng(0)
    centres = np.eye(16)[:3] * 3
    x = np.concatenate([c + rng.normal(0, 0.3, (200, 16)) for c in centres])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    labels = kmeans(x, 3)
    assert kmeans(x, 3).tolist() == labels.tolist()  # seeded: same groups every time
    truth = np.repeat(np.arange(3), 200)
    for g in range(3):  # each found group is one true group
        assert len(set(truth[labels == g].tolist())) == 1
    xy, explained = pca_2d(x)
    assert xy.shape == (600, 2) and explained[0] >= explained[1] > 0.2
    # the groups stay apart on the map: each point is nearest its own group's centre
    centres_2d = np.stack([xy[truth == g].mean(axis=0) for g in range(3)])
    own = np.argmin(((xy[:, None, :] - centres_2d[None]) ** 2).sum(axis=2), axis=1)
    assert (own == truth).mean() > 0.95


@pytest.fixture(scope="module")
def real_titles():
    """MiniLM vectors (unit length) of the titles of 300 real ml_conf papers: a real sample of
    embeddings, cheap to make (titles are short; abstracts would take a minute)."""
    if not ML_CONF.exists():
        pytest.skip(f"shared evaluation data not present at {ML_CONF}")
    from assistant.embed import OnnxMiniLMEmbedding

    with ML_CONF.open(encoding="utf-8") as fh:
        titles = [json.loads(line)["title"] for line, _ in zip(fh, range(300))]
    vec = OnnxMiniLMEmbedding(threads=2).embed_texts(titles)
    return vec / np.linalg.norm(vec, axis=1, keepdims=True)


def test_tsne_layout_is_deterministic_and_keeps_neighbours_better_than_pca(real_titles, monkeypatch):
    from sklearn.manifold import trustworthiness

    assert layout_method(len(real_titles), "tsne") == "tsne"
    xy, explained = lay_out(real_titles, "tsne", threads=2)
    again, _ = lay_out(real_titles, "tsne", threads=1)  # the same map whatever the threads
    assert xy.shape == (300, 2) and explained == [] and np.isfinite(xy).all()
    assert np.array_equal(xy, again)
    flat, _ = lay_out(real_titles, "pca")
    tw_tsne = trustworthiness(real_titles, xy, n_neighbors=10, metric="cosine")
    tw_pca = trustworthiness(real_titles, flat, n_neighbors=10, metric="cosine")
    assert tw_tsne >= 0.85 and tw_tsne >= tw_pca + 0.05, (tw_tsne, tw_pca)
    # themes are regions of the map: most of a paper's nearest points on the map share its
    # theme, far more than for groups of the vectors alone; and they are deterministic
    groups = layout.connected_groups(real_titles, xy, 6)
    assert groups.tolist() == layout.connected_groups(real_titles, xy, 6).tolist()
    assert sorted(np.bincount(groups), reverse=True) == np.bincount(groups).tolist()
    assert len(set(groups.tolist())) == 6
    assert contiguity(groups, xy) >= 0.85 and contiguity(groups, xy) > contiguity(kmeans(real_titles, 6), xy)
    # a large collection: a sample is grouped, the rest take their map neighbours' theme
    monkeypatch.setattr(layout, "WARD_MAX_PAPERS", 120)
    sampled = layout.connected_groups(real_titles, xy, 6)
    assert len(sampled) == 300 and len(set(sampled.tolist())) == 6 and contiguity(sampled, xy) >= 0.85


def test_tiny_or_tsne_less_collections_fall_back_to_pca(pa, monkeypatch):
    # the seed corpus (20 papers) is laid out by PCA: too few neighbours for t-SNE
    assert pa.collection_map().method == "pca" and pa.settings.map_layout == "tsne"
    assert layout_method(TSNE_MIN_PAPERS - 1, "tsne") == "pca"
    assert layout_method(TSNE_MIN_PAPERS, "tsne") == "tsne"
    assert layout_method(5000, "pca") == "pca"
    monkeypatch.setattr(layout, "TSNE_AVAILABLE", False)  # openTSNE not installed
    assert layout_method(5000, "tsne") == "pca"
    # forced on 20 papers, t-SNE still works: perplexity capped below n/3
    assert layout.perplexity_for(20) < 20 / 3 and layout.perplexity_for(4831) == 30
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    xy = layout.tsne_2d(x, pca_2d(x)[0])
    assert xy.shape == (20, 2) and np.isfinite(xy).all()


def test_a_cached_map_of_another_format_revision_or_layout_is_not_used(pa, tmp_path):
    cmap = pa.collection_map()
    signature = {"method": "tsne", "max_clusters": 12}
    cmap.save(tmp_path, signature)
    assert CollectionMap.load(tmp_path, cmap.revision, signature).ids == cmap.ids
    assert CollectionMap.load(tmp_path, "another-revision", signature) is None
    assert CollectionMap.load(tmp_path, cmap.revision, {**signature, "method": "pca"}) is None
    meta = json.loads((tmp_path / "map.json").read_text())
    (tmp_path / "map.json").write_text(json.dumps({**meta, "format": MAP_FORMAT - 1}))
    assert CollectionMap.load(tmp_path, cmap.revision, signature) is None  # an older build's map


def test_the_map_is_built_in_the_background_and_the_tab_shows_its_progress(tmp_path, monkeypatch):
    import threading

    from assistant import map as map_module
    from assistant.ui.map_tab import MapTab

    pa = seeded_assistant(tmp_path / "store")
    release = threading.Event()
    real_build = map_module.build_map

    def slow_build(*args, progress=None, **kwargs):
        progress.papers, progress.method = 22, "tsne"
        progress.at("layout", 0.5)
        release.wait(30)
        return real_build(*args, progress=progress, **kwargs)

    monkeypatch.setattr(map_module, "build_map", slow_build)
    pa.ingest([write_jsonl(tmp_path / "new.jsonl", NEW_PAPERS)], background_map=True)
    build = pa.map_build
    assert build is not None and not build.done.is_set()
    assert pa.map_progress() is build  # the build under way, not a second one
    tab = MapTab(pa)
    tab.plot, tab.marks, tab.card, tab.sent = "plot", "marks", "card", "sent"
    steps = tab.open({"records": []}, None)
    first = next(steps)
    assert 'class="pa-map loading"' in first["plot"] and "<progress" in first["plot"]
    assert "Laying out 22 papers (t-SNE)" in first["plot"] and first["sent"] is None
    release.set()
    last = list(steps)[-1]
    assert 'data-map="' in last["plot"] and last["sent"] == pa.store.revision()
    assert build.done.is_set() and build.error is None and build.share == 1.0
    assert pa.map_progress() is None and pa.collection_map().size == 22


def test_map_progress_says_what_is_done():
    p = MapProgress()
    p.papers, p.method = 4831, "tsne"
    p.at("layout", 0.5)
    assert 0.4 < p.share < 0.6 and p.describe().startswith("Laying out 4,831 papers (t-SNE)… 4")
    p.finish("StoreError: gone")
    assert p.done.is_set() and "could not be built: StoreError: gone" in p.describe()


def _paper(i: int, title: str, abstract: str) -> Paper:
    return Paper(paper_id=f"p{i}", title=title, abstract=abstract, authors=["A B"])


def test_themes_are_named_by_the_phrases_that_set_them_apart():
    fl = [_paper(i, f"Federated learning with {w}",
                 f"We propose a novel method for federated learning under {w}. Clients train "
                 f"neural networks locally; the proposed method outperforms baselines.")
          for i, w in enumerate(["client drift", "backdoor attacks", "secure aggregation",
                                 "personalisation", "partial participation", "label skew"])]
    gnn = [_paper(10 + i, f"Graph neural networks for {w}",
                  f"We propose a novel method: graph neural networks applied to {w}. The neural "
                  f"networks use message passing and the proposed method outperforms baselines.")
           for i, w in enumerate(["molecules", "traffic", "citation graphs", "recommendation",
                                  "physics simulation", "program analysis"])]
    mixed = [_paper(20 + i, t, a) for i, (t, a) in enumerate([
        ("Tidal forecasting", "Coastal tides from gauge stations."),
        ("Coral reef acoustics", "Hydrophone recordings of reefs."),
        ("Medieval trade routes", "Ledgers of Hanseatic merchants.")])]
    names = name_groups([fl, gnn, mixed])
    assert names[0][1][0] == "federated learning" and names[0][0].startswith("Federated learning")
    assert names[1][1][0] in ("graph neural networks", "message passing")
    assert "graph neural networks" in names[1][1]
    assert names[2] == (OTHER, [])  # nothing recurs: no name made up
    for name, terms in names[:2]:  # shared by both themes or generic: never a name
        assert not {"neural networks", "proposed method", "novel method", "outperforms"} & set(terms)
    # phrases are words that stand together: not across punctuation, stop words or adverbs
    words = paper_phrases(_paper(0, "Sparse attention, typically fast", "Of the graph models."))
    assert {"sparse attention", "graph models", "graph"} <= words
    assert not {"attention typically", "typically", "attention fast", "models"} & words


def test_a_broad_theme_is_named_by_phrases_that_together_describe_its_papers():
    # a theme of three subjects: one phrase describes a third of it; the name covers all three,
    # and a phrase that restates a chosen one ("gans") adds no papers and is not picked
    broad = ([_paper(i, f"Variational inference for {w}", f"Variational inference in {w} models.")
              for i, w in enumerate(["topic", "mixture", "factor", "hidden"])]
             + [_paper(10 + i, f"Gaussian processes with {w}", f"Gaussian processes and {w}.")
                for i, w in enumerate(["inducing points", "deep kernels", "warping", "noise"])]
             + [_paper(20 + i, f"Monte Carlo sampling of {w}", f"Monte Carlo sampling for {w}.")
                for i, w in enumerate(["posteriors", "partition functions", "tails", "graphs"])])
    gan = [_paper(30 + i, f"Generative adversarial networks (GANs) for {w}",
                  f"Generative adversarial networks, or GANs, applied to {w}.")
           for i, w in enumerate(["faces", "audio", "text", "tables"])]
    other = [_paper(40 + i, f"Convex optimization of {w}", f"Convex optimization for {w}.")
             for i, w in enumerate(["markets", "circuits", "portfolios", "schedules"])]
    names = name_groups([broad, gan, other])
    assert set(names[0][1]) == {"variational inference", "gaussian processes", "monte carlo sampling"}
    assert names[1][1] == ["generative adversarial networks"]
    # words of any alphabet are words: "schrödinger" is not cut at its "ö"
    assert "schrödinger equation" in paper_phrases(_paper(0, "The Schrödinger equation", ""))


def test_cli_map_prints_themes_json_and_html(pa, tmp_path):
    runner = CliRunner()
    store = str(pa.settings.store_dir)
    res = runner.invoke(app, ["map", "--store", store])
    assert res.exit_code == 0, res.output
    cmap = pa.collection_map()
    assert "20 papers" in res.output and f"{len(cmap.clusters)} themes" in res.output
    for c in cmap.clusters:
        assert c.label in res.output
    res = runner.invoke(app, ["map", "--store", store, "--json", "--points",
                              "--out", str(tmp_path / "map.html")])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output.splitlines()[0])
    assert data["papers"] == 20 and len(data["points"]) == 20
    assert [c["label"] for c in data["clusters"]] == [c.label for c in cmap.clusters]
    assert {p["paper_id"] for p in data["points"]} == set(cmap.ids)
    html = (tmp_path / "map.html").read_text()
    assert 'id="pa-map"' in html and "data-map=" in html


def test_map_tab_handlers_send_the_points_once_and_the_marks_each_time(pa):
    import gradio as gr

    from assistant.types import Citation
    from assistant.ui.map_tab import MapTab

    tab = MapTab(pa)
    tab.plot, tab.marks, tab.card, tab.sent = "plot", "marks", "card", "sent"
    cmap = pa.collection_map()
    first = list(tab.open({"records": []}, None))[-1]
    assert 'data-map="' in first["plot"] and first["sent"] == cmap.revision
    cited = [Citation(number=1, paper_id=cmap.ids[3], title="t", authors=[]),
             Citation(number=2, paper_id=cmap.ids[7], title="t", authors=[])]
    again = list(tab.open({"records": [{"citations": cited}]}, first["sent"]))[-1]
    assert again["plot"] == gr.skip()  # this session already has this revision's points
    marks = json.loads(__import__("html").unescape(
        again["marks"].split('data-marks="')[1].split('"')[0]))
    assert [(m["n"], m["id"]) for m in marks] == [(1, cmap.ids[3]), (2, cmap.ids[7])]
    # above the page's limit the caption says the map is a sample
    from assistant.ui.map_tab import map_html

    caption = map_html(cmap.view(pa.store.papers(), 6), 6)
    assert "Showing 6 of 20 papers" in caption or "of 20 papers: a sample" in caption
    assert "Showing" not in first["plot"]
    card = tab.show_card(cmap.ids[3])["card"]
    assert "Ask about this" in card and f"More like this: id {cmap.ids[3]}" in card
    assert "Theme:" in card


def test_api_map_extension(pa):
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from assistant.api import create_router

    app_ = FastAPI()
    app_.include_router(create_router(pa, api_key="k"))
    client = TestClient(app_)
    assert client.get("/v1/map").status_code == 401
    r = client.get("/v1/map", headers={"Authorization": "Bearer k"})
    assert r.status_code == 200, r.text
    body = r.json()
    cmap = pa.collection_map()
    assert body["object"] == "map" and body["papers"] == 20 and "points" not in body
    assert [c["label"] for c in body["clusters"]] == [c.label for c in cmap.clusters]
    r = client.get("/v1/map?points=true", headers={"Authorization": "Bearer k"})
    pts = r.json()["points"]
    assert len(pts) == 20 and not r.json()["sampled"]
    assert {p["paper_id"] for p in pts} == set(cmap.ids) and all(p["title"] for p in pts)


# ----------------------------------------------------------------------------- browser

@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (`make browser`)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def server(pa):
    """The real app (API + page) over the seed store; these tests only read from it."""
    with running_app(create_app(pa)) as url:
        yield url + "/", pa


@pytest.fixture()
def page(browser, server):
    url, _ = server
    context = browser.new_context(viewport={"width": 1400, "height": 1050})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    open_page(pg, url)
    yield pg
    context.close()


def _ask(page, question: str) -> None:
    chat_on_page(page, question)
    page.wait_for_selector("#pa-sources .latest .src-card")


def _point(page, i: int) -> tuple[float, float]:
    box = page.locator("#pa-map canvas").bounding_box()
    x, y = page.evaluate(f"window.paMap.pts[{i}]")
    return box["x"] + x, box["y"] + y


@pytest.mark.browser
def test_page_map_tab_draws_hovers_clicks_and_rings_cited_papers(page, server, tmp_path):
    _, pa = server
    cmap = pa.collection_map()
    _ask(page, "Which paper studies backdoor attacks in federated learning?")
    cited = page.locator("#pa-sources .latest .src-card").first.get_attribute("data-paper-id")
    t0 = time.perf_counter()
    page.click("button[role='tab']:has-text('Map')")
    page.wait_for_selector("#pa-map canvas[data-drawn='20']")
    opened = time.perf_counter() - t0
    assert page.locator("#pa-map canvas").get_attribute("data-marks") == "1"
    assert "cited by the latest answer" in page.inner_text("#pa-map-marks")
    legend = page.inner_text("#pa-map .map-legend")
    for c in cmap.clusters:
        assert c.label in legend
    # hover: the tooltip names the paper under the pointer, with its authors
    data = json.loads(page.get_attribute("#pa-map", "data-map"))
    i = next(k for k, pid in enumerate(data["id"]) if pid != cited)
    x, y = _point(page, i)
    page.mouse.move(x, y)
    tip = page.locator("#pa-map .map-tip")
    tip.wait_for(state="visible")
    paper = pa.store.paper(data["id"][i])
    assert paper.title[:40] in tip.inner_text() and paper.authors[0] in tip.inner_text()
    # click: the paper's card, with its two buttons
    page.mouse.click(x, y)
    card = page.locator("#pa-map-card .map-card")
    card.wait_for()
    assert card.get_attribute("data-paper-id") == paper.paper_id
    assert card.locator("button.map-ask").count() == 1
    assert paper.authors[0] in card.inner_text()
    # the screenshot (card, tooltip, ringed citation): docs/map.png with
    # PAPER_ASSISTANT_MAP_SCREENSHOT, else a temporary file
    page.mouse.move(x + 1, y)
    tip.wait_for(state="visible")
    shot = Path(os.environ.get("PAPER_ASSISTANT_MAP_SCREENSHOT") or tmp_path / "map.png")
    page.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 10_000
    # "More like this" goes to the chat, which answers with the paper's neighbours
    n_before = page.locator(BOT_MESSAGES).count()
    card.locator("button.map-more").click()
    wait_for_reply(page, n_before)
    page.wait_for_selector("#pa-status:has-text('similar')")
    assert f"id {paper.paper_id}" in page.locator("#pa-chat [data-testid='user']").last.inner_text()
    assert page.locator("#pa-sources .latest .src-card").first.get_attribute("data-paper-id") == paper.paper_id
    # back on the map, the points are not sent again but the rings follow the latest answer
    page.click("button[role='tab']:has-text('Map')")
    page.wait_for_function("() => Number(document.querySelector('#pa-map canvas').getAttribute('data-marks')) >= 3")
    print(f"\nmap tab opened and drawn in {opened:.2f} s")


@pytest.mark.browser
def test_page_map_zooms_and_pans(page, server):
    """The wheel zooms around the pointer, a drag pans (and is not a click), "+" zooms, double
    click and "Reset" show the whole map again; hover and click follow the points."""
    page.click("button[role='tab']:has-text('Map')")
    page.wait_for_selector("#pa-map canvas[data-drawn='20']")
    data = json.loads(page.get_attribute("#pa-map", "data-map"))
    before = page.evaluate("window.paMap.pts.map(p => p.slice())")
    box = page.locator("#pa-map canvas").bounding_box()
    # zoom in around point 3: it stays under the pointer, the others move away from it
    x3, y3 = _point(page, 3)
    page.mouse.move(x3, y3)
    page.mouse.wheel(0, -600)
    page.wait_for_function("() => window.paMap.zoom.k > 2")
    k = page.evaluate("window.paMap.zoom.k")
    after = page.evaluate("window.paMap.pts.map(p => p.slice())")
    assert abs(after[3][0] - before[3][0]) < 1 and abs(after[3][1] - before[3][1]) < 1
    far = max(range(20), key=lambda i: abs(before[i][0] - before[3][0]))
    assert abs(after[far][0] - after[3][0]) == pytest.approx(abs(before[far][0] - before[3][0]) * k, rel=1e-3)
    # a point still on screen: hover names it, at its new place
    on = next(i for i in range(20) if i != 3 and 20 < after[i][0] < box["width"] - 20
              and 20 < after[i][1] < box["height"] - 20)
    page.mouse.move(*_point(page, on))
    tip = page.locator("#pa-map .map-tip")
    tip.wait_for(state="visible")
    assert pa_title(server, data["id"][on])[:30] in tip.inner_text()
    # drag: the map moves with the pointer, and no card is asked for
    start = page.evaluate("window.paMap.pts[3].slice()")
    sx, sy = box["x"] + 15, box["y"] + box["height"] / 2
    page.mouse.move(sx, sy)
    page.mouse.down()
    page.mouse.move(sx + 40, sy + 10, steps=4)
    page.mouse.move(sx + 80, sy + 30, steps=4)
    page.mouse.up()
    moved = page.evaluate("window.paMap.pts[3].slice()")
    assert moved[0] - start[0] == pytest.approx(80, abs=1) and moved[1] - start[1] == pytest.approx(30, abs=1)
    page.wait_for_timeout(300)
    assert page.locator("#pa-map-card .map-card").count() == 0
    # double click: the whole map again, as it was
    page.mouse.dblclick(sx, box["y"] + 12)
    page.wait_for_function("() => window.paMap.zoom.k === 1")
    assert page.evaluate("window.paMap.pts.map(p => p.slice())") == before
    # the buttons: "+" zooms around the middle, "Reset" undoes it
    page.click("#pa-map button[data-zoom='in']")
    page.wait_for_function("() => window.paMap.zoom.k > 1.5")
    assert page.get_attribute("#pa-map canvas", "data-zoom") == "1.60"
    page.click("#pa-map button[data-zoom='reset']")
    page.wait_for_function("() => window.paMap.zoom.k === 1")


def pa_title(server, paper_id: str) -> str:
    return server[1].store.paper(paper_id).title


@pytest.mark.browser
def test_page_map_card_ask_about_this_cites_that_paper(page, server):
    page.click("button[role='tab']:has-text('Map')")
    page.wait_for_selector("#pa-map canvas[data-drawn='20']")
    data = json.loads(page.get_attribute("#pa-map", "data-map"))
    x, y = _point(page, 4)
    page.mouse.click(x, y)
    card = page.locator("#pa-map-card .map-card")
    card.wait_for()
    chosen = card.get_attribute("data-paper-id")
    assert chosen == data["id"][4] or chosen in data["id"]  # the point under the pointer
    card.locator("button.map-ask").click()
    page.wait_for_selector("#pa-status:has-text('done in')")
    assert "What is the paper" in page.locator("#pa-chat [data-testid='user']").last.inner_text()
    assert page.locator("#pa-sources .latest .src-card").first.get_attribute("data-paper-id") == chosen


@pytest.mark.browser
def test_page_literature_table_screenshot(page, tmp_path):
    _ask(page, "Make a table of the papers on causal inference: method, data")
    table = page.locator(BOT_MESSAGES).last.locator("table")
    assert table.count() == 1 and "Method" in table.inner_text()
    # every column is readable: no column squeezed to a letter a line by a long title
    widths = table.locator("th").evaluate_all("ths => ths.map(th => th.getBoundingClientRect().width)")
    assert len(widths) == 3 and min(widths) >= 80, widths
    page.wait_for_timeout(400)
    page.evaluate("""() => {
        const users = document.querySelectorAll('#pa-chat [data-testid="user"]');
        users[users.length - 1].scrollIntoView({block: 'start'});
        window.scrollTo(0, 0);
    }""")
    page.wait_for_timeout(300)
    shot = Path(os.environ.get("PAPER_ASSISTANT_TABLE_SCREENSHOT") or tmp_path / "table.png")
    page.screenshot(path=str(shot), full_page=False)
    assert shot.stat().st_size > 10_000


def test_the_map_module_imports_first():
    """assistant.map imports answer.themes (the clustering the planner's overviews use too):
    imported first, as `ingest` does, nothing may import back into the map."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import assistant.map"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def contiguity(groups: np.ndarray, xy: np.ndarray, k: int = 10) -> float:
    """Share of each point's k nearest points on the map that are in its group."""
    d = ((xy[:, None] - xy[None]) ** 2).sum(axis=2)
    near = np.argsort(d, axis=1)[:, 1:k + 1]
    return float((groups[near] == groups[:, None]).mean())
