"""Fit the reading (answer/reading.py): the model reads the best candidates, then the assistant judges.

    .venv/bin/python benchmarks/calibrate_reading.py [--write] [--per-corpus N] [--papers K]

The questions are calibrate_relevance.py's labelled ones (SciFact train claims, our calibration
sets for arxiv_math, ml_conf and the seed corpus, the seed held-out set, leave-one-out twins,
written and cross-corpus out-of-corpus questions). Those whose best candidate reaches the floor
are read: at most N a corpus, chosen by a hash of their id, and every written question of the
corpora of --all-written (default: the seed corpus). For each, the K
best candidates in the gate's order are read by the packaged local model ("does this paper
answer the question? yes or no", the probability of "yes"), cached in
benchmarks/.stores/reading_yes-HASH.jsonl, HASH naming the wording of prompts/verdict.txt (an
interrupted run resumes). The gate's p of each question
comes from a gate fitted without the question's fold (`--gate out-of-fold`, the default): the
shipped gate was fitted on these very questions and is surer of them than of a new one. A
logistic model over (logit of the gate's p floored at a gate floor, logit of yes, yes minus the
best other candidate's) is fitted for each gate floor of --gate-floors ("off": without the gate's
term), the one with the best
out-of-fold figures kept; its threshold is the one with the most right answers minus wrong ones (a wrong paper,
or an answer to an out-of-corpus or leave-one-out question) on 5-fold out-of-fold probabilities. Printed beside it: the gate alone on the
same questions, and the floor's cost (answerable questions whose gold paper it refuses).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import calibrate_relevance as cr  # noqa: E402
from corpora import ROOT, available, open_corpus  # noqa: E402

from assistant.answer.reading import MAY_ANSWER, MODEL_PATH, Reader, ReadingModel, leads, logit  # noqa: E402
from assistant.answer.relevance import default_model as relevance_model  # noqa: E402
from assistant.config import RelevancePolicy  # noqa: E402

WRONG_IF_ANSWERED = ("loo", "none", "cross")
# readings are kept per wording of the prompt: a new prompts/verdict.txt starts a new cache
VERDICT_PROMPT = ROOT / "prompts" / "verdict.txt"
CACHE = (ROOT / "benchmarks" / ".stores"
         / f"reading_yes-{hashlib.sha1(VERDICT_PROMPT.read_bytes()).hexdigest()[:8]}.jsonl")
FOLDS = 5


def fold_of(rec: dict) -> int:
    """A question's fold, by a hash of the underlying question (its leave-one-out twin with it)."""
    return int(hashlib.md5(rec["item"].qid.split("#")[0].encode()).hexdigest(), 16) % FOLDS


def out_of_fold_gate(records: list[dict], gate) -> list[dict]:
    """Every question scored by a gate fitted without its fold (the shipped gate's features).
    The shipped gate was fitted on 70% of these very questions, so its p on them is in-sample:
    surer than on a question it has never seen, and a reading fitted beside it would lean on
    it too much."""
    out = []
    for fold in range(FOLDS):
        model = cr.fit([r for r in records if fold_of(r) != fold], list(gate.features), 1.0)
        out += cr.scored([r for r in records if fold_of(r) == fold], model)
    return out


def limited(records: list[dict], per_corpus: int, all_written: tuple[str, ...] = ()) -> list[dict]:
    """At most `per_corpus` questions a corpus, chosen by a hash of their id (stable); for the
    corpora in `all_written`, every written question besides (the seed corpus's 20 papers give
    few, and its 240 other-corpus questions would crowd them out)."""
    if not per_corpus:
        return records
    out = []
    for corpus in dict.fromkeys(r["item"].corpus for r in records):
        mine = sorted((r for r in records if r["item"].corpus == corpus), key=lambda r: cr.hash_order(r["item"]))
        out += [r for i, r in enumerate(mine)
                if i < per_corpus or (corpus in all_written and r["item"].kind != "cross")]
    return out


