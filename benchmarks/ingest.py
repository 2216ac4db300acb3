"""Ingest throughput: our pipeline vs a plain llama-index pipeline, same embedding model.

    .venv/bin/python benchmarks/ingest.py [--data ../shared/data/ml_conf/papers.jsonl] [--limit N]

Each side runs in its own fresh subprocess and a fresh store, so peak RSS is its own:
- ours:     `PaperAssistant.ingest` (validation pass, chunking, length-sorted batched ONNX
            embeddings, Chroma upsert, BM25 build)
- baseline: `VectorStoreIndex.from_documents` into llama-index's ChromaVectorStore with the
            same packaged MiniLM ONNX embedding, llama-index defaults otherwise
Then a re-ingest of the same file by ours (idempotent: nothing re-embedded).
Then, in the same process as ours, embedding only: the very texts ours embedded (each chunk as
"title. window"), in the same groups (one per ingest batch of papers), with the same model
session and batch size, and nothing else (no reading, chunking, hashing, Chroma or BM25).
Prints papers/s for each, the ratio ours/baseline (goal >= 2x) and the ratio
ingest/embedding-only (chunks/s of ingest over chunks/s of embedding alone; goal >= 85%).
`--profile` also runs ours under cProfile and prints where its time goes.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_ours(data: Path, limit: int, store: Path, repeat: bool, profile: bool = False) -> dict:
    sys.path.insert(0, str(ROOT))
    from assistant import PaperAssistant, load_settings

    import assistant.index.store as index_module  # embed_texts is looked up there

    src = limited_copy(data, limit)
    pa = PaperAssistant(load_settings(store_dir=store, llm_backend="none"))
    # time spent embedding inside the ingest: a ratio measured in one run, so it does not
    # depend on the machine being as busy during the embedding-only pass
    inside = {"seconds": 0.0}
    real_embed = index_module.embed_texts

    def timed_embed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real_embed(*args, **kwargs)
        finally:
            inside["seconds"] += time.perf_counter() - t

    index_module.embed_texts = timed_embed
    profiler = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if profiler:
        profiler.enable()
    reports = pa.ingest([src])
    first = time.perf_counter() - t0
    if profiler:
        profiler.disable()
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)
        print(text.getvalue(), file=sys.stderr)
    index_module.embed_texts = real_embed
    out = {"papers": reports[0].papers, "seconds": first,
           "chunks": pa.stats()["chunks"], "embed_inside_seconds": inside["seconds"]}
    out.update(embedding_only(pa, src))
    if repeat:
        t0 = time.perf_counter()
        again = pa.ingest([src])
        out["reingest_seconds"] = time.perf_counter() - t0
        out["reingest_embedded"] = again[0].upsert.chunks_embedded
    return out


def embedding_only(pa, src: Path) -> dict:
    """Embed exactly what ingest embedded, as ingest grouped it, and nothing else."""
    from assistant.corpus import read_papers
    from assistant.embed import OnnxMiniLMEmbedding, embed_texts
    from assistant.index import embedding_text, iter_batches
    from assistant.ingest import BATCH_PAPERS

    store = pa.store
    groups = [[embedding_text(p, c.text) for p in batch for c in store.chunker.chunk(p)]
              for batch in iter_batches(read_papers(src, skip_bad=True, errors=[]), BATCH_PAPERS)]
    batch_size = pa.settings.embed_batch_size
    t0 = time.perf_counter()
    for texts in groups:
        embed_texts(store.embedder, texts, batch_size)
    seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    if isinstance(store.embedder, OnnxMiniLMEmbedding):  # the one-time model load ingest paid
        OnnxMiniLMEmbedding(threads=pa.settings.embed_threads)._get_session()
    return {"embed_only_seconds": seconds, "embed_only_chunks": sum(map(len, groups)),
            "model_load_seconds": time.perf_counter() - t0, "embed_batch_size": batch_size}


def run_baseline(data: Path, limit: int, store: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    import chromadb
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.vector_stores.chroma import ChromaVectorStore

    from assistant.corpus import read_papers
    from assistant.embed import OnnxMiniLMEmbedding

    t0 = time.perf_counter()
    docs = [Document(text=p.abstract, metadata={"title": p.title, "year": p.year or 0})
            for p in read_papers(limited_copy(data, limit))]
    client = chromadb.PersistentClient(path=str(store))
    collection = client.get_or_create_collection("baseline")
    storage = StorageContext.from_defaults(vector_store=ChromaVectorStore(chroma_collection=collection))
    VectorStoreIndex.from_documents(docs, storage_context=storage, embed_model=OnnxMiniLMEmbedding())
    return {"papers": len(docs), "seconds": time.perf_counter() - t0, "chunks": collection.count()}


def limited_copy(data: Path, limit: int) -> Path:
    if not limit:
        return data
    dest = Path(tempfile.mkdtemp()) / data.name
    with data.open() as src, dest.open("w") as out:
        for i, line in enumerate(src):
            if i >= limit:
                break
            out.write(line)
    return dest


def child(which: str, data: str, limit: int, profile: bool = False) -> None:
    store = Path(tempfile.mkdtemp(prefix=f"bench-{which}-"))
    result = (run_ours(Path(data), limit, store, repeat=True, profile=profile) if which == "ours"
              else run_baseline(Path(data), limit, store))
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(result))


def measure(which: str, data: Path, limit: int, profile: bool = False) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", which, "--data", str(data),
                           "--limit", str(limit)] + ["--profile"] * profile,
                          capture_output=True, text=True)
    if profile:
        print(proc.stderr[-12000:])
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{which} failed:\n{proc.stderr[-3000:]}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "ml_conf" / "papers.jsonl"))
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--child", choices=["ours", "baseline"])
    ap.add_argument("--profile", action="store_true", help="cProfile our ingest (slower)")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.data, args.limit, args.profile)
        return 0
    data = Path(args.data)
    if not data.exists():
        print(f"{data} not found: nothing to measure")
        return 0
    base = measure("baseline", data, args.limit)
    ours = measure("ours", data, args.limit, args.profile)
    for name, r in (("baseline (llama-index)", base), ("ours", ours)):
        print(f"{name:24s} {r['papers']} papers, {r['chunks']} chunks in {r['seconds']:.1f} s = "
              f"{r['papers'] / r['seconds']:.1f} papers/s, peak RSS {r['peak_rss_mb']:.0f} MB")
    print(f"re-ingest (ours, unchanged file): {ours['reingest_seconds']:.1f} s, "
          f"{ours['reingest_embedded']} chunks re-embedded")
    ratio = (ours["papers"] / ours["seconds"]) / (base["papers"] / base["seconds"])
    print(f"ratio ours/baseline: {ratio:.2f}x (goal >= 2x)")
    ingest_rate = ours["chunks"] / ours["seconds"]
    embed_rate = ours["embed_only_chunks"] / ours["embed_only_seconds"]
    print(f"embedding only (same {ours['embed_only_chunks']} texts, same model, batch size "
          f"{ours['embed_batch_size']}): {ours['embed_only_seconds']:.1f} s = {embed_rate:.1f} "
          f"chunks/s; ingest {ingest_rate:.1f} chunks/s; model load {ours['model_load_seconds']:.2f} s")
    print(f"ratio ingest/embedding-only: {ingest_rate / embed_rate:.0%} (goal >= 85%); within "
          f"the ingest run itself, embedding took {ours['embed_inside_seconds']:.1f} s of "
          f"{ours['seconds']:.1f} s = {ours['embed_inside_seconds'] / ours['seconds']:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
