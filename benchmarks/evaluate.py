"""Cited answers scored on question sets over the shared corpora, per corpus and per kind.

    .venv/bin/python benchmarks/evaluate.py [SET ...] [--backend none|local] [--show] [--code DIR]
                                            [--second-opinion auto|local|off]

SET is CORPUS:FILE (e.g. arxiv_math:benchmarks/questions/arxiv_math_dev.jsonl) or one of the
names below; the default runs the dev sets of the seed, arxiv_math, ml_conf and SciFact corpora,
`--all` the test sets too (benchmarks/questions/*_test.jsonl: written by a session that saw neither
the code nor the calibration data; for final figures, never for tuning). Items are
{"id", "kind", "turns": [...], "expect": [paper ids]}; only the last turn's answer is scored.

  hit        an answerable item cites what it asks for: every expected paper for a comparison,
             at least one for any other kind
  recall     expected papers cited / expected papers (pooled)
  precision  cited papers that were expected / cited papers (pooled)
  refused    out-of-corpus items ("none") answered with no citation

`--code DIR` imports the assistant from another checkout (a worktree of an older commit), so
the figures before and after a change come from the same script, stores and questions.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions"

DEFAULT_SETS = {
    "seed-dev": ("seed", HERE.parent.parent / "shared" / "eval" / "seed_dev.jsonl"),
    "seed-heldout": ("seed", HERE.parent / "tests" / "data" / "seed_heldout.jsonl"),
    "seed-test": ("seed", QUESTIONS / "seed_test.jsonl"),
    "arxiv_math-dev": ("arxiv_math", QUESTIONS / "arxiv_math_dev.jsonl"),
    "arxiv_math-test": ("arxiv_math", QUESTIONS / "arxiv_math_test.jsonl"),
    "ml_conf-dev": ("ml_conf", QUESTIONS / "ml_conf_dev.jsonl"),
    "ml_conf-test": ("ml_conf", QUESTIONS / "ml_conf_test.jsonl"),
    # blind: reworded at three levels of word overlap, and out-of-corpus questions near each topic
    "seed-reworded": ("seed", QUESTIONS / "seed_reworded.jsonl"),
    "arxiv_math-reworded": ("arxiv_math", QUESTIONS / "arxiv_math_reworded.jsonl"),
    "ml_conf-reworded": ("ml_conf", QUESTIONS / "ml_conf_reworded.jsonl"),
    # a second blind round of the same shape (2026-12-02), scored before any change for it
    "seed-reworded-2": ("seed", QUESTIONS / "seed_reworded_2.jsonl"),
    "seed-reworded-3": ("seed", QUESTIONS / "seed_reworded_3.jsonl"),
    "arxiv_math-reworded-2": ("arxiv_math", QUESTIONS / "arxiv_math_reworded_2.jsonl"),
    "ml_conf-reworded-2": ("ml_conf", QUESTIONS / "ml_conf_reworded_2.jsonl"),
    # a third blind round for the two larger corpora (2026-12-04), scored before any change for it
    "arxiv_math-reworded-3": ("arxiv_math", QUESTIONS / "arxiv_math_reworded_3.jsonl"),
    "ml_conf-reworded-3": ("ml_conf", QUESTIONS / "ml_conf_reworded_3.jsonl"),
    # a fourth (2026-12-04, twentieth session), scored before any change for it
    "arxiv_math-reworded-4": ("arxiv_math", QUESTIONS / "arxiv_math_reworded_4.jsonl"),
    "ml_conf-reworded-4": ("ml_conf", QUESTIONS / "ml_conf_reworded_4.jsonl"),
    # a fifth (2026-12-05, twenty-fourth session), its out-of-corpus questions near misses,
    # scored before any change for it
    "arxiv_math-reworded-5": ("arxiv_math", QUESTIONS / "arxiv_math_reworded_5.jsonl"),
    "ml_conf-reworded-5": ("ml_conf", QUESTIONS / "ml_conf_reworded_5.jsonl"),
    # 24 pairs around one paper each: a question it answers and a near miss no paper answers
    # (2026-12-05, twenty-fourth session), scored before any change for it
    "arxiv_math-nearmiss-6": ("arxiv_math", QUESTIONS / "arxiv_math_nearmiss_6.jsonl"),
    # 22 more pairs (forty-seventh session), 11 of the near misses a changed figure (dimension,
    # rank, group, count), 11 a changed object; scored before and after the change for figures
    "arxiv_math-nearmiss-22": ("arxiv_math", QUESTIONS / "arxiv_math_nearmiss_22.jsonl"),
    # blind: described comparisons, "those two", follow-ups about a paper in focus (details and
    # author counts), multi-part questions, comparisons with a side (or both) not in the corpus
    "seed-conversations": ("seed", QUESTIONS / "seed_conversations.jsonl"),
    "arxiv_math-conversations": ("arxiv_math", QUESTIONS / "arxiv_math_conversations.jsonl"),
    "ml_conf-conversations": ("ml_conf", QUESTIONS / "ml_conf_conversations.jsonl"),
    # rounds 2 to 4 of the same shape, each scored before any change made for it
    "seed-conversations-2": ("seed", QUESTIONS / "seed_conversations_2.jsonl"),
    "arxiv_math-conversations-2": ("arxiv_math", QUESTIONS / "arxiv_math_conversations_2.jsonl"),
    "ml_conf-conversations-2": ("ml_conf", QUESTIONS / "ml_conf_conversations_2.jsonl"),
    "seed-conversations-3": ("seed", QUESTIONS / "seed_conversations_3.jsonl"),
    "arxiv_math-conversations-3": ("arxiv_math", QUESTIONS / "arxiv_math_conversations_3.jsonl"),
    "ml_conf-conversations-3": ("ml_conf", QUESTIONS / "ml_conf_conversations_3.jsonl"),
    "seed-conversations-4": ("seed", QUESTIONS / "seed_conversations_4.jsonl"),
    "arxiv_math-conversations-4": ("arxiv_math", QUESTIONS / "arxiv_math_conversations_4.jsonl"),
    # (ml_conf records have no authors: its round-4 set has no author-count items)
    "ml_conf-conversations-4": ("ml_conf", QUESTIONS / "ml_conf_conversations_4.jsonl"),
    # blind round 5, follow-ups only: details and author counts about the paper just cited, a
    # switch to another paper's topic, an absent topic (scored before any change made for it)
    "seed-followups-5": ("seed", QUESTIONS / "seed_followups_5.jsonl"),
    "arxiv_math-followups-5": ("arxiv_math", QUESTIONS / "arxiv_math_followups_5.jsonl"),
    "ml_conf-followups-5": ("ml_conf", QUESTIONS / "ml_conf_followups_5.jsonl"),
    # blind round 6, the shape of round 4 (scored before any change was looked at against it)
    "seed-conversations-6": ("seed", QUESTIONS / "seed_conversations_6.jsonl"),
    "arxiv_math-conversations-6": ("arxiv_math", QUESTIONS / "arxiv_math_conversations_6.jsonl"),
    "ml_conf-conversations-6": ("ml_conf", QUESTIONS / "ml_conf_conversations_6.jsonl"),
    # blind round 7, the shape of round 6 (scored before any change was looked at against it)
    "seed-conversations-7": ("seed", QUESTIONS / "seed_conversations_7.jsonl"),
    "arxiv_math-conversations-7": ("arxiv_math", QUESTIONS / "arxiv_math_conversations_7.jsonl"),
    "ml_conf-conversations-7": ("ml_conf", QUESTIONS / "ml_conf_conversations_7.jsonl"),
    # blind round 8, the shape of round 7, written by a helper that saw only the corpora
    # (twenty-sixth session; ml_conf's papers carry no authors, so no count follow-ups there)
    "seed-conversations-8": ("seed", QUESTIONS / "seed_conversations_8.jsonl"),
    "arxiv_math-conversations-8": ("arxiv_math", QUESTIONS / "arxiv_math_conversations_8.jsonl"),
    "ml_conf-conversations-8": ("ml_conf", QUESTIONS / "ml_conf_conversations_8.jsonl"),
    # comparison rounds 9 and 10, written by helpers that saw only the corpora, each scored
    # before any change made for it (twenty-seventh and twenty-eighth sessions): sides named,
    # described, "the two X papers", asked as questions, absent; round 10 adds one-paper look-alikes
    **{f"{c}-compare-{n}": (c, QUESTIONS / f"{c}_compare_{n}.jsonl")
       for n in (9, 10) for c in ("seed", "arxiv_math", "ml_conf")},
    # rounds 11 and 12, written the same way (thirtieth and thirty-first sessions): comparisons
    # asked as questions, one-paper look-alikes; round 11 adds described comparisons, "those
    # two", two-part questions and follow-ups, round 12 out-of-corpus questions naming two things
    **{f"{c}-round-{n}": (c, QUESTIONS / f"{c}_round_{n}.jsonl")
       for n in (11, 12) for c in ("seed", "arxiv_math", "ml_conf")},
    # round 13, written the same way (thirty-second session): described comparisons, "those
    # two" across turns, two-part questions, comparisons of two things the corpus lacks
    **{f"{c}-round-13": (c, QUESTIONS / f"{c}_round_13.jsonl") for c in ("seed", "arxiv_math", "ml_conf")},
    # blind round 14: a summary, table or side-by-side of "them" after two one-paper answers,
    # detail follow-ups by "they", summaries whose topic holds a pronoun, absent summaries
    **{f"{c}-round-14": (c, QUESTIONS / f"{c}_round_14.jsonl") for c in ("seed", "arxiv_math", "ml_conf")},
    # blind round 15 (thirty-sixth session): "more like" in other words, comparisons asked as
    # questions, summaries and tables asked without those words, absent topics
    **{f"{c}-round-15": (c, QUESTIONS / f"{c}_round_15.jsonl") for c in ("seed", "arxiv_math", "ml_conf")},
    # blind round 16 (thirty-seventh session): when a paper appeared (a follow-up, or a part
    # pointing back with "it"), "anything else on X?" after one paper, and nothing else there
    **{f"{c}-round-16": (c, QUESTIONS / f"{c}_round_16.jsonl") for c in ("seed", "arxiv_math", "ml_conf")},
    # blind round 17 (thirty-eighth session): summaries of an area in plain words (some with a
    # format: "one line each"), the whole collection in a line a paper, a second part whose
    # pronoun points at the first part's paper, "who else works on this?", nothing there
    **{f"{c}-round-17": (c, QUESTIONS / f"{c}_round_17.jsonl") for c in ("seed", "arxiv_math", "ml_conf")},
    # blind round 18 (thirty-ninth session): "and what about X?" after a question, comparisons
    # with one side told loosely ("the original one"), questions in a newcomer's words, nothing there
    **{f"{c}-round-18": (c, QUESTIONS / f"{c}_round_18.jsonl") for c in ("seed", "arxiv_math", "ml_conf")},
    # faithfulness round 9 (fortieth session): summaries (some asking how their papers differ)
    # and comparisons, for which papers they cite (benchmarks/faithfulness.py labels the prose)
    **{f"{c}-faith-9": (c, QUESTIONS / f"{c}_faith_9.jsonl") for c in ("seed", "ml_conf")},
    # blind round 19 (forty-first session): questions asking for several papers ("which papers
    # …?", "are there papers …?", "any work …?"), and such questions on topics the corpus lacks
    **{f"{c}-plural-19": (c, QUESTIONS / f"{c}_plural_19.jsonl") for c in ("seed", "arxiv_math", "ml_conf")},
    # blind round 20 (forty-fifth session): a new user's mix, reworded further (one-paper
    # questions at three levels, summaries, described comparisons, two-part questions, follow-ups,
    # "those two", out-of-corpus questions and comparisons)
    **{f"{c}-newuser-20": (c, QUESTIONS / f"{c}_newuser_20.jsonl") for c in ("seed", "ml_conf")},
    **{f"{c}-newuser-21": (c, QUESTIONS / f"{c}_newuser_21.jsonl") for c in ("seed", "ml_conf", "arxiv_math")},
    "scifact-heldout": ("scifact", None),
}
# kinds whose every expected paper must be cited (else: any one of them), and kinds where
# citing nothing is right
EVERY_PAPER = {"compare", "described_compare", "those_two", "multipart", "compare_one_absent",
               "named_compare", "plural_description", "compare_as_question", "shown_summary"}
REFUSALS = {"none", "compare_both_absent"}
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve", "thirteen", "fourteen", "fifteen"]


def scifact_heldout_items(limit: int) -> list[dict]:
    """SciFact train claims of the calibration's held-out split, asked as evidence questions."""
    from corpora import evidence_question, held_out, scifact_claims

    items = []
    for qid, claim, gold in scifact_claims():
        if held_out(f"sf-{qid}"):
            items.append({"id": f"sf-{qid}", "kind": "claim", "turns": [evidence_question(claim)],
                          "expect": sorted(gold)})
    return items[:limit] if limit else items