def read_questions(records: list[dict], floor: float) -> list[dict]:
    """Questions (answerable, leave-one-out and out-of-corpus) whose best candidate reaches the floor."""
    return [r for r in records if r["p"] and r["item"].kind in ("pos",) + WRONG_IF_ANSWERED
            and max(r["p"]) >= floor]


def make_reader(store) -> Reader:
    from assistant import load_settings
    from assistant.answer.evidence import SentenceEmbeddings
    from assistant.llm import make_local_llm

    settings = load_settings()
    llm = make_local_llm(settings)
    return Reader(llm.choice_probabilities, SentenceEmbeddings(store.embedder),
                  settings.relevance, ReadingModel(0, 1, 0, 0, 0.5, {}), read_choice=llm.read_choice)


def cached_rows() -> list[dict]:
    if not CACHE.exists():
        return []
    return [json.loads(l) for l in CACHE.read_text().splitlines() if l.strip()]


def read_cache() -> dict[str, dict]:
    """Each read candidate's reading ({"yes", "gain"}; gain None where not read), by key
    (candidates())."""
    return {r["key"]: {"yes": r["yes"], "gain": r.get("gain")} for r in cached_rows()}


def candidates(questions: list[dict], papers: int):
    """(question record, candidate index, cache key) of each question's `papers` best candidates,
    in the gate's order (as the engine reads them)."""
    for rec in questions:
        for i in rec["order"][:papers]:
            yield rec, i, f"{rec['item'].corpus}|{rec['item'].qid}|{rec['ids'][i]}"


def collect(questions: list[dict], papers: int) -> dict[str, dict]:
    """The reading of each question's best candidates, appended to the cache as read; the
    corpora's questions interleaved (by a hash of their id), so a partial run covers them all."""
    cache = {k: v for k, v in read_cache().items() if v["gain"] is not None}
    # answerable, leave-one-out and written out-of-corpus questions first: other corpora's
    # questions are the easiest negatives, read last
    questions = sorted(questions, key=lambda r: (r["item"].kind == "cross",
                                                 hashlib.md5(r["item"].qid.encode()).hexdigest()))
    readers, stores = {}, {}
    t0, done = time.perf_counter(), 0
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with CACHE.open("a") as out:
        for rec, i, key in candidates(questions, papers):
            if key in cache:
                continue
            item = rec["item"]
            if item.corpus not in stores:
                stores[item.corpus] = open_corpus(item.corpus).store
                readers[item.corpus] = make_reader(stores[item.corpus])
            paper = stores[item.corpus].paper(rec["ids"][i])
            yes, gain = readers[item.corpus].reading(item.query, paper)
            cache[key] = {"yes": yes, "gain": gain}
            out.write(json.dumps({"key": key, **cache[key]}) + "\n")
            out.flush()
            done += 1
            if done % 25 == 0:
                print(f"  {done} read, {(time.perf_counter() - t0) / done:.2f} s each", file=sys.stderr)
    return cache


@dataclass
class Row:
    """A read candidate: its question's record, its index among the record's candidates, the
    gate's p, the reading (yes, its lead; the likelihood gain and its lead, None unread) and
    whether it is gold."""

    rec: dict
    i: int
    p: float
    yes: float
    lead: float
    label: int
    gain: Optional[float] = None
    gain_lead: Optional[float] = None


def rows_of(questions: list[dict], cache: dict[str, dict], papers: int, with_gain: bool = False):
    """The Rows of the questions whose `papers` best candidates are all read (with_gain: all
    with a likelihood gain); leads as the engine computes them (reading.leads)."""
    by_question: dict[tuple, list] = {}
    for rec, i, key in candidates(questions, papers):
        by_question.setdefault((rec["item"].corpus, rec["item"].qid), []).append((rec, i, cache.get(key)))
    for scored in by_question.values():
        if any(got is None or (with_gain and got["gain"] is None) for *_, got in scored):
            continue
        yes = [got["yes"] for *_, got in scored]
        gains = [got["gain"] for *_, got in scored]
        gain_leads = leads(gains) if with_gain else [None] * len(gains)
        for (rec, i, _), y, lead, gain, gain_lead in zip(scored, yes, leads(yes), gains, gain_leads):
            yield Row(rec, i, rec["p"][i], y, lead, rec["labels"][i],
                      gain if with_gain else None, gain_lead)


