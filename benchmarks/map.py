"""The map of the collection and the literature table: the figures of issue 12.

    .venv/bin/python benchmarks/map.py projection [--corpus ml_conf arxiv_math mix] [--sizes 5000 10000]
    .venv/bin/python benchmarks/map.py screenshot [--corpus ml_conf] [--out docs/map-ml_conf.png]
    .venv/bin/python benchmarks/map.py sizes [--sizes 10000 50000 100000]
    .venv/bin/python benchmarks/map.py page [--sizes 10000 50000 100000]
    .venv/bin/python benchmarks/map.py table [--backends none local] [--topics T1 T2]

projection: on a corpus's real store (benchmarks/.stores/<corpus>, corpora.open_corpus; --stores
for another folder, e.g. a copy), the paper vectors the map uses, laid out as the product does
(assistant.map.lay_out: t-SNE with openTSNE, or PCA), with the layout's time (wall clock and
the process's CPU seconds: on a shared machine the wall clock depends on the other work, CPU
seconds much less) and how well each keeps neighbourhoods: scikit-learn's trustworthiness@10
(cosine on the 384-d paper vectors; on 2000 sampled papers, neighbours among the sample) and the
share of each paper's 10 nearest papers (cosine) among its 10 nearest on the map (1000 sampled
papers, neighbours among all). Corpus "mix" is ml_conf + arxiv_math + scifact (13,411 papers);
--sizes takes a seeded sample of a corpus's papers, or, beyond its size, SIMULATES more: its
vectors repeated with Gaussian noise (σ = 0.02 per dimension, then unit length).

screenshot: the map of a corpus's store as the page draws it (the standalone page `paper-assistant
map --out` writes, in headless Chromium), to a PNG.

sizes: building the map (read vectors, layout, themes, labels) and the page's part of it (the
sample the page gets, its HTML payload, and drawing it in headless Chromium with
static/map.js, then hovering a point). 10,000 = the real store of benchmarks/scale.py
(benchmarks/.stores/scale-10000, its vectors are MiniLM vectors of inputs cut to 48 word pieces).
Larger sizes are SIMULATED in memory: the 10,000 real paper vectors repeated with Gaussian noise
(σ = 0.02 per dimension, then unit length) and the papers copied under new ids; reading the
vectors from Chroma is not simulated (its time at 10,000 is measured, per paper it is linear
in the pages read). The drawing is timed on the standalone page `paper-assistant map --out`
writes (the Map tab's markup, style and script).

page: the same maps in the real page (the app under uvicorn, Gradio, headless Chromium): Map tab
click → points drawn, hover → tooltip, click → card, and opening the tab again.

table: "Make a table of the papers on <topic>: method, data, result" on the ml_conf store with
table_max = 8, streamed (`ask_stream`): time to the first table row (first cells) and to the
final answer (full table), per backend and topic (each topic asked once: a second asking of the
same topic hits the sentence-embedding cache), after warm_up() and one warm-up table. Run one
backend per process so neither profits from the other's caches.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from assistant import PaperAssistant, load_settings  # noqa: E402
from assistant.map import (CollectionMap, build_map, group, label_clusters, lay_out,  # noqa: E402
                           layout_method, make_clusters, neighbour_preservation,
                           unit_box)
from assistant.answer.themes import target_groups  # noqa: E402
from assistant.ui.map_tab import map_html, standalone_html  # noqa: E402

STORES = ROOT / "benchmarks" / ".stores"
CHROMIUM = "/usr/bin/chromium"


def table_print(header: list[str], rows: list[list]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(str(x).ljust(w) for x, w in zip(r, widths)))


# ---------------------------------------------------------------------- projection
MIX = ("ml_conf", "arxiv_math", "scifact")


def corpus_vectors(corpus: str, stores: Path) -> np.ndarray:
    """The paper vectors of a corpus's store (or of the three of "mix", stacked)."""
    from corpora import open_corpus

    names = MIX if corpus == "mix" else (corpus,)
    return np.concatenate([open_corpus(c, stores=stores).store.all_paper_vectors()[1]
                           for c in names])


def sized(vec: np.ndarray, n: int, seed: int = 0) -> tuple[np.ndarray, bool]:
    """n of the vectors: a seeded sample, or beyond their number the vectors repeated with
    noise (simulated, True)."""
    if n <= len(vec):
        return vec[np.sort(np.random.default_rng(seed).choice(len(vec), n, replace=False))], False
    rng = np.random.default_rng(seed)
    parts = [vec]
    while sum(map(len, parts)) < n:
        noisy = vec + rng.normal(0, 0.02, vec.shape).astype(np.float32)
        parts.append(noisy / np.linalg.norm(noisy, axis=1, keepdims=True))
    return np.concatenate(parts)[:n], True


