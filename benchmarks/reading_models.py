"""Reading models side by side on blind question sets, from one pass of readings.

    .venv/bin/python benchmarks/reading_models.py collect [SET ...]      # the readings (slow)
    .venv/bin/python benchmarks/reading_models.py compare MODEL.json ...  # each model (instant)
    .venv/bin/python benchmarks/reading_models.py threshold [--write MODEL.json]  # instant

`collect` asks every single-turn question (answerable "qa" and "claim", out-of-corpus "none")
of the blind reworded sets (SET: a name of evaluate.py's, e.g. `scifact-heldout` for the 150
SciFact claims it asks) with the packaged model reading (`--reading local`, no prose) and keeps,
per question, what was cited and, for each judgement the model read, each read candidate's
(gate p, yes, lead). The readings
do not depend on the reading model, so `compare` judges them again with each model file given
(the shipped `assistant/data/reading_model.json` first) and prints per set and level:
answerable questions whose paper is cited, wrong papers, out-of-corpus questions refused. For
the model that ran the collection its simulated decisions must equal what was cited (printed as
"mismatches"). `threshold` chooses the shipped weights' threshold on the collected questions
(the most right answers minus wrong papers and answered out-of-corpus questions). Multi-part
questions (several judgements) keep what was cited for every model.
Questions are appended to benchmarks/.stores/reading_models.jsonl, or $READING_MODELS_OUT (an
interrupted run resumes).
"""
from __future__ import annotations

import collections
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import ROOT, open_corpus, read_jsonl  # noqa: E402
from evaluate import DEFAULT_SETS, load_items  # noqa: E402

# READING_MODELS_OUT: another file, so that two collections can run side by side
OUT = Path(os.environ.get("READING_MODELS_OUT", ROOT / "benchmarks" / ".stores" / "reading_models.jsonl"))
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

    def chosen_recorded(self, question, judged, singular, plural, **options):  # one call per judgement
        seen.setdefault("calls", []).append({})
        return chosen(self, question, judged, singular, plural, **options)

    def read_recorded(self, question, judged):
        if self.read_choice is None:  # record the likelihood gains even if the model does not weigh them
            self.read_choice = getattr(getattr(self.choose, "__self__", None), "read_choice", None)
        result = read(self, question, judged)
        if result is not None:
            seen["calls"][-1]["read"] = [(j.paper.paper_id, j.features["gate_p"], j.features["yes"],
                                          j.features["yes_lead"], j.features.get("gain"),
                                          j.features.get("gain_lead")) for j in result.read]
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
    """What `model` would cite: the read candidates that reach its threshold, best first (as
    Reader.read accepts them); what was cited when the model did not decide (the gate was sure,
    nothing was read, several parts). Judge.choose may then keep fewer (one for a singular
    question, close seconds for others), which the collection does not record: those questions
    count among the mismatches."""
    calls = item["calls"]
    if len(calls) != 1 or "read" not in calls[0]:
        return item["cited"]
    read = calls[0]["read"]
    if model.likelihood and all(len(r) > 4 and r[4] is not None for r in read):
        model = model.likelihood
    judged = sorted(((model.proba(*r[1:]), r[0]) for r in read), reverse=True)
    return [pid for p, pid in judged if p >= model.threshold]


def tallied(model, items: list[dict]) -> tuple[dict, int]:
    """Per (set, kind/level): n, right, wrong (answerable, no right paper cited), extra (right,
    with another paper beside it), refused (out-of-corpus); and how many items the model's
    decision differs from what was cited."""
    tally: dict = collections.defaultdict(collections.Counter)
    mismatches = 0
    for item in items:
        cited = decided(model, item)
        mismatches += set(cited) != set(item["cited"])
        t = tally[(item["set"], f"{item['kind']}/{item['level']}")]
        t["n"] += 1
        right = bool(set(cited) & set(item["expect"]))
        if item["kind"] in ANSWERABLE:
            t["right"] += right
            t["wrong"] += bool(cited) and not right
            t["extra"] += right and bool(set(cited) - set(item["expect"]))
        else:
            t["refused"] += not cited
    return tally, mismatches


def net(tally: dict) -> int:
    """Right answers minus wrong ones and answered out-of-corpus questions."""
    return sum(t["right"] - t["wrong"] - (t["n"] - t["refused"]) * k.startswith("none")
               for (_, k), t in tally.items())


def compare(paths: list[str]) -> None:
    from assistant.answer.reading import MODEL_PATH, ReadingModel

    items = read_jsonl(OUT)
    for path in [str(MODEL_PATH)] + paths:
        model = ReadingModel.load(Path(path))
        tally, mismatches = tallied(model, items)
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
                  f"(far {far['right']}/{far['n']}), wrong paper {wrong}, "
                  f"right with another paper {sum(v['extra'] for v in qa)}, "
                  f"out-of-corpus refused {sum(v['refused'] for v in none)}/{sum(v['n'] for v in none)}")


def threshold(args: list[str]) -> None:
    """The threshold with the best net (right - wrong - answered out-of-corpus) on the collected
    readings, for the shipped model's weights; ties: the lower. --write PATH: the model with it."""
    from assistant.answer.reading import MODEL_PATH, ReadingModel

    items = read_jsonl(OUT)
    model = ReadingModel.load(MODEL_PATH)
    grid = [round(0.2 + 0.025 * i, 3) for i in range(31)]
    nets = {}
    for t in grid:
        nets[t] = net(tallied(replace(model, threshold=t), items)[0])
        print(f"  threshold {t:.3f}: net {nets[t]}")
    best = max(grid, key=lambda t: (nets[t], -t))
    print(f"best: {best:.3f} (net {nets[best]}; shipped {model.threshold:.3f}: "
          f"net {net(tallied(model, items)[0])}) on {len(items)} questions of "
          f"{sorted({i['set'] for i in items})}")
    if "--write" in args:
        path = Path(args[args.index("--write") + 1])
        chosen = replace(model, threshold=best, provenance={
            **model.provenance, "threshold_from": {
                "by": "benchmarks/reading_models.py threshold", "sets": sorted({i["set"] for i in items}),
                "questions": len(items), "net": nets[best], "was": model.threshold}})
        path.write_text(json.dumps(chosen.to_json(), indent=1, default=int))
        print(f"wrote {path}")


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("collect", "compare", "threshold"):
        print(__doc__)
        return 2
    if sys.argv[1] == "collect":
        collect(sys.argv[2:] or list(SETS))
    elif sys.argv[1] == "threshold":
        threshold(sys.argv[2:])
    else:
        compare(sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