def load_items(corpus: str, path, pa, scifact_limit: int) -> list[dict]:
    from corpora import read_jsonl, seed_ids_by_key

    if path is None:
        return scifact_heldout_items(scifact_limit)
    items = read_jsonl(path)
    if corpus == "seed":
        keys = seed_ids_by_key(pa)
        for it in items:
            it["expect"] = [keys.get(e, e) for e in it["expect"]]
    return items


def run_item(pa, item: dict):
    from assistant.types import Turn

    history, answer = [], None
    for turn in item["turns"]:
        answer = pa.ask(turn, history)
        history += [Turn(role="user", content=turn), answer.as_turn()]
    return answer


def says_count(text: str, n: int) -> bool:
    """Does the answer state the number n (as digits or a word)?"""
    words = set(re.findall(r"[a-z]+|\d+", text.lower()))
    return str(n) in words or (n < len(NUMBER_WORDS) and NUMBER_WORDS[n] in words)


def score(items: list[dict], answers: dict, by_level: bool = False, texts: dict | None = None) -> dict:
    rows = defaultdict(lambda: {"n": 0, "hit": 0, "tp": 0, "cited": 0, "expected": 0, "counted": 0})
    for it in items:
        cited = set(answers[it["id"]])
        expect = set(it["expect"])
        keys = [it["kind"], "all"] + ([f"{it['kind']}/{it['level']}"] if by_level and it.get("level") else [])
        for key in keys:
            r = rows[key]
            r["n"] += 1
            if it["kind"] in REFUSALS:  # a refusal is right
                r["hit"] += not cited
                continue
            r["hit"] += expect <= cited if it["kind"] in EVERY_PAPER else bool(cited & expect)
            r["tp"] += len(cited & expect)
            r["cited"] += len(cited)
            r["expected"] += len(expect)
            if "answer_count" in it and texts is not None:
                r["counted"] += says_count(texts[it["id"]], it["answer_count"])
    return rows


