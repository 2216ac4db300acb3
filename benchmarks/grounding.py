"""How good is the citation check? Model sentences, labelled blind, against the checker's verdicts.

    .venv/bin/python benchmarks/grounding.py generate   # the local model answers; sentences saved
    (a session that sees neither the checker nor its verdicts labels benchmarks/grounding/labels.jsonl)
    .venv/bin/python benchmarks/grounding.py score      # how many bad sentences the check catches

`generate` asks single-turn questions of the seed, ml_conf and arXiv math dev sets (lookups,
comparisons, summaries), keeps the local model's raw prose and splits it into sentences. For
each answer, turns.jsonl holds the question, the papers the model was given (number and paper
id: the shared corpora's text is not copied into this repository) and the model's finished
sentences with the markers it wrote; `--label-view` (outside the repository) holds the same with
each paper's title, all authors, year and whole abstract: that is all a labeller sees. The labeller says which of the turn's papers support each sentence
and whether every claim of it is backed by some paper of the turn (labels.jsonl: {"id",
"supported_by": [n, ...], "all_backed": bool}); from that and the markers the model wrote:
  supported      every claim backed, and every paper the sentence cites supports it
  uncited        every claim backed, no marker (the check should add the right one)
  misattributed  every claim backed, but it cites a paper that does not support it
  unsupported    some claim no paper of the turn backs
Good sentences are the supported and uncited ones, bad the misattributed and unsupported.
The checker's verdict on each sentence (markers kept, re-pointed, dropped) goes to
verdicts.jsonl, which the labeller never reads. `score` prints, for the check of the day the
sentences were generated and for today's:
  caught   of the misattributed or unsupported sentences, the share the check drops or re-points
           to a paper that supports it (the issue's aim: ≥ 95%)
  dropped  of the supported sentences, the share the check drops or re-points away (aim: ≤ 10%)
the precision of the markers the check shows, and the share of answers that keep some model
prose (the rest fall back to extracts).
A sentence cut off by the token limit is dropped by rule and not labelled.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import ROOT, open_corpus, read_jsonl  # noqa: E402

from assistant.answer.evidence import Source  # noqa: E402
from assistant.answer.ground import cited_in, ends_sentence, makes_claim, split_answer  # noqa: E402
from assistant.answer.query import question_allowance  # noqa: E402
from assistant.answer.markers import MARKER_RE  # noqa: E402
from assistant.llm.errors import BackendError  # noqa: E402

OUT = ROOT / "benchmarks" / "grounding"
QUESTIONS = ROOT / "benchmarks" / "questions"
QUESTION_FILES = {
    "seed": [ROOT / "tests" / "data" / "seed_heldout.jsonl", QUESTIONS / "seed_compare_dev.jsonl"],
    "ml_conf": [QUESTIONS / "ml_conf_dev.jsonl", QUESTIONS / "ml_conf_compare_dev.jsonl"],
    "arxiv_math": [QUESTIONS / "arxiv_math_dev.jsonl", QUESTIONS / "arxiv_math_compare_dev.jsonl"],
}
# Summaries write the most sentences per answer and are where prose misattributes most.
EXTRA = {"seed": ["Summarize what this collection says about causal inference.",
                  "Compare Top-W with Verbalized Sampling.",
                  "What does this collection say about LLM agents and memory?",
                  "Summarize the papers on graph learning."],
         "ml_conf": ["Summarize the papers on adversarial robustness.",
                     "What does this collection say about graph neural networks?",
                     "Summarize the work on generative adversarial networks in this collection.",
                     "Give me an overview of exploration in reinforcement learning."],
         "arxiv_math": ["Summarize the papers on random graphs.",
                        "What does this collection say about optimal transport?",
                        "Give me an overview of the work on stochastic differential equations."]}


def questions(corpus: str, kind: str = "") -> list[str]:
    """The corpus's answerable single-turn questions, then the extra summaries (`kind`: only
    the items of that kind, e.g. "compare")."""
    items = [r for path in QUESTION_FILES[corpus] for r in read_jsonl(path)
             if len(r["turns"]) == 1 and r.get("expect") and r.get("kind", "").startswith(kind)]
    return list(dict.fromkeys([r["turns"][0] for r in items] + ([] if kind else EXTRA[corpus])))


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


def labeller_view(turn: dict, papers: dict) -> dict:
    """The turn as a labeller reads it: each source with its title, all authors, year and whole
    abstract (written outside the repository: the shared corpora are not ours to copy in)."""
    def paper(s):
        p = papers[s["paper_id"]]
        return {"n": s["n"], "title": p.title, "authors": p.authors, "year": p.year,
                "category": p.category, "abstract": p.abstract}
    return turn | {"sources": [paper(s) for s in turn["sources"]]}


def checked_sentences(pa, question: str, plan, text: str) -> tuple[list[dict], list[dict]]:
    """(sentences a labeller sees, the checker's verdicts on them) for one answer."""
    by_n = {s.n: s for s in plan.sources}
    allowed = question_allowance(question)
    grounder = pa.engine.grounder
    shown, verdicts = [], []
    for sentence in split_answer(text):
        claim = MARKER_RE.sub("", sentence).strip()
        if not makes_claim(claim) or not ends_sentence(sentence):
            continue  # filler or cut off: dropped by rule, nothing to label
        cites = [n for n in cited_in(sentence) if n in by_n]
        v = grounder.verdict(sentence, by_n, True, allowed)
        shown.append({"sentence": sentence, "cites": cites})
        verdicts.append({"kept": v.kept, "markers": v.markers, "repointed": v.repointed,
                         "why": v.why})
    return shown, verdicts


def generate(args) -> None:
    out = Path(args.out)
    out.mkdir(exist_ok=True)
    turns, verdicts, views = [], [], []
    for corpus in args.corpora:
        pa = open_corpus(corpus, backend="local", llm_timeout=600)
        for question in questions(corpus, args.kind)[: args.per_corpus]:
            plan, text = raw_prose(pa, question)
            if not text:
                continue
            sentences, checks = checked_sentences(pa, question, plan, text)
            if not sentences:
                continue
            tid = f"{corpus}-{len(turns):03d}"
            for k, (s, c) in enumerate(zip(sentences, checks)):
                s["id"] = c["id"] = f"{tid}-{k}"
            turns.append({"turn": tid, "corpus": corpus, "question": question,
                          "sources": [{"n": s.n, "paper_id": s.paper.paper_id} for s in plan.sources],
                          "sentences": sentences})
            views.append(labeller_view(turns[-1], {s.paper.paper_id: s.paper for s in plan.sources}))
            verdicts += checks
            print(f"{corpus}: {question[:60]!r}: {len(verdicts)} sentences so far", flush=True)
            write_jsonl(out / "turns.jsonl", turns)  # as it goes: a long run can be stopped
            write_jsonl(out / "verdicts.jsonl", verdicts)
            write_jsonl(Path(args.label_view), views)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f} ({a}/{b})" if b else "n/a"