def fit(rows, gate_floor: Optional[float] = 0.0, with_gain: bool = False) -> ReadingModel:
    """The logistic model over the rows; gate_floor None: the reading alone (w_gate 0);
    with_gain: the likelihood gain and its lead as features too."""
    from sklearn.linear_model import LogisticRegression

    shape = ReadingModel(0, 0, 0, 0, 0.5, {}, gate_floor or 0.0)
    X = np.array([([shape.gate_logit(r.p)] if gate_floor is not None else []) + [logit(r.yes), r.lead]
                  + ([r.gain, r.gain_lead] if with_gain else []) for r in rows])
    y = np.array([r.label for r in rows])
    w = LogisticRegression(C=1.0, max_iter=1000).fit(X, y)
    c = [0.0] * (gate_floor is None) + [float(v) for v in w.coef_[0]] + [0.0, 0.0] * (not with_gain)
    return ReadingModel(c[0], c[1], c[2], float(w.intercept_[0]), 0.5, {}, gate_floor or 0.0, c[3], c[4])


def out_of_fold(read: list[dict], cache: dict[str, dict], papers: int, gate_floor: Optional[float],
                with_gain: bool = False) -> dict:
    """best_read of every question by a model fitted without its fold."""
    best: dict = {}
    for fold in range(FOLDS):
        train = [r for r in read if fold_of(r) != fold]
        model = fit(list(rows_of(train, cache, papers, with_gain)), gate_floor, with_gain)
        best.update(best_read([r for r in read if fold_of(r) == fold], cache, model, papers, with_gain))
    return best


def best_read(questions: list[dict], cache: dict[str, dict], model: ReadingModel, papers: int,
              with_gain: bool = False) -> dict:
    """Per read question: (the best combined probability, whether that candidate is gold)."""
    best: dict[str, tuple[float, int]] = {}
    for r in rows_of(questions, cache, papers, with_gain):
        q = model.proba(r.p, r.yes, r.lead, r.gain, r.gain_lead)
        if r.rec["item"].qid not in best or q > best[r.rec["item"].qid][0]:
            best[r.rec["item"].qid] = (q, r.label)
    return best


def figures(recs: list[dict], best: dict, gate_t: float, t: float, sure: float) -> dict:
    """Over the given questions, per kind: answered by the gate alone (right paper first, for
    answerable ones) and by floor + reading (a read question is judged by the reading, one the
    gate is sure of (best p >= sure) by the gate, one below the floor is refused)."""
    out = {}
    for kind in ("pos",) + WRONG_IF_ANSWERED:
        mine = [r for r in recs if r["item"].kind == kind and r["p"] and r["item"].qid in best]
        gate = sum(max(r["p"]) >= gate_t and (kind != "pos" or cr.top_is_gold(r)) for r in mine)
        gate_wrong = sum(kind == "pos" and max(r["p"]) >= gate_t and not cr.top_is_gold(r) for r in mine)
        right = wrong = 0
        for r in mine:
            if max(r["p"]) >= sure:
                answered, gold = True, cr.top_is_gold(r)
            else:
                q, gold = best[r["item"].qid]
                answered = q >= t
            right += answered and (kind != "pos" or gold)
            wrong += answered and kind == "pos" and not gold
        out[kind] = {"n": len(mine), "gate": gate, "gate_wrong": gate_wrong, "read": right, "read_wrong": wrong}
    return out


def net(fig: dict) -> int:
    """Right answers minus wrong ones (a wrong paper, an out-of-corpus or leave-one-out answer)."""
    return fig["pos"]["read"] - fig["pos"]["read_wrong"] - sum(fig[k]["read"] for k in WRONG_IF_ANSWERED)


