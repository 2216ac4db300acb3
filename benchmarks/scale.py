"""Search and planning at scale: latency percentiles, corpus statistics, store size.

    .venv/bin/python benchmarks/scale.py [--papers 10000] [--queries 40] [--simulate 100000]

The store (benchmarks/.stores/scale-<N>) is built once, by our own ingest, from the real
abstracts in ../shared/data: SciFact, then arXiv math, then the ML conference papers, in that
order, until N papers (ids prefixed by corpus so they never collide). It is reused while it has N
papers. To make building affordable on a shared 2-core machine, `--embed-tokens 48` (default)
truncates what the embedding model reads *while building* to 48 word pieces (title and the
start of each window) instead of 256: the store, chunks, BM25 and statistics are exactly what
ingest makes, the vectors are real MiniLM vectors of shorter inputs (search latency does not
depend on how a vector was made; dense relevance is somewhat worse). `--embed-tokens 256` builds
it faithfully. Queries and planning always use the normal tokenizer. Then, on that store:

- search p50/p95 (`PaperAssistant.search`, hybrid, k=10), queries = titles of a seeded sample of
  the store's papers, without a filter and with each kind of filter (category, year range,
  author substring);
- planning p50/p95 without the LLM (`pa.engine.planner.plan(question, [], None, None, None)`,
  backend "none"), questions "Which paper studies <title>?" and "Summarize the papers on
  <title words>.";
- the corpus statistics a fresh process needs: loading the saved ones vs building them from
  every paper (what each new store revision cost per reader before they were saved);
- the store's size on disk (Chroma, and the cache folder: BM25, paper table, statistics).

`--chroma-url URL`: the same measurements with Chroma as a server (the distributed path), the
store's vectors read over HTTP; the store folder keeps only the caches (BM25, paper table,
statistics, sentence vectors). Serve the store's own folder:
`chroma run --path benchmarks/.stores/scale-100000-derived --port 8123`, then
`scale.py --papers 10000 --derive 100000 --chroma-url http://127.0.0.1:8123 --search-only`.

`--simulate N` (cheap, in memory, no Chroma): the in-memory parts that grow with the corpus
(BM25 scores, a filter's mask over chunks, building vs loading the statistics) measured on the
real papers repeated until N (copies get new ids; their text is the same, so vocabulary does
not grow as a real corpus's would). The dense side (Chroma HNSW) is not simulated.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assistant import PaperAssistant, load_settings  # noqa: E402
from assistant.corpus import read_papers  # noqa: E402
from assistant.types import Filters, Paper  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
SOURCES = [("scifact", DATA / "scifact" / "corpus.jsonl"),
           ("arxiv", DATA / "arxiv_math" / "papers.jsonl"),
           ("mlconf", DATA / "ml_conf" / "papers.jsonl")]
STORES = ROOT / "benchmarks" / ".stores"


def real_papers(n: int) -> list[Paper]:
    out: list[Paper] = []
    for prefix, path in SOURCES:
        if not path.exists():
            continue
        for p in read_papers(path, skip_bad=True, errors=[]):
            out.append(p.model_copy(update={"paper_id": f"{prefix}-{p.paper_id}"}))
            if len(out) >= n:
                return out
    return out


def open_store(n: int, store: Path, embed_tokens: int = 256) -> tuple[PaperAssistant, float | None]:
    pa = PaperAssistant(load_settings(store_dir=store, llm_backend="none"))
    if pa.store.collection.count() and pa.stats()["papers"] == n:
        return pa, None
    papers = real_papers(n)
    if len(papers) < n:
        raise SystemExit(f"only {len(papers)} papers in {DATA}")
    src = Path(tempfile.mkdtemp()) / f"scale-{n}.jsonl"
    src.write_text("".join(p.model_dump_json() + "\n" for p in papers), encoding="utf-8")
    from assistant.embed import MINILM_MAX_TOKENS, minilm_tokenizer

    minilm_tokenizer().enable_truncation(min(embed_tokens, MINILM_MAX_TOKENS))
    try:
        t0 = time.perf_counter()
        pa.ingest([src], rebuild=True)
        seconds = time.perf_counter() - t0
    finally:
        minilm_tokenizer().enable_truncation(MINILM_MAX_TOKENS)
    print(f"built {store} in {seconds:.0f} s ({n / seconds:.1f} papers/s)", file=sys.stderr)
    return pa, seconds


def pct(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    p95 = values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]
    return statistics.median(values) * 1000, p95 * 1000


def timed(fn, items) -> list[float]:
    out = []
    for item in items:
        t0 = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t0)
    return out


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def filters_for(papers: list[Paper]) -> dict[str, Filters]:
    cats = sorted({p.category for p in papers if p.category})
    authors = [a for p in papers for a in p.authors]
    common_surname = max({a.split()[-1] for a in authors if " " in a},
                         key=lambda s: sum(s in a for a in authors[:5000])) if authors else "a"
    years = sorted({p.year for p in papers if p.year})
    out = {"none": None}
    if cats:
        out[f"category {cats[len(cats) // 2]!r}"] = Filters(categories=[cats[len(cats) // 2]])
    if years:
        out[f"years {years[len(years) // 2]}-{years[-1]}"] = Filters(year_min=years[len(years) // 2],
                                                                     year_max=years[-1])
    if authors:
        out[f"author ~{common_surname!r}"] = Filters(authors=[common_surname])
    return out


def measure(pa: PaperAssistant, n_queries: int, seed: int,
            search_only: bool = False) -> list[tuple[str, str, float, float]]:
    papers = list(pa.store.papers().values())
    rng = random.Random(seed)
    sample = rng.sample(papers, min(n_queries, len(papers)))
    titles = [p.title for p in sample]
    rows = []
    pa.search("warm up the embedding session")
    for name, f in filters_for(papers).items():
        p50, p95 = pct(timed(lambda q: pa.search(q, k=10, filters=f), titles))
        rows.append(("search", f"filter: {name}", p50, p95))
    if search_only:
        return rows
    planner = pa.engine.planner
    questions = [f"Which paper studies {t.rstrip('.').lower()}?" for t in titles]
    summaries = [f"Summarize the papers on {' '.join(t.split()[:4]).rstrip('.').lower()}."
                 for t in titles[: max(5, n_queries // 4)]]
    for case, items in (("question, no LLM", questions), ("summary, no LLM", summaries)):
        try:
            split = timed_split(lambda q: planner.plan(q, [], None, None, None), items)
        except Exception as exc:  # a failure is a result too: say it, measure the rest
            print(f"plan {case}: failed: {type(exc).__name__}: {exc}")
            continue
        p50, p95 = pct([t for t, _ in split])
        rows.append(("plan", case, p50, p95))
        # most of planning is embedding the candidates' sentences (cached between turns):
        # what is left is the part that grows with the corpus
        p50, p95 = pct([t - e for t, e in split])
        rows.append(("plan", case.replace(", no LLM", "") + " minus embedding", p50, p95))
    return rows


def keep_sentence_vectors(pa: PaperAssistant) -> tuple[int, float]:
    """What `sentence_vectors = "ingest"` does at ingest, for a store built without it (the
    derived stores, older stores): (texts embedded, seconds)."""
    t0 = time.perf_counter()
    n = pa.store.keep_sentence_vectors(pa.store.papers().values())
    return n, time.perf_counter() - t0


def timed_split(fn, items) -> list[tuple[float, float]]:
    """(seconds, of which in the embedding model) of each call."""
    from assistant.embed import OnnxMiniLMEmbedding

    real = OnnxMiniLMEmbedding._embed_batch
    spent = [0.0]

    def timed_batch(self, texts):
        t = time.perf_counter()
        try:
            return real(self, texts)
        finally:
            spent[0] += time.perf_counter() - t

    OnnxMiniLMEmbedding._embed_batch = timed_batch
    out = []
    try:
        for item in items:
            spent[0] = 0.0
            t0 = time.perf_counter()
            fn(item)
            out.append((time.perf_counter() - t0, spent[0]))
    finally:
        OnnxMiniLMEmbedding._embed_batch = real
    return out


def stats_cost(pa: PaperAssistant) -> dict:
    from assistant.index import Store
    from assistant.stats import CorpusStats

    fresh = Store(pa.settings)
    t0 = time.perf_counter()
    fresh.corpus_stats()  # the saved statistics (built and saved once if an older store)
    load = time.perf_counter() - t0
    papers = list(fresh.papers().values())
    t0 = time.perf_counter()
    CorpusStats.build(papers)
    build = time.perf_counter() - t0
    return {"load_s": load, "build_s": build}


def simulate(pa: PaperAssistant, n: int) -> None:
    """In-memory parts at n papers: the store's papers repeated with new ids."""
    import numpy as np

    from assistant.index import Bm25Index, lexical_text
    from assistant.stats import CorpusStats

    base = list(pa.store.papers().values())
    papers = [p if i < len(base) else p.model_copy(update={"paper_id": f"{p.paper_id}~{i // len(base)}"})
              for i, p in ((i, base[i % len(base)]) for i in range(n))]
    t0 = time.perf_counter()
    bm25 = Bm25Index.build([p.paper_id for p in papers], [p.paper_id for p in papers],
                           [lexical_text(p, p.abstract) for p in papers])
    t_bm25 = time.perf_counter() - t0
    t0 = time.perf_counter()
    stats = CorpusStats.build(papers)
    t_build = time.perf_counter() - t0
    path = Path(tempfile.mkdtemp()) / "stats.json"
    stats.save(path, revision="sim")
    t0 = time.perf_counter()
    CorpusStats.load(path)
    t_load = time.perf_counter() - t0
    rng = random.Random(1)
    titles = [p.title for p in rng.sample(base, 30)]
    allowed = {p.paper_id for p in papers if p.year and p.year >= 2018}
    score = pct(timed(lambda q: bm25.scores(q), titles))
    def mask():  # as Retriever._bm25_side builds it
        return np.fromiter((pid in allowed for pid in bm25.paper_ids), dtype=np.float32,
                           count=len(bm25.paper_ids))

    masked = pct(timed(lambda q: bm25.scores(q, mask()), titles))
    print(f"\nsimulated {n} papers (the {len(base)} real ones repeated, in memory, no Chroma):")
    print(f"  BM25 build {t_bm25:.1f} s; scores p50/p95 {score[0]:.1f}/{score[1]:.1f} ms, "
          f"with a year filter mask {masked[0]:.1f}/{masked[1]:.1f} ms")
    print(f"  corpus statistics: build from papers {t_build:.1f} s, load saved {t_load:.2f} s "
          f"({path.stat().st_size / 1e6:.1f} MB)")


