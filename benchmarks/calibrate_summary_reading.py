"""Summary membership by reading: measure which rule decides which papers a summary holds.

    .venv/bin/python benchmarks/calibrate_summary_reading.py [--read N] [--sets A,B] [--check C]

A summary request ("the causality work, for a newcomer") is parsed as the engine parses it; its
topic's candidates are judged by the gate as the engine judges them; the N best (the gate's
order) are read by the packaged model with the verdict prompt, one at a time, the topic as the
question (cached in benchmarks/.stores/summary_yes-HASH.jsonl, HASH naming prompts/verdict.txt).
Then each membership rule is scored like `benchmarks/evaluate.py` scores a summary: hit (a gold
paper cited), pooled recall and precision, out-of-corpus topics refused:

  gate+fallback  the rule before (d440079): the gate's members; the reading only when it
             accepts nothing
  wW tT      the engine's rule: the N read papers are members when topic_proba(gate p, yes, W)
             (answer/reading.py) >= T; the gate's summary threshold decides the unread ones,
             only if some read paper is a member: the reading decides

W and T are chosen on the --sets (the summary sets used while mending the parser) for the
most hits + out-of-corpus refusals, then F1 of membership; --check scores it on a set not used
for choosing. Items the parser does not read as a topical summary are reported and skipped.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate_reading import make_reader  # noqa: E402
from corpora import ROOT, open_corpus, read_jsonl, seed_ids_by_key  # noqa: E402

from assistant.answer.query import parse  # noqa: E402
from assistant.answer.reading import default_model as default_reading_model, leads, topic_read  # noqa: E402
from assistant.config import RelevancePolicy  # noqa: E402

VERDICT_PROMPT = ROOT / "prompts" / "verdict.txt"
CACHE = (ROOT / "benchmarks" / ".stores"
         / f"summary_yes-{hashlib.sha1(VERDICT_PROMPT.read_bytes()).hexdigest()[:8]}.jsonl")
QUESTIONS = ROOT / "benchmarks" / "questions"


def topic_of(planner, message: str):
    """The message's typed reading as the engine's planner makes it (intent, topic)."""
    categories = sorted(planner.store.corpus_stats().categories)
    return parse(message, [], None, describe=planner._describe, categories=categories,
                 read_intent=planner._read_intent)


def gather(pa, items: list[dict], n_read: int) -> list[dict]:
    """Each summary/none item: its topic, the gate's candidates (p), the N best read (yes)."""
    planner = pa.engine.planner
    cache = {}
    if CACHE.exists():
        cache = {r["key"]: r["yes"] for r in map(json.loads, CACHE.read_text().splitlines()) if r}
    reader = None
    t0, done = time.perf_counter(), 0
    records = []
    with CACHE.open("a") as out:
        for it in items:
            q = topic_of(planner, it["turns"][-1])
            if q.intent != "summary" or not q.topic:
                records.append({"item": it, "skipped": f"{q.intent} / topic {q.topic!r}"})
                continue
            _, judged = planner._judged(q.topic, None, pa.settings.relevance.summary_candidates,
                                        topic=True)
            yes = []
            for j in judged[:n_read]:
                key = f"seed|{q.topic}|{j.paper.paper_id}"
                if key not in cache:
                    reader = reader or make_reader(pa.store)
                    cache[key] = reader.yes(q.topic, j.paper)
                    out.write(json.dumps({"key": key, "yes": cache[key]}) + "\n")
                    out.flush()
                    done += 1
                yes.append(cache[key])
            records.append({"item": it, "topic": q.topic, "judged": judged, "yes": yes,
                            "gate_members": [j.paper.paper_id for j in pa.engine.judge.members(judged)]})
    if done:
        print(f"  {done} read, {(time.perf_counter() - t0) / done:.2f} s each", file=sys.stderr)
    return records


def by_reading(rec: dict, judge, t: float, w: float, n_read: int, m: float | None = None) -> list[str]:
    """The engine's rule (plan.Planner._read_members): the `n_read` best read and judged as
    `Reader.read_topic` judges them (`topic_read`); when one is a member, the unread ones at the
    summary threshold join them."""
    read = topic_read(rec["judged"][:n_read], rec["yes"], t, w, m)
    if not read.accepted:
        return []
    rest = rec["judged"][n_read:]
    return [j.paper.paper_id for j in read.accepted + judge.relevant(rest, judge.summary_threshold)]


def shipped(rec: dict, judge, reading_papers: int) -> list[str]:
    """Today's rule: the gate's members; when it accepts none, the `reading_papers` best read
    and judged by the shipped reading model (with the lead), then unread ones at the summary
    threshold (plan.Planner._read_members)."""
    if rec["gate_members"]:
        return rec["gate_members"]
    model = default_reading_model()
    read = rec["judged"][:reading_papers]
    yes = rec["yes"][:reading_papers]
    accepted = [j.paper.paper_id for j, y, lead in zip(read, yes, leads(yes))
                if model.proba(j.p, y, lead) >= model.threshold]
    if not accepted:
        return []
    return accepted + [j.paper.paper_id for j in judge.relevant(rec["judged"], judge.summary_threshold)
                       if j.paper.paper_id not in accepted]


