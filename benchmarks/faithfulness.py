"""Are the sentences a user is shown backed by the papers they cite? Summaries, overviews and
comparisons, the model's prose after the check, labelled blind.

    .venv/bin/python benchmarks/faithfulness.py generate --tag before --out DIR [--questions second]
    (a session that sees only DIR/label_view.jsonl labels it: DIR/labels.jsonl)
    .venv/bin/python benchmarks/faithfulness.py score --out DIR

`generate` asks the seed and ml_conf questions below with the local model and keeps, for every
answer, the prose sentences the user was shown (the model's sentences that passed the check,
not the listings, tables and extracts, which are copied from the abstracts) with the numbers
they cite, and the cited papers. Runs of two versions of the code (`--tag`, `--code CHECKOUT`)
go into one folder, so one labeller labels both at once without knowing which is which: the
label view holds each answer's question, its cited papers (title, authors, year, whole abstract;
written outside the repository) and its sentences, in a shuffled order, with no tag.

The labeller says per sentence which cited papers support it and whether every claim of it is
backed by one of them (labels.jsonl: {"id", "supported_by": [n...], "all_backed": bool}).
`score` prints per tag and kind: shown sentences, the unsupported (some claim no cited paper
backs) and misattributed (backed, but a marker names a paper that does not back it) shares, and
the share of answers with model prose.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def code_path(argv: list[str]) -> None:
    """--code CHECKOUT: import the assistant from that checkout (an older version)."""
    if "--code" in argv:
        sys.path.insert(0, str(Path(argv[argv.index("--code") + 1]).resolve()))


code_path(sys.argv)

from corpora import ROOT, open_corpus, read_jsonl  # noqa: E402
from grounding import label_of  # noqa: E402  (the same four kinds of sentence)

QUESTIONS = ROOT / "benchmarks" / "questions"
# The three examples, then summaries, overviews and comparisons from the blind sets.
SEED_EXTRA = ["What are the main themes in this collection?",
              "How do the two papers by Fröhlich and Pontil differ?",
              "Summarize the papers on causal inference.",
              "Give me an overview of this collection."]
ML_EXTRA = ["Summarize the papers on adversarial robustness.",
            "What does this collection say about graph neural networks?",
            "Give me an overview of exploration in reinforcement learning."]
# (file, first, stop) of the single-turn answerable summaries and comparisons of each file.
# "first": the 34 questions of the first two labelled rounds; "second": other questions of the
# same blind sets (none asked in the first), for a new round of more than 150 shown sentences;
# "third": a set written for round 7; "fourth": one written for round 8; "fifth": round 9.
QUESTION_SETS = {
    "first": {"seed": [("seed_field_summaries.jsonl", 0, 6), ("seed_test.jsonl", 0, 3),
                       ("seed_compare_dev.jsonl", 0, 6)],
              "ml_conf": [("ml_conf_dev.jsonl", 0, 3), ("ml_conf_test.jsonl", 0, 3),
                          ("ml_conf_compare_dev.jsonl", 0, 6)]},
    "second": {"seed": [("seed_field_summaries_2.jsonl", 0, 8), ("seed_field_summaries_3.jsonl", 0, 8),
                        ("seed_field_summaries_4.jsonl", 0, 6),
                        ("seed_compare_dev.jsonl", 6, 13), ("seed_test.jsonl", 3, 10)],
               "ml_conf": [("ml_conf_compare_dev.jsonl", 6, 16), ("ml_conf_dev.jsonl", 3, 10),
                           ("ml_conf_test.jsonl", 3, 10)]},
    # written blind for round 7 (twenty-third session), after the code it measures
    "third": {"seed": [("seed_faith_5.jsonl", 0, 12)], "ml_conf": [("ml_conf_faith_5.jsonl", 0, 24)]},
    # written blind for round 8 (twenty-sixth session)
    "fourth": {"seed": [("seed_faith_8.jsonl", 0, 24)], "ml_conf": [("ml_conf_faith_8.jsonl", 0, 48)]},
    # written blind for round 9 (fortieth session)
    "fifth": {"seed": [("seed_faith_9.jsonl", 0, 24)], "ml_conf": [("ml_conf_faith_9.jsonl", 0, 48)]},
}
PROSE_HEADINGS = ("**Synthesis.** ", "**In short.** ")
EXTRACTS_HEADING = "Extracts from"
MARKER = re.compile(r"\[(\d+(?:\s*[,;–-]\s*\d+)*)\]")


def questions(corpus: str, question_set: str = "first") -> list[tuple[str, str]]:
    """(kind, question) for the corpus: the issue's examples, then summaries and comparisons
    of the blind sets (single turn, answerable) as QUESTION_SETS[question_set] picks them."""
    extra = SEED_EXTRA if corpus == "seed" else ML_EXTRA
    out = [("extra", q) for q in extra]
    for name, first, stop in QUESTION_SETS[question_set][corpus]:
        rows = [r for r in read_jsonl(QUESTIONS / name)
                if r.get("kind") in ("summary", "compare") and len(r["turns"]) == 1 and r.get("expect")]
        out += [(r["kind"], r["turns"][0]) for r in rows[first:stop]]
    return out


def prose_of(text: str) -> str:
    """The model's checked prose in a shown answer: after its heading (summaries, comparisons),
    or the paragraph after the "From …:" lead (questions); "" when extracts stand in for it."""
    for heading in PROSE_HEADINGS:
        if heading in text:
            return text.split(heading, 1)[1].split("\n\n")[0]
    m = re.search(r"^From .*?:\s*\n*(.+?)(?:\n\n|$)", text, re.S | re.M)
    if not m or m.group(1).startswith(EXTRACTS_HEADING):
        return ""  # extracts stood in for the model's prose
    return m.group(1)


def sentences_of(prose: str) -> list[str]:
    from assistant.answer.ground import split_answer

    return split_answer(prose)


def cites(sentence: str) -> list[int]:
    out = []
    for group in MARKER.findall(sentence):
        out += [int(x) for x in re.findall(r"\d+", group)]
    return list(dict.fromkeys(out))


def generate(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    answers_path = out / f"answers-{args.tag}.jsonl"
    done = {r["question"] for r in read_jsonl(answers_path)} if answers_path.exists() else set()
    for corpus in args.corpora:
        pa = open_corpus(corpus, backend="local", llm_timeout=600)
        for kind, question in questions(corpus, args.questions):
            if question in done:
                continue
            t0 = time.perf_counter()
            answer = pa.ask(question)
            prose = prose_of(answer.answer)
            row = {"tag": args.tag, "corpus": corpus, "kind": kind, "question": question,
                   "intent": answer.intent, "text": answer.answer,
                   "seconds": round(time.perf_counter() - t0, 1),
                   "citations": [{"n": c.number, "paper_id": c.paper_id} for c in answer.citations],
                   "sentences": [{"sentence": s, "cites": cites(s)} for s in sentences_of(prose)]}
            with answers_path.open("a") as f:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(f"{args.tag} {corpus}: {question[:60]!r} {len(row['sentences'])} sentences "
                  f"{row['seconds']} s", flush=True)


def label_view(args) -> None:
    """Every tag's answers with prose, shuffled, ids without the tag; whole abstracts."""
    out = Path(args.out)
    runs = [read_jsonl(p) for p in sorted(out.glob("answers-*.jsonl"))]
    paired = set.intersection(*({r["question"] for r in run} for run in runs))  # asked in every run
    rows = [r for run in runs for r in run if r["sentences"] and r["question"] in paired]
    random.Random(7).shuffle(rows)
    papers = {c: open_corpus(c).store.papers() for c in {r["corpus"] for r in rows}}
    key, view = {}, []
    for i, r in enumerate(rows):
        aid = f"a{i:03d}"
        key[aid] = {"tag": r["tag"], "question": r["question"], "corpus": r["corpus"]}
        view.append({"answer": aid, "question": r["question"],
                     "papers": [paper_view(c["n"], papers[r["corpus"]][c["paper_id"]]) for c in r["citations"]],
                     "sentences": [{"id": f"{aid}-{k}", "sentence": s["sentence"]}
                                   for k, s in enumerate(r["sentences"])]})
    (out / "key.json").write_text(json.dumps(key, indent=1))
    Path(args.view).write_text("".join(json.dumps(v, ensure_ascii=False) + "\n" for v in view))
    print(f"{len(view)} answers, {sum(len(v['sentences']) for v in view)} sentences → {args.view}")


