"""Follow-ups that name no paper: how sure the reading must be that they ask about the paper in focus.

    .venv/bin/python benchmarks/calibrate_focus.py            # the table, from the recorded rows
    .venv/bin/python benchmarks/calibrate_focus.py --record   # read them again (~20 min)

"Which variables get bisected at each iteration?" right after an answer about one paper asks about
that paper, though it names none; "What's a good way to keep a sourdough starter alive?" after the
same answer does not. For each message below, the history is one earlier question and an answer
that cited one paper (the focus), the message is parsed as the engine parses it (answer/query.py),
and when the parse leaves it a follow-up candidate (a question that refers to no paper and asks for
no paper: `Query.follow_up`) the packaged model reads the focus paper against it
(RelevancePolicy.reading=local, reading.Reader.yes). Rows go to
benchmarks/calibration/focus_reading.jsonl.

- follow-ups (the focus is right): the last turn of every followup_detail item of the round-1 to
  round-3 conversation sets, after its previous turn, the focus being its expected paper;
- new questions (the focus is wrong): the second turn of every "those two" item of the same sets
  ("And what about the one on …?"), the focus being its first turn's paper; and every question of
  the seed, arXiv math and ml_conf dev sets after the previous in-corpus question of its set about
  another paper, the focus being that paper.

The table counts the candidates retrieval ranks the focus first for (taken as follow-ups without
reading), then, among the others the gate is not sure of another paper for, follow-ups taken as
about the focus at yes-probability T (right) and new questions taken so (wrong). RelevancePolicy.follow_up_threshold is chosen from it; rounds 4 and the test
sets are not used.
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
OUT = HERE / "calibration" / "focus_reading.jsonl"
Q = HERE / "questions"
CONVERSATIONS = [(c, Q / f"{c}_conversations{s}.jsonl") for c in ("seed", "arxiv_math", "ml_conf")
                 for s in ("", "_2", "_3")]
DEV = [("seed", HERE.parent.parent / "shared" / "eval" / "seed_dev.jsonl"),
       ("arxiv_math", Q / "arxiv_math_dev.jsonl"), ("ml_conf", Q / "ml_conf_dev.jsonl")]
THRESHOLDS = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def cases(corpus: str, pa, judge_first) -> list[dict]:
    """(message, previous question, focus paper, whether the focus is right) of one corpus."""
    from evaluate import load_items

    out = []
    for c, path in CONVERSATIONS:
        if c != corpus:
            continue
        for it in load_items(corpus, path, pa, 0):
            if it["kind"] == "followup_detail" and len(it["turns"]) >= 2:
                out.append(dict(id=it["id"], kind="follow_up", message=it["turns"][-1],
                                previous=it["turns"][-2], focus=it["expect"][0], right=True))
            elif it["kind"] == "those_two" and len(it["turns"]) >= 3 and len(it["expect"]) == 2:
                first = judge_first(it["turns"][0], it["expect"])  # the first turn's paper
                out.append(dict(id=it["id"], kind="new_topic", message=it["turns"][1],
                                previous=it["turns"][0], focus=first, right=False))
    for c, path in DEV:
        if c != corpus or not Path(path).exists():
            continue
        items = load_items(corpus, path, pa, 0)
        answered = [it for it in items if it.get("expect")]
        for it in items:
            before = [o for o in answered if o["id"] != it["id"] and not set(o["expect"]) & set(it.get("expect") or [])]
            if not before:
                continue
            other = before[items.index(it) % len(before)]
            out.append(dict(id=it["id"], kind="new_question", message=it["turns"][0],
                            previous=other["turns"][0], focus=other["expect"][0], right=False))
    return out


def record() -> None:
    os.environ["PAPER_ASSISTANT_RELEVANCE__READING"] = "local"
    from corpora import open_corpus
    from assistant.answer.query import parse
    from assistant.types import Turn

    OUT.parent.mkdir(exist_ok=True)
    with OUT.open("w") as out:
        for corpus in ("seed", "arxiv_math", "ml_conf"):
            pa = open_corpus(corpus, backend="local")
            planner = pa.engine.planner
            reader = planner.reader()
            categories = sorted(pa.store.corpus_stats().categories)

            def judge_first(message, expect):
                judged = planner.judge.judge(message, [h for h in pa.retriever.search(message, k=20)])
                ranked = [j.paper.paper_id for j in judged if j.paper.paper_id in expect]
                return ranked[0] if ranked else expect[0]

            for case in cases(corpus, pa, judge_first):
                history = [Turn(role="user", content=case["previous"]),
                           Turn(role="assistant", content="", paper_ids=[case["focus"]])]
                q = parse(case["message"], history, None, describe=planner._describe,
                          categories=categories, read_intent=planner._read_intent)
                row = dict(case, corpus=corpus, intent=q.intent, follow_up=q.follow_up,
                           references=q.references)
                if q.follow_up:
                    paper = pa.store.paper(case["focus"])
                    row["yes"] = reader.yes(case["message"], paper)
                    hits = pa.retriever.search(q.topic or case["message"], k=planner.policy.candidates)
                    judged = planner.judge.judge(q.topic or case["message"], hits)
                    row["gate_best"] = [judged[0].paper.paper_id, judged[0].p] if judged else None
                    ranked = [j.paper.paper_id for j in judged]
                    row["focus_rank"] = ranked.index(case["focus"]) if case["focus"] in ranked else None
                    row["focus_p"] = judged[ranked.index(case["focus"])].p if case["focus"] in ranked else None
                out.write(json.dumps(row) + "\n")
                out.flush()


def table() -> None:
    from assistant.answer.relevance import default_model as gate_model

    rows = [json.loads(line) for line in OUT.open()]
    for kind in ("follow_up", "new_topic", "new_question"):
        some = [r for r in rows if r["kind"] == kind]
        print(f"{kind}: {len(some)}, of which follow-up candidates by the parse: "
              f"{sum(bool(r['follow_up']) for r in some)}")
    read = [r for r in rows if "yes" in r]
    first = [r for r in read if r["focus_rank"] == 0]
    sure = gate_model().threshold  # the gate is sure of another paper: not read (plan._followed_up)
    rest = [r for r in read if r["focus_rank"] != 0 and (r["gate_best"] or [None, 0.0])[1] < sure]
    print(f"ranked first by retrieval: {sum(r['right'] for r in first)} follow-ups, "
          f"{sum(not r['right'] for r in first)} new questions")
    print(f"the others, unless the gate is sure of another paper ({len(rest)}), taken at yes >= T:")
    print("T      follow-ups  new questions   (of {} and {})".format(
        sum(r["right"] for r in rest), sum(not r["right"] for r in rest)))
    for t in THRESHOLDS:
        right = sum(r["right"] and r["yes"] >= t for r in rest)
        wrong = sum(not r["right"] and r["yes"] >= t for r in rest)
        print(f"{t:<6} {right:5d}  {wrong:5d}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--record", action="store_true")
    if ap.parse_args().record:
        record()
    table()