def score(records: list[dict], rule) -> dict:
    s = {"n": 0, "hit": 0, "tp": 0, "cited": 0, "expected": 0, "none": 0, "refused": 0}
    for rec in records:
        if "skipped" in rec:
            continue
        cited = set(rule(rec))
        expect = set(rec["item"]["expect"])
        if not expect:
            s["none"] += 1
            s["refused"] += not cited
            continue
        s["n"] += 1
        s["hit"] += bool(cited & expect)
        s["tp"] += len(cited & expect)
        s["cited"] += len(cited)
        s["expected"] += len(expect)
    s["recall"] = s["tp"] / max(s["expected"], 1)
    s["precision"] = s["tp"] / max(s["cited"], 1)
    s["f1"] = 2 * s["recall"] * s["precision"] / max(s["recall"] + s["precision"], 1e-9)
    return s


def line(name: str, s: dict) -> str:
    return (f"{name:<12} hit {s['hit']}/{s['n']}  recall {s['recall']:.2f}  precision "
            f"{s['precision']:.2f}  F1 {s['f1']:.2f}  refused {s['refused']}/{s['none']}")


def load(names: list[str], keys: dict) -> list[dict]:
    items = []
    for name in names:
        for it in read_jsonl(QUESTIONS / f"{name}.jsonl"):
            if it["kind"] in ("summary", "none"):
                it["expect"] = [keys.get(e, e) for e in it["expect"]]
                it["set"] = name
                items.append(it)
    return items


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--read", type=int, default=8, help="candidates read per summary topic")
    ap.add_argument("--sets", default="seed_field_summaries,seed_field_summaries_2,seed_field_summaries_3")
    ap.add_argument("--check", default="", help="a set scored with the chosen threshold, not used to choose it")
    ap.add_argument("--json", type=Path, help="write every record's topic, p, yes, gold here")
    args = ap.parse_args()

    pa = open_corpus("seed")
    keys = seed_ids_by_key(pa)
    judge = pa.engine.judge
    fit_items = load(args.sets.split(","), keys)
    check_items = load([args.check], keys) if args.check else []
    records = gather(pa, fit_items + check_items, args.read)
    fit_recs = [r for r in records if r["item"]["set"] != args.check]
    check_recs = [r for r in records if r["item"]["set"] == args.check]
    for r in records:
        if "skipped" in r:
            print(f"  skipped {r['item']['id']}: {r['skipped']}", file=sys.stderr)

    papers = RelevancePolicy().reading_papers
    grid = [(w, round(0.50 + 0.01 * i, 2)) for w in (0.0, 0.1, 0.2, 0.3, 0.5) for i in range(46)]
    scored = {g: score(fit_recs, lambda r, g=g: by_reading(r, judge, g[1], g[0], args.read)) for g in grid}
    best = max(grid, key=lambda g: (scored[g]["hit"] + scored[g]["refused"], scored[g]["f1"], g[1]))
    print(f"fitting sets ({args.sets}), {args.read} read per topic:")
    print(line("gate+fallback", score(fit_recs, lambda r: shipped(r, judge, papers))))
    for g in [g for g in grid if g[1] in (0.7, 0.75, 0.8, 0.85)] + [best]:
        print(line(f"w{g[0]:.1f} t{g[1]:.2f}", scored[g]) + ("   <- chosen" if g == best else ""))
    default = (RelevancePolicy().summary_reading_gate_weight, RelevancePolicy().summary_reading_threshold)
    # a lower bar for the others once one read paper shows the topic is here: refusals cannot
    # change, so it is chosen for the most hits, then F1
    w, t = default
    members = [round(0.40 + 0.01 * i, 2) for i in range(int(round((t - 0.40) * 100)) + 1)]
    by_m = {m: score(fit_recs, lambda r, m=m: by_reading(r, judge, t, w, args.read, m)) for m in members}
    best_m = max(members, key=lambda m: (by_m[m]["hit"] + by_m[m]["refused"], by_m[m]["f1"], m))
    print(f"member bar once one read paper reaches w{w:.1f} t{t:.2f}:")
    for m in [m for m in members if round(m * 100) % 5 == 0] + [best_m]:
        print(line(f"  m{m:.2f}", by_m[m]) + ("   <- chosen" if m == best_m else ""))
    if check_recs:
        print(f"check set {args.check}:")
        for m in dict.fromkeys([t, best_m]):
            print(line(f"  m{m:.2f}", score(check_recs, lambda r, m=m: by_reading(r, judge, t, w, args.read, m))))
    for name, recs in (("fitting sets", fit_recs), (f"check set {args.check}", check_recs)):
        if not recs:
            continue
        print(f"{name}:")
        print(line("gate+fallback", score(recs, lambda r: shipped(r, judge, papers))))
        for g in dict.fromkeys([best, default]):
            print(line(f"w{g[0]:.1f} t{g[1]:.2f}", score(recs, lambda r, g=g: by_reading(r, judge, g[1], g[0], args.read))))
    if args.json:
        args.json.write_text(json.dumps([
            {"id": r["item"]["id"], "set": r["item"]["set"], "expect": r["item"]["expect"],
             "skipped": r.get("skipped"), "topic": r.get("topic"),
             "candidates": [{"id": j.paper.paper_id, "p": round(j.p, 4),
                             "yes": round(y, 4) if y is not None else None}
                            for j, y in zip(r.get("judged", []),
                                            r.get("yes", []) + [None] * 100)][:12]}
            for r in records], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