def paper_view(n: int, p) -> dict:
    return {"n": n, "title": p.title, "authors": p.authors, "year": p.year, "abstract": p.abstract}


def score(args) -> None:
    out = Path(args.out)
    key = json.loads((out / "key.json").read_text())
    labels = {r["id"]: r for r in read_jsonl(out / "labels.jsonl")}
    by_question = {}
    for p in sorted(out.glob("answers-*.jsonl")):
        for r in read_jsonl(p):
            by_question[(r["tag"], r["question"])] = r
    counts: dict[tuple, Counter] = {}
    for aid, k in key.items():
        r = by_question[(k["tag"], k["question"])]
        for i, s in enumerate(r["sentences"]):
            label = labels.get(f"{aid}-{i}")
            if label is None:
                continue
            kind = "compare" if r["intent"] == "compare" else "summary/overview"
            for group in ((k["tag"], "all"), (k["tag"], kind), (k["tag"], r["corpus"])):
                counts.setdefault(group, Counter())[label_of(s["cites"], label)] += 1
    for tag in sorted({t for t, _ in counts}):
        rows = [r for (t, q), r in by_question.items() if t == tag and q in asked_in_all(by_question)]
        with_prose = sum(bool(r["sentences"]) for r in rows)
        print(f"{tag}: answers {len(rows)}, with model prose {with_prose} ({with_prose / len(rows):.0%}), "
              f"mean {sum(r['seconds'] for r in rows) / len(rows):.1f} s")
        for (t, group), c in sorted(counts.items()):
            if t != tag:
                continue
            n = sum(c.values())
            bad = c["unsupported"] + c["misattributed"]
            print(f"  {group:<18} sentences {n:>3}  unsupported {c['unsupported']:>3}  misattributed "
                  f"{c['misattributed']:>3}  bad {bad / n:.1%}")


def asked_in_all(by_question: dict) -> set[str]:
    """The questions every run answered (a run stopped early is compared on those)."""
    tags = {t for t, _ in by_question}
    return {q for _, q in by_question if all((t, q) in by_question for t in tags)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--tag", required=True)
    g.add_argument("--code", help="a checkout of another version to answer with")
    g.add_argument("--corpora", nargs="+", default=["seed", "ml_conf"])
    g.add_argument("--questions", choices=sorted(QUESTION_SETS), default="first",
                   help="which questions of the blind sets (QUESTION_SETS)")
    g.add_argument("--out", default=str(ROOT / "benchmarks" / "faithfulness"))
    v = sub.add_parser("view")
    v.add_argument("--out", default=str(ROOT / "benchmarks" / "faithfulness"))
    v.add_argument("--view", required=True, help="the labeller's file (outside the repository)")
    s = sub.add_parser("score")
    s.add_argument("--out", default=str(ROOT / "benchmarks" / "faithfulness"))
    args = ap.parse_args()
    {"generate": generate, "view": label_view, "score": score}[args.cmd](args)


if __name__ == "__main__":
    main()