GOOD = ("supported", "uncited")
KINDS = GOOD + ("misattributed", "unsupported")


def label_of(cites: list[int], label: dict) -> str:
    if not label["all_backed"] or not label["supported_by"]:
        return "unsupported"
    if not cites:
        return "uncited"
    return "supported" if set(cites) <= set(label["supported_by"]) else "misattributed"


def outcome(verdict: dict, supported_by: set[int]) -> str:
    """What the check did, judged by the labels: "kept-right" (shown, every marker on a paper
    that supports it), "kept-wrong" or "dropped"."""
    if not verdict["kept"]:
        return "dropped"
    return "kept-right" if set(verdict["markers"]) <= supported_by else "kept-wrong"


def caught(kind: str, result: str) -> bool:
    """A bad sentence is caught when it is dropped, or, if only its citation was wrong,
    re-pointed to a paper that supports it."""
    return result == "dropped" or (kind == "misattributed" and result == "kept-right")


@lru_cache(maxsize=None)
def corpus_papers(corpus: str) -> dict:
    """paper id → Paper of a corpus's benchmark store (built from ../shared/data)."""
    return open_corpus(corpus).store.papers()


def sources_of(turn: dict) -> dict[int, Source]:
    """The papers a turn gave the model, looked up by id in its corpus."""
    papers = corpus_papers(turn["corpus"])
    return {s["n"]: Source(s["n"], papers[s["paper_id"]], []) for s in turn["sources"]}


