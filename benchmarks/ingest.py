"""Ingest throughput: our pipeline vs a plain llama-index pipeline, same embedding model.

    .venv/bin/python benchmarks/ingest.py [--data ../shared/data/ml_conf/papers.jsonl] [--limit N]

Each side runs in its own fresh subprocess and a fresh store, so peak RSS is its own:
- ours:     `PaperAssistant.ingest` (validation pass, chunking, length-sorted batched ONNX
            embeddings, Chroma upsert, BM25 build)
- baseline: `VectorStoreIndex.from_documents` into llama-index's ChromaVectorStore with the
            same packaged MiniLM ONNX embedding, llama-index defaults otherwise
Then a re-ingest of the same file by ours (idempotent: nothing re-embedded).
Prints papers/s for each and the ratio ours/baseline (goal >= 2x).
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_ours(data: Path, limit: int, store: Path, repeat: bool) -> dict:
    sys.path.insert(0, str(ROOT))
    from assistant import PaperAssistant, load_settings

    src = limited_copy(data, limit)
    pa = PaperAssistant(load_settings(store_dir=store, llm_backend="none"))
    t0 = time.perf_counter()
    reports = pa.ingest([src])
    first = time.perf_counter() - t0
    out = {"papers": reports[0].papers, "seconds": first,
           "chunks": pa.stats()["chunks"]}
    if repeat:
        t0 = time.perf_counter()
        again = pa.ingest([src])
        out["reingest_seconds"] = time.perf_counter() - t0
        out["reingest_embedded"] = again[0].upsert.chunks_embedded
    return out


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


def child(which: str, data: str, limit: int) -> None:
    store = Path(tempfile.mkdtemp(prefix=f"bench-{which}-"))
    result = (run_ours(Path(data), limit, store, repeat=True) if which == "ours"
              else run_baseline(Path(data), limit, store))
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(result))


def measure(which: str, data: Path, limit: int) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", which, "--data", str(data),
                           "--limit", str(limit)], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{which} failed:\n{proc.stderr[-3000:]}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "ml_conf" / "papers.jsonl"))
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--child", choices=["ours", "baseline"])
    args = ap.parse_args()
    if args.child:
        child(args.child, args.data, args.limit)
        return 0
    data = Path(args.data)
    if not data.exists():
        print(f"{data} not found: nothing to measure")
        return 0
    base = measure("baseline", data, args.limit)
    ours = measure("ours", data, args.limit)
    for name, r in (("baseline (llama-index)", base), ("ours", ours)):
        print(f"{name:24s} {r['papers']} papers, {r['chunks']} chunks in {r['seconds']:.1f} s = "
              f"{r['papers'] / r['seconds']:.1f} papers/s, peak RSS {r['peak_rss_mb']:.0f} MB")
    print(f"re-ingest (ours, unchanged file): {ours['reingest_seconds']:.1f} s, "
          f"{ours['reingest_embedded']} chunks re-embedded")
    ratio = (ours["papers"] / ours["seconds"]) / (base["papers"] / base["seconds"])
    print(f"ratio ours/baseline: {ratio:.2f}x (goal >= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