def best_floor(read: list[dict], cache: dict[str, dict], papers: int, floors: list[Optional[float]],
               with_gain: bool, gate_t: float, sure: float) -> tuple[Optional[float], dict, float]:
    """The gate floor whose model has the best out-of-fold net, with that model's out-of-fold
    best readings and threshold; ties: the reading alone (the model reads, then the assistant
    judges), then the lowest floor."""
    tried = {}  # floor -> (out-of-fold best readings, threshold, net)
    for f in floors:
        best = out_of_fold(read, cache, papers, f, with_gain)
        t = choose_threshold(read, best, gate_t, sure)
        tried[f] = (best, t, net(figures(read, best, gate_t, t, sure)))
        print(f"gate floor {'off' if f is None else f}{' (with gain)' if with_gain else ''}: "
              f"threshold {t:.3f}, net {tried[f][2]}", file=sys.stderr)
    floor = max(floors, key=lambda f: (tried[f][2], f is None, -(f or 0)))
    return floor, tried[floor][0], tried[floor][1]


def choose_threshold(held: list[dict], best: dict, gate_t: float, sure: float) -> float:
    grid = [round(x, 3) for x in np.arange(0.05, 0.951, 0.025)]
    return max(grid, key=lambda t: (net(figures(held, best, gate_t, t, sure)), t))


def report(name: str, fig: dict) -> None:
    pos = fig["pos"]
    ooc = {k: fig[k] for k in ("none", "cross")}
    print(f"{name:11s} answerable right: gate {pos['gate']}/{pos['n']} (wrong paper {pos['gate_wrong']}) -> "
          f"read {pos['read']}/{pos['n']} (wrong paper {pos['read_wrong']}) | out-of-corpus answered: "
          f"gate {sum(v['gate'] for v in ooc.values())} -> read {sum(v['read'] for v in ooc.values())} "
          f"of {sum(v['n'] for v in ooc.values())} | leave-one-out answered: gate {fig['loo']['gate']} -> "
          f"read {fig['loo']['read']} of {fig['loo']['n']}")


def floor_cost(records: list[dict], floor: float) -> str:
    """Answerable questions whose gold paper is among the candidates but whose best is below the floor."""
    pos = [r for r in records if r["item"].kind == "pos" and r["p"] and any(r["labels"])]
    lost = [r for r in pos if max(r["p"]) < floor]
    ooc = [r for r in records if r["item"].kind in ("none", "cross") and r["p"]]
    kept = [r for r in ooc if max(r["p"]) >= floor]
    return (f"floor {floor}: refuses {len(lost)}/{len(pos)} answerable questions unread; "
            f"reads {len(kept)}/{len(ooc)} out-of-corpus ones")


def unaccepted_pairs(read: list[dict], cache: dict[str, dict], model: ReadingModel, papers: int,
                     sure: float, least_yes: float, least_lead: float) -> dict[str, int]:
    """What a pair rule would answer: questions the reading accepts no paper for (and the gate is
    not sure of) whose two best-read papers both read yes >= least_yes and the weaker of the two
    leads the third by >= least_lead ("two papers answer it alike"), counted by kind; an
    answerable one as pos_gold when either paper of the pair is gold, else pos_wrong."""
    by_question: dict[str, list] = {}
    for r in rows_of(read, cache, papers):
        by_question.setdefault(r.rec["item"].qid, []).append((r.rec, r.p, r.yes, r.lead, r.label))
    counts: dict[str, int] = {}
    for rows in by_question.values():
        rec = rows[0][0]
        if max(rec["p"]) >= sure or any(model.proba(p, y, l) >= model.threshold for _, p, y, l, _ in rows):
            continue
        ranked = sorted(rows, key=lambda r: -r[2])
        pair, rest = ranked[:2], ranked[2:]
        if len(pair) < 2 or pair[1][2] < least_yes or (rest and pair[1][2] - rest[0][2] < least_lead):
            continue
        kind = rec["item"].kind
        if kind == "pos":
            kind = "pos_gold" if any(label for *_, label in pair) else "pos_wrong"
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def report_pairs(read: list[dict], cache: dict[str, dict], papers: int, sure: float) -> None:
    """unaccepted_pairs for the shipped reading model over a grid of the rule's two bars."""
    model = ReadingModel.load()
    for least_yes in (0.6, 0.7, 0.8):
        for least_lead in (0.0, 0.1, 0.2):
            counts = unaccepted_pairs(read, cache, model, papers, sure, least_yes, least_lead)
            print(f"pair: both yes >= {least_yes}, lead over the third >= {least_lead}: {counts}")


