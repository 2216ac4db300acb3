"""Described comparison sides: how sure the reading must be for a side the user describes.

    .venv/bin/python benchmarks/calibrate_sides.py            # the table, from the recorded rows
    .venv/bin/python benchmarks/calibrate_sides.py --record   # read the sides again (~25 min)

For every single-message comparison of the compare dev sets and the round-1 and round-2
conversation sets (`SETS`), each side is parsed as the engine parses it (answer/sides.py) and
resolved as plan._side_options resolves it with the packaged model reading
(RelevancePolicy.reading=local); recorded are the candidates the model read, with their
combined probability, and whether each is an expected paper (benchmarks/calibration/
sides_reading.jsonl). The table counts, for the sides the question threshold refused, how many
would be resolved to an expected paper (right) or to another one (wrong: a neighbour cited as a
side that is absent or is another paper) if the best paper read joined at threshold T; sides
that are not descriptions (fewer than three content words, or a work cited from elsewhere:
"… (Ioffe & Szegedy 2015)") are counted apart, since the engine keeps the question threshold
for them. RelevancePolicy.described_side_threshold is chosen from it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(1, str(HERE))
OUT = HERE / "calibration" / "sides_reading.jsonl"
Q = HERE / "questions"
SETS = [("seed", Q / "seed_compare_dev.jsonl"), ("seed", Q / "seed_conversations.jsonl"),
        ("seed", Q / "seed_conversations_2.jsonl"), ("arxiv_math", Q / "arxiv_math_compare_dev.jsonl"),
        ("arxiv_math", Q / "arxiv_math_conversations.jsonl"),
        ("arxiv_math", Q / "arxiv_math_conversations_2.jsonl"), ("ml_conf", Q / "ml_conf_compare_dev.jsonl"),
        ("ml_conf", Q / "ml_conf_conversations.jsonl"), ("ml_conf", Q / "ml_conf_conversations_2.jsonl")]
KINDS = ("compare", "described_compare", "compare_one_absent", "compare_both_absent")
THRESHOLDS = (0.05, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2)


def record() -> None:
    """Resolve every side with the model reading (the question threshold), keeping what it read."""
    os.environ["PAPER_ASSISTANT_RELEVANCE__READING"] = "local"
    from corpora import open_corpus
    from evaluate import load_items
    from assistant.answer import plan as P
    from assistant.answer.sides import compare_targets

    seen: dict = {}
    read = P.Planner._read

    def recorded(self, question, judged):
        result = read(self, question, judged)
        seen["read"] = None if result is None else [(j.paper.paper_id, j.p, j.features.get("yes"))
                                                    for j in result.read]
        return result

    P.Planner._read = recorded
    with OUT.open("w") as out:
        for corpus, path in SETS:
            pa = open_corpus(corpus, backend="local")
            planner = pa.engine.planner
            # the question threshold alone: what the described-side threshold would add is the table
            planner.policy = planner.policy.model_copy(update={"described_side_threshold": 2.0})
            for item in load_items(corpus, path, pa, 0):
                if item["kind"] not in KINDS or len(item["turns"]) != 1:
                    continue
                for side in compare_targets(item["turns"][0]):
                    seen.clear()
                    accepted, _ = planner._side_options(side, None)
                    out.write(json.dumps({"id": item["id"], "kind": item["kind"], "side": side,
                                          "expect": item["expect"], "read": seen.get("read"),
                                          "accepted": [j.paper.paper_id for j in accepted]}) + "\n")


def table() -> None:
    from assistant.answer.sides import describes_a_paper_here

    rows = [json.loads(line) for line in OUT.open()]
    refused = [r for r in rows if r.get("read") and not r["accepted"]]
    print(f"{len(rows)} sides, {len(refused)} read and refused at the question threshold")
    print("T      right  wrong   (names, fragments, cited works: right wrong)")
    for t in THRESHOLDS:
        counts = {True: [0, 0], False: [0, 0]}  # described: [right, wrong]
        for r in refused:
            pid, p, _ = r["read"][0]
            if p >= t:
                counts[describes_a_paper_here(r["side"])][pid not in r["expect"]] += 1
        print(f"{t:<6} {counts[True][0]:5d}  {counts[True][1]:5d}   {counts[False][0]:5d} {counts[False][1]:5d}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", action="store_true")
    if ap.parse_args().record:
        record()
    table()
