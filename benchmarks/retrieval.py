"""Retrieval quality on BEIR SciFact: nDCG@10 and recall@10 for BM25-only, dense-only and hybrid.

    .venv/bin/python benchmarks/retrieval.py [--data ../shared/data/scifact] [--store DIR] [--limit N]

BM25-only is the baseline measured in the same run; published references (test split):
BM25 0.687, all-MiniLM-L6-v2 0.645, bge-small 0.713. Target for the hybrid: >= 0.70.
The store is built once (SciFact's 5,183 abstracts through our own ingest) and reused.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assistant import PaperAssistant, load_settings  # noqa: E402


def ndcg_at_k(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(rel / math.log2(i + 2) for i, rel in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open() as f:
        for row in csv.DictReader(f, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return qrels


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    ap.add_argument("--store", default=str(ROOT / "benchmarks" / ".stores" / "scifact"))
    ap.add_argument("--limit", type=int, default=0, help="evaluate only the first N queries")
    ap.add_argument("--alphas", default="0.3,0.4,0.5,0.6,0.7")
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "corpus.jsonl").exists():
        print(f"SciFact not found at {data}: nothing to measure")
        return 0

    pa = PaperAssistant(load_settings(store_dir=Path(args.store), llm_backend="none"))
    if pa.store.collection.count() == 0:
        t0 = time.perf_counter()
        pa.ingest([data / "corpus.jsonl"])
        print(f"indexed SciFact in {time.perf_counter() - t0:.0f} s: {pa.stats()}")
    qrels = load_qrels(data / "qrels" / "train.tsv")
    queries = [json.loads(l) for l in (data / "queries_train.jsonl").read_text().splitlines() if l.strip()]
    queries = [q for q in queries if q["_id"] in qrels]
    if args.limit:
        queries = queries[: args.limit]

    configs = [("bm25", "bm25", None, "convex"), ("dense", "dense", None, "convex"),
               ("hybrid rrf", "hybrid", None, "rrf")]
    configs += [(f"hybrid convex α={a}", "hybrid", float(a), "convex") for a in args.alphas.split(",")]
    print(f"{len(queries)} queries with judgments; nDCG@10 / recall@10 / ms per query")
    results = {}
    for name, mode, alpha, fusion in configs:
        pa.settings.fusion = fusion
        if alpha is not None:
            pa.settings.hybrid_alpha = alpha
        ndcg = recall = 0.0
        t0 = time.perf_counter()
        for q in queries:
            hits = pa.retriever.search(q["text"], k=10, mode=mode)
            ranked = [h.paper.paper_id for h in hits]
            rel = qrels[q["_id"]]
            ndcg += ndcg_at_k(ranked, rel)
            recall += len(set(ranked) & set(rel)) / len(rel)
        ms = (time.perf_counter() - t0) * 1000 / len(queries)
        results[name] = ndcg / len(queries)
        print(f"{name:22s} nDCG@10={ndcg / len(queries):.4f}  recall@10={recall / len(queries):.4f}  "
              f"{ms:.0f} ms/query")
    base = results["bm25"]
    best = max((n for n in results if n.startswith("hybrid")), key=results.get)
    print(f"best hybrid: {best} {results[best]:.4f} vs BM25 baseline {base:.4f} "
          f"({results[best] - base:+.4f}); published: BM25 0.687, MiniLM 0.645, bge-small 0.713")
    return 0


if __name__ == "__main__":
    sys.exit(main())