def report_may_answer(read: list[dict], cache: dict[str, dict], papers: int, gate_floor: float) -> None:
    """Every read candidate scored by a model fitted without its question's fold: per band of
    that combined probability, the candidates and those that answer, all and those the model
    said yes to (yes >= reading.MAY_ANSWER). A refusal says "may answer" of a paper only in
    bands where a fair share of such papers do (Settings relevance.may_answer_share)."""
    scored = []
    for fold in range(FOLDS):
        model = fit(list(rows_of([r for r in read if fold_of(r) != fold], cache, papers)), gate_floor)
        scored += [(model.proba(row.p, row.yes, row.lead), row.yes, row.label)
                   for row in rows_of([r for r in read if fold_of(r) == fold], cache, papers)]
    bands = [0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.325, 1.01]
    print(f"{len(scored)} read candidates; out-of-fold combined probability band: candidates (answer) | said yes (answer)")
    for lo, hi in zip(bands, bands[1:]):
        band = [s for s in scored if lo <= s[0] < hi]
        yes = [s for s in band if s[1] >= MAY_ANSWER]
        print(f"  [{lo:.3f}, {min(hi, 1):.3f}): {len(band):4d} ({sum(s[2] for s in band):3d}) | "
              f"{len(yes):4d} ({sum(s[2] for s in yes):3d})")


