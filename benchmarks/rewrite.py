"""Paraphrase recall: what the local model's rewrite before refusing gains and costs.

    .venv/bin/python benchmarks/rewrite.py [SET ...]      # default: the dev sets

Planning only (no prose), single-turn questions (qa) and out-of-corpus ones (none). For each
question the gate decides as usual; when it refuses a borderline question (best candidate at or
above `rewrite_floor`), the model rewrites it in a paper's terms and the gate judges again. Prints
per set, for the gate alone, any accepted rewrite, and a rewrite accepted only when its paper was
the original question's best candidate: answerable questions hit, wrong papers cited, and
out-of-corpus questions refused; then the borderline count and seconds per rewrite.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import open_corpus, read_jsonl, seed_ids_by_key  # noqa: E402
from evaluate import DEFAULT_SETS  # noqa: E402

from assistant.answer.plan import PLURAL_RE, SINGULAR_RE  # noqa: E402
from assistant.answer.query import parse  # noqa: E402

VARIANTS = ("gate alone", "any rewrite", "rewrite agreeing")


def measure(pa, message: str) -> dict:
    """The gate's papers for the message, and (for a borderline refusal) the rewrite's, through
    the planner's own rewrite path with the policy's `rewrite` switched on."""
    planner, judge = pa.engine.planner, pa.engine.judge
    planner.policy = planner.policy.model_copy(update={"rewrite": True})
    q = parse(message, [])
    hits, judged = planner._judged(q.topic, None, planner.policy.candidates)
    chosen = judge.choose(judged, singular=bool(SINGULAR_RE.search(message)) and not PLURAL_RE.search(message),
                          plural=bool(PLURAL_RE.search(message)))
    rec = {"gate alone": [j.paper.paper_id for j in chosen], "secs": None}
    rec["any rewrite"] = rec["rewrite agreeing"] = rec["gate alone"]
    if not chosen and planner._worth_rewriting(judged):
        t0 = time.perf_counter()
        again = [j.paper.paper_id for j in planner._rewritten(q, None, hits)[1]]
        rec["secs"] = time.perf_counter() - t0
        rec["any rewrite"] = again
        rec["rewrite agreeing"] = again if again and again[0] == judged[0].paper.paper_id else []
    return rec


def run_set(name: str) -> list[tuple[dict, dict]]:
    corpus, path = DEFAULT_SETS[name]
    pa = open_corpus(corpus, backend="local", llm_timeout=600)
    keys = seed_ids_by_key(pa) if corpus == "seed" else {}
    out = []
    for item in read_jsonl(path):
        if len(item["turns"]) != 1 or item.get("kind") not in ("qa", "none"):
            continue
        if parse(item["turns"][0], []).intent != "question":
            continue
        item["expect"] = [keys.get(e, e) for e in item.get("expect", [])]
        out.append((item, measure(pa, item["turns"][0])))
    return out


def report(name: str, results: list[tuple[dict, dict]]) -> None:
    answerable = [(i, r) for i, r in results if i["kind"] == "qa"]
    outside = [(i, r) for i, r in results if i["kind"] == "none"]
    for v in VARIANTS:
        hit = sum(bool(set(r[v]) & set(i["expect"])) for i, r in answerable)
        wrong = sum(bool(r[v]) and not set(r[v]) & set(i["expect"]) for i, r in answerable)
        refused = sum(not r[v] for _, r in outside)
        print(f"{name:<16} {v:<17} hit {hit}/{len(answerable)}  wrong {wrong}  refused {refused}/{len(outside)}")
    secs = [r["secs"] for _, r in results if r["secs"] is not None]
    print(f"{name:<16} borderline {len(secs)}, {sum(secs) / max(len(secs), 1):.1f} s per rewrite")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("sets", nargs="*", default=["seed-heldout", "seed-dev", "arxiv_math-dev", "ml_conf-dev"])
    args = ap.parse_args()
    for name in args.sets:
        report(name, run_set(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
