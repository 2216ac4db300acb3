"""Calibrate the relevance gate (when to answer, when to say the collection has nothing).

    .venv/bin/python benchmarks/calibrate_abstain.py [--grid 0.30,0.33,0.36,0.40]

Negatives come from real data that the seed corpus (20 ML abstracts) does not cover: SciFact's
biomedical claims and the titles of May-2025 arXiv math papers, asked against the seed store;
every one of them should abstain. Positives are the answerable questions of our own held-out
set (tests/data/seed_heldout.jsonl, single-turn qa items; not the dev set). For each candidate
`min_dense` it prints the false-answer rate on negatives and the answer rate on positives.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assistant import PaperAssistant, load_settings  # noqa: E402
from assistant.answer.plan import Planner, is_singular_question  # noqa: E402
from assistant.config import SEED_CORPUS  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def negatives(n_each: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    scifact = DATA / "scifact" / "queries_train.jsonl"
    if scifact.exists():
        claims = [json.loads(l)["text"] for l in scifact.read_text().splitlines() if l.strip()]
        out += rng.sample(claims, min(n_each, len(claims)))
    math = DATA / "arxiv_math" / "papers.jsonl"
    if math.exists():
        titles = [json.loads(l)["title"] for l in math.read_text().splitlines() if l.strip()]
        out += [f"Which paper is about {t}?" for t in rng.sample(titles, min(n_each, len(titles)))]
    return out


def positives() -> list[str]:
    path = ROOT / "tests" / "data" / "seed_heldout.jsonl"
    items = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    return [it["turns"][0] for it in items if it["kind"] == "qa" and len(it["turns"]) == 1]


def answer_rate(pa: PaperAssistant, planner: Planner, queries: list[str]) -> float:
    answered = 0
    for q in queries:
        hits = pa.search(q, k=5)
        answered += bool(planner.choose(q, hits, singular=is_singular_question(q)))
    return answered / len(queries) if queries else 0.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", default="0.30,0.33,0.36,0.40,0.45")
    ap.add_argument("--n", type=int, default=300, help="negatives per source")
    args = ap.parse_args()
    pa = PaperAssistant(load_settings(store_dir=Path(tempfile.mkdtemp()), llm_backend="none"))
    pa.ingest([SEED_CORPUS])
    neg, pos = negatives(args.n), positives()
    print(f"{len(neg)} negatives (SciFact claims, arXiv math titles), {len(pos)} positives (held-out qa)")
    for value in (float(x) for x in args.grid.split(",")):
        planner = Planner(pa.store, value, pa.settings.min_lexical)
        fp = answer_rate(pa, planner, neg)
        tp = answer_rate(pa, planner, pos)
        mark = " <- current" if abs(value - pa.settings.min_dense) < 1e-9 else ""
        print(f"min_dense={value:.2f}  answers negatives {fp:6.1%}  answers positives {tp:6.1%}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
