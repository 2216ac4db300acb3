"""Where the gold paper ranks in hybrid search with the paper side off and on (issue 21).

    .venv/bin/python benchmarks/paper_side.py ml_conf benchmarks/questions/ml_conf_reworded_3.jsonl
    .venv/bin/python benchmarks/paper_side.py scifact scifact:test --weights 0 0.5

For each one-turn answerable question of the sets (or SciFact's claims, asked as "Is there
evidence that …?"), the rank of the first gold paper among `search(question, k=20)`, per level
of the question (close, reworded, far; "claim" for SciFact), at each `paper_weight`.
Nothing is asked of a model: this is retrieval only.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

import numpy as np

from corpora import evidence_question, open_corpus, scifact_claims, seed_ids_by_key


def items(files: list[str], keys: dict[str, str]):
    for f in files:
        if f.startswith("scifact:"):
            for _, claim, gold in scifact_claims(f.split(":", 1)[1]):
                yield "claim", evidence_question(claim), gold
            continue
        for line in open(f):
            item = json.loads(line)
            if item.get("expect") and len(item["turns"]) == 1:
                yield (item.get("level", "-"), item["turns"][0],
                       {keys.get(e, e) for e in item["expect"]})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("sets", nargs="+", help="question files, or scifact:train / scifact:test")
    ap.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.5])
    args = ap.parse_args()
    assistants = {w: open_corpus(args.corpus, paper_weight=w) for w in args.weights}
    keys = seed_ids_by_key(assistants[args.weights[0]]) if args.corpus == "seed" else {}
    ranks: dict[str, dict[float, list[int]]] = defaultdict(lambda: defaultdict(list))
    for level, question, gold in items(args.sets, keys):
        for w, pa in assistants.items():
            order = [h.paper.paper_id for h in pa.search(question, k=20)]
            rank = next((i for i, pid in enumerate(order, 1) if pid in gold), 10**6)
            ranks[level][w].append(rank)
            ranks["all"][w].append(rank)
    print("| level | questions | paper_weight | rank 1 | top 3 | top 5 | top 20 | MRR@20 |")
    print("|---|---|---|---|---|---|---|---|")
    for level in [lv for lv in ("close", "reworded", "far", "claim", "-") if lv in ranks] + ["all"]:
        for w, rs in ranks[level].items():
            r = np.array(rs)
            print(f"| {level} | {len(r)} | {w:g} | {np.sum(r <= 1)} | {np.sum(r <= 3)} | "
                  f"{np.sum(r <= 5)} | {np.sum(r <= 20)} | {np.mean(np.where(r <= 20, 1 / r, 0)):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