def measure_layout(vec: np.ndarray, method: str, threads: int) -> dict:
    from sklearn.manifold import trustworthiness

    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    xy, _ = lay_out(vec, layout_method(len(vec), method), threads=threads)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rows = np.random.default_rng(0).choice(len(vec), size=min(2000, len(vec)), replace=False)
    return {"wall": wall, "cpu": cpu, "load": load,
            "tw": trustworthiness(vec[rows], xy[rows], n_neighbors=10, metric="cosine"),
            "kept": neighbour_preservation(vec, xy, k=10)}


def projection(corpora: list[str], methods: list[str], sizes: list[int], stores: Path,
               threads: int) -> None:
    rows = []
    for corpus in corpora:
        vec = corpus_vectors(corpus, stores)
        for n in sizes or [len(vec)]:
            v, simulated = sized(vec, n)
            for method in methods:
                m = measure_layout(v, method, threads)
                rows.append([corpus, f"{len(v):,}" + (" (sim.)" if simulated else ""), method,
                             f"{m['wall']:.1f} s", f"{m['cpu']:.1f} s", f"{m['load']:.1f}",
                             f"{m['kept']:.3f}", f"{m['tw']:.3f}"])
                print("  ".join(rows[-1]), flush=True)
    print(f"threads: {threads}; times taken beside other work (load average at the start)")
    table_print(["corpus", "papers", "layout", "wall", "CPU", "load", "10-NN kept",
                 "trustworthiness@10"], rows)


def screenshot(corpus: str, stores: Path, out: Path) -> None:
    """The corpus's map as the page draws it, to `out`."""
    from playwright.sync_api import sync_playwright

    from corpora import open_corpus

    pa = open_corpus(corpus, stores=stores)
    cmap = pa.collection_map()
    view = cmap.view(pa.store.papers(), pa.settings.map_max_points)
    path = Path(tempfile.mkdtemp()) / "map.html"
    path.write_text(standalone_html(view, pa.settings.map_max_points), encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1250, "height": 1000})
        page.goto(path.as_uri())
        page.wait_for_selector("canvas[data-drawn]")
        page.screenshot(path=str(out), full_page=True)
        browser.close()
    print(f"{corpus}: {cmap.size:,} papers, layout {cmap.method}, {len(cmap.clusters)} themes → {out}")