def print_rows(name: str, rows: dict, seconds: float) -> None:
    print(f"\n{name}  ({rows['all']['n']} items, {seconds:.0f} s)")
    for kind, r in sorted(rows.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        if kind.split("/")[0] in REFUSALS:
            print(f"  {kind:14s} n={r['n']:3d}  refused {r['hit'] / r['n']:.2f}")
            continue
        if kind == "all":
            refusals = [rows[k] for k in REFUSALS if k in rows]
            r = {**r, "n": r["n"] - sum(x["n"] for x in refusals),
                 "hit": r["hit"] - sum(x["hit"] for x in refusals)}
        counted = f"  count stated {r['counted']}/{r['n']}" if kind == "followup_count" else ""
        print(f"  {kind:14s} n={r['n']:3d}  hit {r['hit'] / max(r['n'], 1):.2f}  "
              f"recall {r['tp'] / max(r['expected'], 1):.2f}  precision {r['tp'] / max(r['cited'], 1):.2f}{counted}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("sets", nargs="*")
    ap.add_argument("--backend", default="none")
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--all", action="store_true", help="also the test sets (final figures only)")
    ap.add_argument("--code", default=None, help="import the assistant from this checkout")
    ap.add_argument("--scifact-limit", type=int, default=150)
    ap.add_argument("--json", default=None, help="also write the per-item results here")
    ap.add_argument("--reading", choices=("auto", "local", "off"), default=None,
                    help="RelevancePolicy.reading (auto: only with a model backend; local: the "
                         "packaged model reads the candidates even with --backend none)")
    ap.add_argument("--second-opinion", choices=("auto", "local", "off"), default=None,
                    help="the same for a checkout older than the reading (--code), whose packaged "
                         "model judged borderline questions by question likelihood")
    ap.add_argument("--level", action="store_true", help="also score per item level (close, reworded, far…)")
    args = ap.parse_args()
    if args.reading:
        os.environ["PAPER_ASSISTANT_RELEVANCE__READING"] = args.reading
    if args.second_opinion:
        os.environ["PAPER_ASSISTANT_RELEVANCE__SECOND_OPINION"] = args.second_opinion
    if args.code:
        sys.path.insert(0, str(Path(args.code).resolve()))
    sys.path.insert(1, str(HERE))
    from corpora import available, open_corpus

    chosen = args.sets or [s for s in DEFAULT_SETS if args.all or not s.endswith("-test")]
    results = {}
    for name in chosen:
        corpus, path = DEFAULT_SETS[name] if name in DEFAULT_SETS else name.split(":", 1)
        if not available(corpus) or (path is not None and not Path(path).exists()):
            print(f"\n{name}: skipped (missing {corpus} corpus or {path})")
            continue
        pa = open_corpus(corpus, backend=args.backend)
        items = load_items(corpus, path, pa, args.scifact_limit)
        t0 = time.perf_counter()
        answers, texts = {}, {}
        for it in items:
            ans = run_item(pa, it)
            answers[it["id"]] = [c.paper_id for c in ans.citations]
            texts[it["id"]] = ans.answer
            if args.show:
                ok = set(answers[it["id"]]) == set(it["expect"])
                print(f"{'ok ' if ok else '   '}{it['id']:14s} {it['kind']:8s} expect={sorted(it['expect'])} "
                      f"cited={answers[it['id']]}  | {it['turns'][-1][:80]}")
        rows = score(items, answers, by_level=args.level, texts=texts)
        print_rows(name, rows, time.perf_counter() - t0)
        results[name] = {"rows": rows, "answers": answers, "texts": texts}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=dict))
    return 0


if __name__ == "__main__":
    sys.exit(main())