@dataclass
class Labelled:
    """The labelled sentences of a folder, with what a check has to get right for each."""

    turns: list[dict]
    ids: list[str]
    cites: dict[str, list[int]]
    backed: dict[str, set[int]]  # the papers that support a sentence whose every claim is backed
    kinds: dict[str, str]

    @classmethod
    def read(cls, folder: Path = OUT, corpora: Optional[set[str]] = None) -> "Labelled":
        rows = {r["id"]: r for r in read_jsonl(folder / "labels.jsonl")}
        turns = [t for t in read_jsonl(folder / "turns.jsonl")
                 if any(s["id"] in rows for s in t["sentences"]) and (not corpora or t["corpus"] in corpora)]
        sentences = [s for t in turns for s in t["sentences"]
                     if s["id"] in rows and makes_claim(MARKER_RE.sub("", s["sentence"]))]
        return cls(turns, [s["id"] for s in sentences], {s["id"]: s["cites"] for s in sentences},
                   {s["id"]: set(rows[s["id"]]["supported_by"]) if rows[s["id"]]["all_backed"] else set()
                    for s in sentences},
                   {s["id"]: label_of(s["cites"], rows[s["id"]]) for s in sentences})

    def subset(self, ids: set[str]) -> "Labelled":
        turns = [t for t in self.turns if any(s["id"] in ids for s in t["sentences"])]
        keep = [i for i in self.ids if i in ids]
        return Labelled(turns, keep, {i: self.cites[i] for i in keep}, {i: self.backed[i] for i in keep},
                        {i: self.kinds[i] for i in keep})

    def verdicts(self, grounder) -> dict[str, dict]:
        """The check's verdict on every labelled sentence."""
        out = {}
        for turn in self.turns:
            by_n, allowed = sources_of(turn), question_allowance(turn["question"])
            for s in turn["sentences"]:
                if s["id"] in self.cites:
                    v = grounder.verdict(s["sentence"], by_n, True, allowed)
                    out[s["id"]] = {"kept": v.kept, "markers": v.markers}
        return out

    def figures(self, verdicts: dict[str, dict]) -> dict:
        bad = [i for i in self.ids if self.kinds[i] not in GOOD]
        good = [i for i in self.ids if self.kinds[i] in GOOD]
        result = {i: outcome(verdicts[i], self.backed[i]) for i in self.ids}
        shown = [(i, n) for i in self.ids if verdicts[i]["kept"] for n in verdicts[i]["markers"]]
        return {"sentences": len(self.ids), "bad": len(bad), "good": len(good),
                "caught": sum(caught(self.kinds[i], result[i]) for i in bad),
                "good_dropped": sum(result[i] != "kept-right" for i in good),
                "markers_shown": len(shown), "markers_right": sum(n in self.backed[i] for i, n in shown),
                "answers": len(self.turns),
                "answers_with_prose": sum(any(verdicts.get(s["id"], {}).get("kept") for s in t["sentences"])
                                          for t in self.turns)}


def report(name: str, f: dict) -> None:
    print(f"{name:<34} bad caught {ratio(f['caught'], f['bad']):<16} good dropped "
          f"{ratio(f['good_dropped'], f['good']):<16} marker precision "
          f"{ratio(f['markers_right'], f['markers_shown']):<17} answers with prose "
          f"{ratio(f['answers_with_prose'], f['answers'])}")


def score(args) -> None:
    folder = Path(args.out)
    labelled = Labelled.read(folder)
    print(f"labelled sentences {len(labelled.ids)} in {len(labelled.turns)} answers: " + ", ".join(
        f"{k} {sum(v == k for v in labelled.kinds.values())}" for k in KINDS))
    today = labelled.verdicts(open_corpus("seed").engine.grounder)
    report("the check today, all", labelled.figures(today))
    # the first generation's sentences also carry the check of that day (later rounds, e.g. other
    # compare prompts, were added with labels only)
    generated = {r["id"]: r for r in read_jsonl(folder / "verdicts.jsonl")}
    first = labelled.subset(set(generated))
    report("first round: the check then", first.figures(generated))
    report("first round: the check today", first.figures(today))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("step", choices=["generate", "score"])
    ap.add_argument("--corpora", nargs="+", default=["seed", "ml_conf", "arxiv_math"])
    ap.add_argument("--per-corpus", type=int, default=200)
    ap.add_argument("--kind", default="", help="only questions of this kind (compare, summary, ...)")
    ap.add_argument("--out", default=str(OUT), help="folder for turns.jsonl and verdicts.jsonl")
    ap.add_argument("--label-view", default="/tmp/grounding_turns_for_labelling.jsonl",
                    help="the turns with their sources' whole text, for a labeller (outside the repository)")
    args = ap.parse_args()
    generate(args) if args.step == "generate" else score(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