# ---------------------------------------------------------------------- sizes
def simulated(base_ids, base_vec, papers, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    reps = -(-n // len(base_ids))
    ids, vecs, out_papers = [], [], {}
    for r in range(reps):
        take = min(len(base_ids), n - len(ids))
        v = base_vec[:take] if r == 0 else base_vec[:take] + rng.normal(0, 0.02, (take, base_vec.shape[1])).astype(np.float32)
        vecs.append(v / np.linalg.norm(v, axis=1, keepdims=True))
        for pid in base_ids[:take]:
            new = pid if r == 0 else f"{pid}~{r}"
            ids.append(new)
            out_papers[new] = papers[pid] if r == 0 else papers[pid].model_copy(update={"paper_id": new})
    return ids, np.concatenate(vecs), out_papers


def build_in_memory(ids, vec, papers, stats, max_clusters: int = 12, method: str = "tsne"):
    """build_map's steps on vectors in memory (`stats` unused, kept for the callers)."""
    t0 = time.perf_counter()
    used = layout_method(len(ids), method)
    raw, explained = lay_out(vec, used)
    xy = unit_box(raw)
    t1 = time.perf_counter()
    cluster = group(vec, xy, used, target_groups(len(ids), max_clusters))
    t2 = time.perf_counter()
    labels = label_clusters(cluster, ids, papers)
    t3 = time.perf_counter()
    return CollectionMap("sim", ids, xy, cluster, make_clusters(xy, cluster, labels), used,
                         explained, t3 - t0, {"layout": t1 - t0, "cluster": t2 - t1, "label": t3 - t2})


def draw_in_chromium(html: str, browser) -> dict:
    path = Path(tempfile.mkdtemp()) / "map.html"
    path.write_text(html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    t0 = time.perf_counter()
    page.goto(path.as_uri())
    page.wait_for_selector("canvas[data-drawn]")
    loaded = time.perf_counter() - t0
    draw_ms = page.evaluate("window.paMap.drawMs")
    box = page.locator("canvas").bounding_box()
    hovers = []
    for i in (5, 50, 500):
        pt = page.evaluate(f"window.paMap.pts[{i}] || window.paMap.pts[0]")
        t = time.perf_counter()
        page.mouse.move(box["x"] + pt[0], box["y"] + pt[1])
        page.wait_for_function("() => { const t = document.querySelector('#pa-map .map-tip'); return t && !t.hidden; }")
        hovers.append(time.perf_counter() - t)
        page.mouse.move(box["x"] + 1, box["y"] + 1)
        page.wait_for_timeout(50)
    page.close()
    return {"load_s": loaded, "draw_ms": draw_ms, "hover_ms": 1000 * statistics.median(hovers)}


def sizes(sizes: list[int], max_points: int, unsampled: bool) -> None:
    from playwright.sync_api import sync_playwright

    store = STORES / "scale-10000"
    if not store.exists():
        raise SystemExit(f"{store} is missing: build it with benchmarks/scale.py --papers 10000")
    pa = PaperAssistant(load_settings(store_dir=store, llm_backend="none"))
    t0 = time.perf_counter()
    real = build_map(pa.store, pa.settings.map_max_clusters)
    total_real = time.perf_counter() - t0
    print(f"real store, {real.size:,} papers: built in {total_real:.1f} s ({json.dumps(real.timings)})")
    papers = pa.store.papers()
    stats = pa.store.corpus_stats()
    base_ids, base_vec = pa.store.all_paper_vectors()
    read_per_paper = real.timings["read_vectors"] / real.size
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        for n in sizes:
            ids, vec, ps = simulated(base_ids, base_vec, papers, n)
            cmap = build_in_memory(ids, vec, ps, stats, pa.settings.map_max_clusters)
            cases = [(max_points, "sampled")] + ([(0, "all points")] if unsampled and n > max_points else [])
            for limit, what in cases:
                t = time.perf_counter()
                view = cmap.view(ps, limit)
                html = map_html(view, limit)
                server_s = time.perf_counter() - t
                drawn = draw_in_chromium(standalone_html(view, limit), browser)
                read = real.timings["read_vectors"] if n == real.size else read_per_paper * n
                rows.append([f"{n:,}" + ("" if n == real.size else " (sim.)"), what,
                             f"{read:.1f} s" + ("" if n == real.size else " (est.)"),
                             f"{cmap.timings['layout']:.2f} s", f"{cmap.timings['cluster']:.2f} s",
                             f"{cmap.timings['label']:.2f} s", f"{len(view.points):,}",
                             f"{len(html) / 1e6:.2f} MB", f"{server_s:.2f} s",
                             f"{drawn['load_s']:.2f} s", f"{drawn['draw_ms']:.0f} ms",
                             f"{drawn['hover_ms']:.0f} ms"])
        browser.close()
    table_print(["papers", "page gets", "read vectors", "layout", "themes", "labels", "points",
                 "payload", "payload built", "page load+draw", "draw", "hover→tooltip"], rows)


def page(sizes: list[int]) -> None:
    """The real page (assistant.server.create_app under uvicorn, Gradio): click the Map tab,
    time until the points are drawn; then hover and click a point, time until the tooltip and
    the card. The store is the real 10,000-paper one; larger maps are the simulated ones of
    `sizes`, handed to the page in place of the store's own (pa.collection_map, papers)."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "tests"))
    from servers import CHROMIUM_ARGS, running_app

    from assistant.server import create_app

    pa = PaperAssistant(load_settings(store_dir=STORES / "scale-10000", llm_backend="none"))
    papers = pa.store.papers()
    stats = pa.store.corpus_stats()
    base_ids, base_vec = pa.store.all_paper_vectors()
    current: dict = {}
    pa.collection_map = lambda rebuild=False: current["map"]
    real_papers = pa.store.papers
    pa.store.papers = lambda: current.get("papers") or real_papers()
    rows = []
    with running_app(create_app(pa)) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for n in sizes:
            ids, vec, ps = simulated(base_ids, base_vec, papers, n)
            cmap = build_in_memory(ids, vec, ps, stats, pa.settings.map_max_clusters)
            cmap.revision = f"sim-{n}"
            current.update(map=cmap, papers=ps)
            pg = browser.new_page(viewport={"width": 1400, "height": 1050})
            pg.set_default_timeout(120_000)
            pg.goto(url + "/")
            pg.wait_for_selector("#pa-input textarea")
            t0 = time.perf_counter()
            pg.click("button[role='tab']:has-text('Map')")
            pg.wait_for_selector("#pa-map canvas[data-drawn]")
            opened = time.perf_counter() - t0
            drawn = int(pg.get_attribute("#pa-map canvas", "data-drawn"))
            box = pg.locator("#pa-map canvas").bounding_box()
            x, y = pg.evaluate("window.paMap.pts[7]")
            t = time.perf_counter()
            pg.mouse.move(box["x"] + x, box["y"] + y)
            pg.wait_for_function("() => !document.querySelector('#pa-map .map-tip').hidden")
            hover = time.perf_counter() - t
            t = time.perf_counter()
            pg.mouse.click(box["x"] + x, box["y"] + y)
            pg.wait_for_selector("#pa-map-card .map-card")
            card = time.perf_counter() - t
            # the tab again: the points are not sent twice (same revision, same session)
            pg.click("button[role='tab']:has-text('Chat')")
            t = time.perf_counter()
            pg.click("button[role='tab']:has-text('Map')")
            pg.wait_for_timeout(50)
            pg.wait_for_selector("#pa-map canvas[data-drawn]")
            reopen = time.perf_counter() - t
            pg.close()
            rows.append([f"{n:,}" + ("" if n == len(base_ids) else " (sim.)"), f"{drawn:,}",
                         f"{opened:.2f} s", f"{hover * 1000:.0f} ms", f"{card:.2f} s", f"{reopen:.2f} s"])
        browser.close()
    table_print(["papers", "points drawn", "tab click → drawn", "hover → tooltip", "click → card",
                 "tab again"], rows)


# ---------------------------------------------------------------------- table
def table_latency(backends: list[str], topics: list[str]) -> None:
    from corpora import open_corpus

    import os

    rows = []
    for backend in backends:
        pa = open_corpus("ml_conf", backend=backend, table_max=8)
        pa.warm_up()  # the embedding session and the model loaded, as a server does at start
        pa.ask("Make a table of the papers on graph neural networks: method, data")  # warm-up
        for run, topic in enumerate(topics):
            question = f"Make a table of the papers on {topic}: method, data, result"
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            first = None
            final = None
            for kind, payload in pa.ask_stream(question, mode="table"):
                if kind == "token" and first is None and "|" in str(payload):
                    first = time.perf_counter() - t0
                elif kind == "final":
                    final = payload
            total = time.perf_counter() - t0
            n_rows = len(final.table.rows) if final is not None and final.table else 0
            rows.append([backend, topic, n_rows, f"{first:.2f} s" if first else "—", f"{total:.2f} s",
                         final.backend if final else "?", f"{load:.1f}"])
    print("question: 'Make a table of the papers on <topic>: method, data, result' (ml_conf, "
          "table_max = 8; each topic asked once, after a warm-up table on another topic)")
    table_print(["backend", "topic", "rows", "first cells", "full table", "answered by",
                 "load avg"], rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("projection")
    p.add_argument("--corpus", nargs="+", default=["ml_conf", "arxiv_math"],
                   help="corpora (mix = ml_conf + arxiv_math + scifact)")
    p.add_argument("--projection", nargs="+", default=["pca", "tsne"], choices=["pca", "tsne"],
                   dest="methods", help="layouts to compare")
    p.add_argument("--sizes", type=int, nargs="*", default=[],
                   help="papers: a sample, or beyond the corpus simulated (default: all of it)")
    p.add_argument("--stores", type=Path, default=STORES, help="folder of the corpora's stores")
    p.add_argument("--threads", type=int, default=2)
    sc = sub.add_parser("screenshot")
    sc.add_argument("--corpus", default="ml_conf")
    sc.add_argument("--stores", type=Path, default=STORES)
    sc.add_argument("--out", type=Path, default=ROOT / "docs" / "map-ml_conf.png")
    s = sub.add_parser("sizes")
    s.add_argument("--sizes", type=int, nargs="+", default=[10000, 50000, 100000])
    s.add_argument("--max-points", type=int, default=5000)
    s.add_argument("--unsampled", action="store_true", help="also draw every point (no sample)")
    g = sub.add_parser("page")
    g.add_argument("--sizes", type=int, nargs="+", default=[10000, 50000, 100000])
    t = sub.add_parser("table")
    t.add_argument("--backends", nargs="+", default=["none", "local"])
    t.add_argument("--topics", nargs="+", default=["reinforcement learning",
                                                     "generative adversarial networks"])
    a = ap.parse_args()
    if a.what == "projection":
        projection(a.corpus, a.methods, a.sizes, a.stores, a.threads)
    elif a.what == "screenshot":
        screenshot(a.corpus, a.stores, a.out)
    elif a.what == "sizes":
        sizes(a.sizes, a.max_points, a.unsampled)
    elif a.what == "page":
        page(a.sizes)
    else:
        table_latency(a.backends, a.topics)


if __name__ == "__main__":
    main()