def main() -> int:
    ap = argparse.ArgumentParser()
    policy = RelevancePolicy()
    ap.add_argument("--write", action="store_true", help=f"write the fitted model to {MODEL_PATH}")
    ap.add_argument("--papers", type=int, default=policy.reading_papers)
    ap.add_argument("--floor", type=float, default=policy.reading_floor)
    ap.add_argument("--sure", type=float, default=None,
                    help="gate p at which the gate's answer stands unread (default: the policy's)")
    ap.add_argument("--per-corpus", type=int, default=100, help="labelled questions per corpus (0: all)")
    ap.add_argument("--all-written", default="seed",
                    help="corpora whose written questions are all read beyond --per-corpus (comma-separated)")
    ap.add_argument("--gate", choices=("out-of-fold", "shipped"), default="out-of-fold",
                    help="the gate's p as a feature: from gates fitted without the question's fold, "
                         "or the shipped gate's (in-sample on 70%% of the questions)")
    ap.add_argument("--gate-floors", default="0,0.02,0.05,0.1,0.2",
                    help="gate floors tried (ReadingModel.gate_floor; off: the reading alone, "
                         "w_gate 0); the one with the best out-of-fold net is kept (ties: off, "
                         "then the lowest)")
    ap.add_argument("--collect-only", action="store_true")
    ap.add_argument("--likelihood", action="store_true",
                    help="fit the weights for readings with likelihood gains (ReadingModel.likelihood), "
                         "on the questions read with them; the shipped weights without gains are kept")
    ap.add_argument("--may-answer", action="store_true",
                    help="only report, per band of out-of-fold combined probability, how many read "
                         "candidates the model said yes to answer (what a refusal may say of them)")
    ap.add_argument("--pairs", action="store_true",
                    help="only report what answering two alike-read papers would do (unaccepted_pairs)")
    ap.add_argument("--cached-only", action="store_true", help="fit on the readings already cached")
    ap.add_argument("--corpora", default="seed,ml_conf,arxiv_math,scifact")
    ap.add_argument("--scifact", type=int, default=200, help="SciFact train claims labelled (0: all)")
    args = ap.parse_args()
    if not all(available(c) for c in ("scifact", "arxiv_math", "ml_conf")):
        print("shared corpora missing: nothing to calibrate on")
        return 0
    gate = relevance_model()
    sure = args.sure or policy.reading_sure or gate.threshold
    rel_args = argparse.Namespace(cache=str(ROOT / "benchmarks" / ".stores"), candidates=20,
                                  limit_scifact=args.scifact, cross=120)
    records = []
    for corpus in args.corpora.split(","):
        records += cr.corpus_records(corpus, rel_args)
    # SciFact's held-out claims are what `evaluate.py scifact-heldout` asks: never fitted on
    records = [r for r in records if not (r["item"].corpus == "scifact" and r["item"].held_out())]
    records = limited(out_of_fold_gate(records, gate) if args.gate == "out-of-fold"
                      else cr.scored(records, gate), args.per_corpus,
                      tuple(c for c in args.all_written.split(",") if c))
    questions = read_questions(records, args.floor)
    print(floor_cost(records, args.floor), file=sys.stderr)
    print(f"{len(questions)} questions to read (floor {args.floor}, {args.papers} papers each)", file=sys.stderr)
    cache = read_cache() if args.cached_only else collect(questions, args.papers)
    if args.collect_only:
        return 0
    # too few read questions for one 70/30 split: the threshold is chosen on out-of-fold
    # probabilities (each question scored by a model fitted without its fold), the model then
    # fitted on all of them
    all_read = {r.rec["item"].qid for r in rows_of(questions, cache, args.papers, args.likelihood)}
    read = [r for r in questions if r["item"].qid in all_read]
    if args.pairs:
        report_pairs(read, cache, args.papers, sure)
        return 0
    if args.may_answer:
        report_may_answer(read, cache, args.papers, ReadingModel.load().gate_floor)
        return 0
    floors = [None if f == "off" else float(f) for f in args.gate_floors.split(",")]
    with_gain = args.likelihood
    floor, best, threshold = best_floor(read, cache, args.papers, floors, with_gain, gate.threshold, sure)
    model = fit(list(rows_of(read, cache, args.papers, with_gain)), floor, with_gain)
    model.threshold = threshold
    print(f"model: {model.w_gate:+.3f} * logit(max(p, {model.gate_floor})) {model.w_yes:+.3f} * logit(yes) {model.w_lead:+.3f} * lead "
          f"{model.w_gain:+.3f} * gain {model.w_gain_lead:+.3f} * gain lead "
          f"{model.intercept:+.3f}; threshold {model.threshold:.3f}; unread above gate p {sure:.3f}")
    fig = figures(read, best, gate.threshold, model.threshold, sure)
    report("out-of-fold", fig)
    for corpus in args.corpora.split(","):
        report(corpus, figures([r for r in read if r["item"].corpus == corpus], best, gate.threshold,
                               model.threshold, sure))
    if with_gain:  # the same questions judged without the gain, for comparison
        _, plain, plain_threshold = best_floor(read, cache, args.papers, floors, False, gate.threshold, sure)
        report("without gain", figures(read, plain, gate.threshold, plain_threshold, sure))
    if args.write:
        model.provenance = {
            "fitted_by": "benchmarks/calibrate_reading.py", "date": time.strftime("%Y-%m-%d"),
            "read": f"best candidate gate p >= {args.floor}, at most {args.per_corpus} questions a corpus"
                    f" (every written question of {args.all_written or 'none'})",
            "corpora": args.corpora.split(","),
            "gate_floors_tried": [f if f is not None else "off" for f in floors],
            "papers_per_question": args.papers, "unread_above": sure,
            "questions_read": len(read),
            "training_rows": len(list(rows_of(read, cache, args.papers, with_gain))),
            "features": "gate, yes, lead" + (", likelihood gain, its lead" if with_gain else ""),
            "threshold_rule": f"most right answers minus wrong ones (wrong paper, out-of-corpus, "
                              f"leave-one-out) on {FOLDS}-fold out-of-fold probabilities; ties the stricter",
            "out_of_fold": fig,
        }
        shipped = ReadingModel.load()
        if with_gain:  # the readings without gains stay judged by the shipped weights
            shipped.likelihood = model
        else:
            model.likelihood = shipped.likelihood
            shipped = model
        MODEL_PATH.write_text(json.dumps(shipped.to_json(), indent=1, default=int))
        print(f"wrote {MODEL_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
