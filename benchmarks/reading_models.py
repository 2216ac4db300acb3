"""Reading models side by side on blind question sets, from one pass of readings.

    .venv/bin/python benchmarks/reading_models.py collect [SET ...]      # the readings (slow)
    .venv/bin/python benchmarks/reading_models.py compare MODEL.json ...  # each model (instant)

`collect` asks every single-turn question (answerable "qa" and "claim", out-of-corpus "none")
of the blind reworded sets (SET: a name of evaluate.py's, e.g. `scifact-heldout` for the 150
SciFact claims it asks) with the packaged model reading (`--reading local`, no prose) and keeps,
per question, what was cited and, for each judgement the model read, each read candidate's
(gate p, yes, lead). The readings
do not depend on the reading model, so `compare` judges them again with each model file given
(the shipped `assistant/data/reading_model.json` first) and prints per set and level:
answerable questions whose paper is cited, wrong papers, out-of-corpus questions refused. For
the model that ran the collection its simulated decisions must equal what was cited (printed as
"mismatches"). Multi-part questions (several judgements) keep what was cited for every model.
Questions are appended to benchmarks/.stores/reading_models.jsonl (an interrupted run resumes).
"""
from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import ROOT, open_corpus, read_jsonl  # noqa: E402
from evaluate import DEFAULT_SETS, load_items  # noqa: E402

OUT = ROOT / "benchmarks" / ".stores" / "reading_models.jsonl"
ANSWERABLE = ("qa", "claim")
SETS = ("seed-reworded", "seed-reworded-2", "seed-reworded-3", "arxiv_math-reworded",
        "arxiv_math-reworded-2", "ml_conf-reworded", "ml_conf-reworded-2")
SCIFACT_CLAIMS = 150  # evaluate.py's --scifact-limit default


def collect(sets: list[str]) -> None:
    """Ask each set's single-turn questions, recording the gate's and the reading's view."""
    os.environ["PAPER_ASSISTANT_RELEVANCE__READING"] = "local"
    import assistant.answer.plan as plan
    from assistant.answer import reading

    seen: dict = {}
    chosen, read = plan.Planner._chosen, reading.Reader.read

    def chosen_recorded(self, question, judged, singular, plural):  # one call per judgement
        seen.setdefault("calls", []).append({})
        return chosen(self, question, judged, singular, plural)

    def read_recorded(self, question, judged):
        result = read(self, question, judged)
        if result is not None:
            seen["calls"][-1]["read"] = [(j.paper.paper_id, j.features["gate_p"], j.features["yes"],
                                          j.features["yes_lead"]) for j in result.read]
        return result

    plan.Planner._chosen, reading.Reader.read = chosen_recorded, read_recorded
    done = {r["id"] for r in read_jsonl(OUT)} if OUT.exists() else set()
    with OUT.open("a") as out:
        for name in sets:
            corpus, path = DEFAULT_SETS[name]
            pa = open_corpus(corpus)
            for item in load_items(corpus, path, pa, SCIFACT_CLAIMS):  # seed keys as paper ids
                if item["kind"] not in ANSWERABLE + ("none",) or len(item["turns"]) != 1 or item["id"] in done:
                    continue
                seen.clear()
                answer = pa.ask(item["turns"][0])
                out.write(json.dumps({
                    "id": item["id"], "set": name, "kind": item["kind"], "level": item.get("level"),
                    "expect": item["expect"],
                    "cited": [c.paper_id for c in answer.citations], "calls": seen.get("calls", [])}) + "\n")
                out.flush()


def decided(model, item: dict) -> list[str]:
    """What `model` would cite: the best read candidate if it reaches the threshold; what was
    cited when the model did not decide (the gate was sure, nothing was read, several parts)."""
    calls = item["calls"]
    if len(calls) != 1 or "read" not in calls[0]:
        return item["cited"]
    best = max((model.proba(g, y, lead), pid) for pid, g, y, lead in calls[0]["read"])
    return [best[1]] if best[0] >= model.threshold else []


def compare(paths: list[str]) -> None:
    from assistant.answer.reading import MODEL_PATH, ReadingModel

    items = read_jsonl(OUT)
    for path in [str(MODEL_PATH)] + paths:
        model = ReadingModel.load(Path(path))
        tally: dict = collections.defaultdict(collections.Counter)
        mismatches = 0
        for item in items:
            cited = decided(model, item)
            mismatches += bool(cited) != bool(item["cited"]) or bool(cited) and cited[0] not in item["cited"]
            t = tally[(item["set"], f"{item['kind']}/{item['level']}")]
            t["n"] += 1
            right = bool(set(cited) & set(item["expect"]))
            answerable = item["kind"] in ANSWERABLE
            t["right" if answerable else "refused"] += right if answerable else not cited
            t["wrong"] += answerable and bool(cited) and not right
        print(f"== {path}: w_gate {model.w_gate:.2f} (floor {model.gate_floor}) w_yes {model.w_yes:.2f} "
              f"w_lead {model.w_lead:.2f} b {model.intercept:.2f} at {model.threshold:.3f}; "
              f"differs from what was cited: {mismatches}")
        for name in dict.fromkeys(i["set"] for i in items):
            rows = {k[1]: v for k, v in tally.items() if k[0] == name}
            qa = [v for k, v in rows.items() if k.split("/")[0] in ANSWERABLE]
            none = [v for k, v in rows.items() if k.startswith("none")]
            far = rows.get("qa/far", collections.Counter())
            right, wrong = sum(v["right"] for v in qa), sum(v["wrong"] for v in qa)
            print(f"  {name:22s} answerable {right}/{sum(v['n'] for v in qa)} "
                  f"(far {far['right']}/{far['n']}), wrong paper {wrong} "
                  f"(precision {right / max(1, right + wrong):.2f}), "
                  f"out-of-corpus refused {sum(v['refused'] for v in none)}/{sum(v['n'] for v in none)}")


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("collect", "compare"):
        print(__doc__)
        return 2
    if sys.argv[1] == "collect":
        collect(sys.argv[2:] or list(SETS))
    else:
        compare(sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