def derive_store(base: Path, n: int, dest: Path, noise: float = 0.02, seed: int = 0) -> Path:
    """A store of `n` papers made from the real store `base` without embedding anything: its
    papers repeated with new ids (`<id>~k`), each copy's chunk vectors the original's plus a
    little Gaussian noise (sd `noise` per dimension, renormalised), so HNSW indexes distinct
    points. Text, BM25, statistics and every cache are built by the store itself
    (`finish_ingest`). Reused while it has `n` papers."""
    import json as _json
    import shutil

    import numpy as np

    from assistant.index import Store

    settings = load_settings(store_dir=dest, llm_backend="none")
    marker = dest / "derived.json"
    if marker.exists() and _json.loads(marker.read_text()).get("n") == n:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(base, dest)
    store = Store(settings)
    have = store.stats()["papers"]
    col = store.collection
    rng = np.random.default_rng(seed)
    total = col.count()
    t0 = time.perf_counter()
    made = have
    copy = 0
    while made < n:
        copy += 1
        for offset in range(0, total, 2000):
            got = col.get(limit=2000, offset=offset, include=["documents", "metadatas", "embeddings"])
            ids, docs, metas, vecs = [], [], [], []
            for cid, doc, meta, vec in zip(got["ids"], got["documents"], got["metadatas"],
                                           got["embeddings"]):
                pid = meta["paper_id"]
                if "~" in pid:
                    continue
                meta = dict(meta)
                new_pid = f"{pid}~{copy}"
                meta["paper_id"] = new_pid
                if "paper" in meta:
                    rec = _json.loads(meta["paper"])
                    rec["paper_id"] = new_pid
                    meta["paper"] = _json.dumps(rec)
                ids.append(cid.replace(f"{pid}::", f"{new_pid}::", 1))
                docs.append(doc)
                metas.append(meta)
                vecs.append(vec)
            if not ids:
                continue
            v = np.asarray(vecs, dtype=np.float32)
            v = v + rng.normal(0, noise, v.shape).astype(np.float32)
            v /= np.linalg.norm(v, axis=1, keepdims=True)
            # only whole papers, until n
            keep = list(range(len(metas)))
            papers_here = {m["paper_id"] for m in metas}
            if made + len(papers_here) > n:
                allowed = sorted(papers_here)[: n - made]
                allowed_set = set(allowed)
                keep = [i for i, m in enumerate(metas) if m["paper_id"] in allowed_set]
                papers_here = allowed_set
            if keep:
                col.upsert(ids=[ids[i] for i in keep], documents=[docs[i] for i in keep],
                           metadatas=[metas[i] for i in keep], embeddings=v[keep])
            made += len(papers_here)
            if made >= n:
                break
        print(f"  derived copy {copy}: {made} papers, {time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)
    store._set_meta(revision=uuid.uuid4().hex)
    store.finish_ingest()
    marker.write_text(_json.dumps({"n": n, "base": str(base), "noise": noise}))
    print(f"derived {dest} ({made} papers) in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return dest


def serve_cost(store: Path, max_tokens: int = 16, parallel: int = 0) -> dict:
    """`serve` on this store with the local model (`parallel` llama-server slots, 0: in-process):
    seconds from start until the page answers, until the first answer (model loaded), and the
    peak RSS (VmHWM) of serve and its children after that answer."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from load import Serve, ask, peak_rss_mb

    serve = Serve(store, max_tokens, parallel)
    try:
        t0 = time.perf_counter()
        # a question these stores answer (the seed corpus' questions may find nothing here,
        # and then the model is not asked)
        answer = ask(serve.url, "Summarize the papers on neural networks for graphs.", [])
        first = time.perf_counter() - t0
        return {"page_s": serve.start_s, "first_answer_s": first,
                "rss_mb": peak_rss_mb(serve.proc.pid),
                "model_answered": answer["first_token"] is not None}
    finally:
        serve.stop()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--papers", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--store", type=Path)
    ap.add_argument("--simulate", type=int, default=0)
    ap.add_argument("--embed-tokens", type=int, default=48,
                    help="word pieces the model reads while building the store (256 = faithful)")
    ap.add_argument("--derive", type=int, default=0,
                    help="measure a store of this many papers derived from the --papers store "
                         "(papers repeated, vectors the originals' plus noise; nothing embedded)")
    ap.add_argument("--keep-sentences", action="store_true",
                    help="first embed and keep every paper's sentence vectors (what ingest does "
                         "with sentence_vectors=ingest), so planning reads them")
    ap.add_argument("--no-stats", action="store_true",
                    help="skip the corpus statistics' cost and the store's size")
    ap.add_argument("--search-only", action="store_true",
                    help="measure search only (no planning, statistics or store size)")
    ap.add_argument("--chroma-url", default=None,
                    help="measure through a Chroma server serving the store's folder (after --derive)")
    ap.add_argument("--serve", action="store_true",
                    help="also: serve's start until the page answers, and its peak RSS with the "
                         "local model loaded (one answer)")
    ap.add_argument("--serve-parallel", type=int, default=load_settings().serve_parallel,
                    help="llama-server slots for --serve (serve's default; 0: the in-process model)")
    args = ap.parse_args()
    store = args.store or STORES / f"scale-{args.papers}"
    pa, built = open_store(args.papers, store, args.embed_tokens)
    if args.derive:
        del pa
        store = derive_store(store, args.derive, STORES / f"scale-{args.derive}-derived")
        pa, built = None, None
    if args.chroma_url:  # only the server opens the store's Chroma files from here on
        pa = PaperAssistant(load_settings(store_dir=store, llm_backend="none", chroma_url=args.chroma_url))
        print(f"through the Chroma server at {args.chroma_url}: {pa.stats()['chunks']} chunks")
    elif pa is None:
        pa = PaperAssistant(load_settings(store_dir=store, llm_backend="none"))
    if args.keep_sentences:
        n, seconds = keep_sentence_vectors(pa)
        print(f"sentence vectors kept beside the store: {n} texts embedded in {seconds:.0f} s")
    rows = measure(pa, args.queries, args.seed, args.search_only)
    if args.search_only or args.no_stats:
        for what, case, p50, p95 in rows:
            print(f"{what:8s} {case:36s} {p50:9.1f} {p95:9.1f}")
        if args.serve:
            del pa
            report_serve(store, args.serve_parallel)
        return 0
    cost = stats_cost(pa)
    s = pa.stats()
    print(f"\n{s['papers']} papers, {s['chunks']} chunks, store {store}"
          + (f" (built in {built:.0f} s)" if built else ""))
    print(f"{'what':8s} {'case':36s} {'p50 ms':>9s} {'p95 ms':>9s}")
    for what, case, p50, p95 in rows:
        print(f"{what:8s} {case:36s} {p50:9.1f} {p95:9.1f}")
    print(f"corpus statistics in a fresh process: load saved {cost['load_s']:.2f} s, "
          f"build from every paper {cost['build_s']:.2f} s")
    cache = du(store / "cache")
    total = du(store)
    print(f"store on disk: {total / 1e6:.1f} MB (Chroma {(total - cache) / 1e6:.1f} MB, "
          f"cache {cache / 1e6:.1f} MB: " + ", ".join(
              f"{f.name} {f.stat().st_size / 1e6:.1f} MB" for f in sorted((store / "cache").glob("*"))
              if f.is_file()) + ")")
    if args.simulate:
        simulate(pa, args.simulate)
    if args.serve:
        del pa
        report_serve(store, args.serve_parallel)
    return 0


def report_serve(store: Path, parallel: int) -> None:
    cost = serve_cost(store, parallel=parallel)
    model = f"llama-server, {parallel} slots" if parallel else "in-process"
    print(f"serve ({model}): page answers {cost['page_s']:.1f} s after start; first answer (model "
          f"loaded) {cost['first_answer_s']:.1f} s later; peak RSS {cost['rss_mb']:.0f} MB "
          f"(model answered: {cost['model_answered']})")


if __name__ == "__main__":
    sys.exit(main())
