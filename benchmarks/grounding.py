"""How good is the citation check? Model sentences, labelled blind, against the checker's verdicts.

    .venv/bin/python benchmarks/grounding.py generate   # the local model answers; sentences saved
    (a session that sees neither the checker nor its verdicts labels benchmarks/grounding/labels.jsonl)
    .venv/bin/python benchmarks/grounding.py score      # check precision / recall against the labels

`generate` asks the seed corpus and ml_conf questions (benchmarks/questions/*_dev.jsonl,
tests/data/seed_heldout.jsonl, plus summaries and comparisons), keeps the model's raw prose and
splits it into sentences. For each sentence and each paper it cites (a marker naming a source
of that turn), one pair is written to sentences.jsonl with the paper's abstract: that is all a
labeller sees. The checker's verdict on each pair (marker kept, re-pointed or dropped) goes to
verdicts.jsonl, which the labeller never reads. `score` prints, over the labelled pairs:
  precision  of the markers the checker keeps, the share the labeller says the paper supports
  recall     of the pairs the labeller says are supported, the share the checker keeps
and the same for whole sentences (a sentence shown vs. a sentence wholly supported).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import ROOT, open_corpus, read_jsonl  # noqa: E402

from assistant.answer.ground import question_allowance, split_answer  # noqa: E402
from assistant.answer.markers import MARKER_RE, parse_markers  # noqa: E402
from assistant.llm.errors import BackendError  # noqa: E402
from assistant.text import terms  # noqa: E402

OUT = ROOT / "benchmarks" / "grounding"
EXTRA = {"seed": ["Summarize what this collection says about causal inference.",
                  "Compare Top-W with Verbalized Sampling.",
                  "What does this collection say about LLM agents and memory?",
                  "Summarize the papers on graph learning."],
         "ml_conf": ["Summarize the papers on adversarial robustness.",
                     "What does this collection say about graph neural networks?"]}


def questions(corpus: str, limit: int) -> list[str]:
    paths = {"seed": ROOT / "tests" / "data" / "seed_heldout.jsonl",
             "ml_conf": ROOT / "benchmarks" / "questions" / "ml_conf_dev.jsonl"}
    items = [r for r in read_jsonl(paths[corpus]) if len(r["turns"]) == 1 and r.get("expect")]
    return [r["turns"][0] for r in items][:limit] + EXTRA[corpus]


def raw_prose(pa, question: str) -> tuple[object, str]:
    """The planner's plan and the model's unchecked prose for it."""
    eng = pa.engine
    plan = eng.planner.plan(question, [], None, None, None)
    if plan.prompt is None or plan.abstain:
        return plan, ""
    llm = eng._get_llm([])
    try:
        return plan, "".join(d for kind, d in eng._stream_llm(llm, plan.prompt, plan.max_tokens)
                             if kind == "text")
    except BackendError as exc:  # a slow or failing turn is skipped, not the whole run
        print(f"  skipped ({type(exc).__name__})", flush=True)
        return plan, ""


def generate(args) -> None:
    OUT.mkdir(exist_ok=True)
    pairs, verdicts = [], []
    for corpus in ("seed", "ml_conf"):
        pa = open_corpus(corpus, backend="local", llm_timeout=600)
        for question in questions(corpus, args.per_corpus):
            plan, text = raw_prose(pa, question)
            by_n = {s.n: s for s in plan.sources}
            allowed = question_allowance(question)
            for sentence in split_answer(text):
                cited = [n for g in MARKER_RE.findall(sentence) for n in parse_markers(g) if n in by_n]
                if not cited:
                    continue
                v = pa.engine.grounder.verdict(sentence, by_n, True, allowed)
                claim = MARKER_RE.sub("", sentence).strip()
                for n in dict.fromkeys(cited):
                    pid = f"{len(pairs):04d}"
                    paper = by_n[n].paper
                    pairs.append({"id": pid, "corpus": corpus, "question": question, "sentence": claim,
                                  "paper_title": paper.title, "paper_authors": paper.authors[:3],
                                  "abstract": paper.abstract})
                    verdicts.append({"id": pid, "kept": n in v.markers, "why": v.why,
                                     "repointed_to_other": bool(v.markers) and n not in v.markers,
                                     "sentence_shown": v.kept})
            print(f"{corpus}: {question[:70]!r}: {len(pairs)} pairs so far", flush=True)
    write_jsonl(OUT / "sentences.jsonl", pairs)
    write_jsonl(OUT / "verdicts.jsonl", verdicts)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f} ({a}/{b})" if b else "n/a"


def score(args) -> None:
    pairs = {r["id"]: r for r in read_jsonl(OUT / "sentences.jsonl")}
    verdicts = {r["id"]: r for r in read_jsonl(OUT / "verdicts.jsonl")}
    labels = {r["id"]: r["supported"] for r in read_jsonl(OUT / "labels.jsonl")}
    # a sentence with no words left once its markers are removed makes no claim to label
    ids = [i for i in pairs if i in labels and terms(pairs[i]["sentence"])]
    kept = [i for i in ids if verdicts[i]["kept"]]
    supported = [i for i in ids if labels[i]]
    print(f"labelled pairs {len(ids)}; supported per labeller {ratio(len(supported), len(ids))}")
    print(f"marker precision (kept & supported / kept)       {ratio(sum(labels[i] for i in kept), len(kept))}")
    print(f"marker recall    (kept & supported / supported)  {ratio(sum(verdicts[i]['kept'] for i in supported), len(supported))}")
    unsupported = [i for i in ids if not labels[i]]
    print(f"unsupported pairs caught (not kept / unsupported) {ratio(sum(not verdicts[i]['kept'] for i in unsupported), len(unsupported))}")
    print(f"model prose with no verdict-kept marker: {ratio(len(ids) - len(kept), len(ids))} of pairs")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=["generate", "score"])
    ap.add_argument("--per-corpus", type=int, default=24)
    args = ap.parse_args()
    generate(args) if args.step == "generate" else score(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
