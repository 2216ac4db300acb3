"""Reading models side by side on blind question sets, from one pass of readings.

    .venv/bin/python benchmarks/reading_models.py collect [SET ...]      # the readings (slow)
    .venv/bin/python benchmarks/reading_models.py compare MODEL.json ...  # each model (instant)

`collect` asks every single-turn question (answerable "qa" and out-of-corpus "none") of the
blind reworded sets (and, named `scifact_heldout`, the 150 SciFact claims `evaluate.py` asks) with the packaged model reading (`--reading local`, no prose) and keeps, per
question, the gate's three best candidates, whether the gate was sure (then it answers unread)
and, when the model read them, each one's (gate p, yes, lead), with what was cited. The readings
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

from corpora import ROOT, open_corpus, read_jsonl, seed_ids_by_key  # noqa: E402

QUESTIONS = ROOT / "benchmarks" / "questions"
OUT = ROOT / "benchmarks" / ".stores" / "reading_models.jsonl"
ANSWERABLE = ("qa", "claim")
SETS = ("seed_reworded", "seed_reworded_2", "seed_reworded_3", "arxiv_math_reworded",
        "arxiv_math_reworded_2", "ml_conf_reworded", "ml_conf_reworded_2")


def corpus_of(set_name: str) -> str:
    return next(c for c in ("seed", "arxiv_math", "ml_conf", "scifact") if set_name.startswith(c))


def items_of(set_name: str) -> list[dict]:
    """A blind set's questions, or (scifact_heldout) the SciFact claims evaluate.py asks."""
    if set_name == "scifact_heldout":
        from evaluate import scifact_heldout_items

        return scifact_heldout_items(150)
    return read_jsonl(QUESTIONS / f"{set_name}.jsonl")


def collect(sets: list[str]) -> None:
    """Ask each set's single-turn questions, recording the gate's and the reading's view."""
    os.environ["PAPER_ASSISTANT_RELEVANCE__READING"] = "local"
    import assistant.answer.plan as plan
    from assistant.answer import reading

    seen: dict = {}
    chosen, read = plan.Planner._chosen, reading.Reader.read

    def chosen_recorded(self, question, judged, singular, plural):
        sure = self.policy.reading_sure or self.judge.threshold
        seen.setdefault("calls", []).append({"sure": bool(judged) and judged[0].p >= sure,
                                             "top": [(j.paper.paper_id, j.p) for j in judged[:3]]})
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
            pa = open_corpus(corpus_of(name))
            keys = seed_ids_by_key(pa) if corpus_of(name) == "seed" else {}
            for item in items_of(name):
                if item["kind"] not in ANSWERABLE + ("none",) or len(item["turns"]) != 1 or item["id"] in done:
                    continue
                seen.clear()
                answer = pa.ask(item["turns"][0])
                out.write(json.dumps({
                    "id": item["id"], "set": name, "kind": item["kind"], "level": item.get("level"),
                    "expect": [keys.get(e, e) for e in item["expect"]],
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
