"""Fit the relevance model (answer/relevance.py) on labelled pairs and choose its threshold.

    .venv/bin/python benchmarks/calibrate_relevance.py [--write] [--limit-scifact N]

Labelled questions, each asked against its corpus's store (benchmarks/corpora.py):
  pos    a question and the papers that answer it: SciFact train claims asked as "Is there
         evidence that <claim>?" (qrels), our calibration questions for arxiv_math and ml_conf
         and the seed corpus (benchmarks/calibration/, written by a session that saw neither the
         code nor the evaluation sets), the single-turn items of tests/data/seed_heldout.jsonl
  loo    the same question with its answering papers removed from the candidates: a near-miss
         question the corpus no longer answers (leave-one-out)
  none   written out-of-corpus questions (near misses and unrelated ones)
  cross  another corpus's questions (SciFact claims, arXiv titles) asked against a store that
         does not cover them
Every question's top candidates from hybrid retrieval become (features, label) pairs. Questions
are split 70/30 by a hash of their id; the model is fitted on the 70 and the threshold chosen on
the 30: the lowest probability at which at most 2% of the held-out out-of-corpus questions
(loo + none + cross) are answered. Held-out figures are printed, and written with the model.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import (DATA, ROOT, available, corpus_titles, evidence_question, held_out,  # noqa: E402
                     open_corpus, read_jsonl, scifact_claims, seed_ids_by_key)

from assistant.answer.evidence import SentenceEmbeddings  # noqa: E402
from assistant.answer.query import question_core, topic_of  # noqa: E402
from assistant.answer.relevance import (FEATURES, MODEL_PATH, QueryTerms, RelevanceModel,  # noqa: E402
                                        feature_rows, sentence_similarity)

CALIBRATION = ROOT / "benchmarks" / "calibration"
NEGATIVE_KINDS = ("loo", "none", "cross")


@dataclass
class Labelled:
    qid: str
    corpus: str
    kind: str  # pos | loo | none | cross | topic
    query: str
    gold: set[str] = field(default_factory=set)
    exclude: set[str] = field(default_factory=set)

    def held_out(self) -> bool:
        # split by the underlying question, so a question and its leave-one-out twin stay together
        return held_out(self.qid.split("#")[0])


def with_loo(item: Labelled, kind: str = "loo") -> list[Labelled]:
    return [item, Labelled(item.qid + "#loo", item.corpus, kind, item.query, set(), set(item.gold))]


def scifact_items(limit: int) -> list[Labelled]:
    out = []
    for qid, claim, gold in scifact_claims()[: limit or None]:
        out += with_loo(Labelled(f"sf-{qid}", "scifact", "pos", evidence_question(claim), gold))
    return out


def written_items(corpus: str, path: Path, key_map: dict[str, str] | None = None) -> list[Labelled]:
    """Our written question files: qa/name/author → pos (+loo), summary → topic, none → none."""
    out = []
    for it in read_jsonl(path):
        turns = it.get("turns") or [it.get("query")]
        if len(turns) != 1:
            continue
        gold = {key_map.get(e, e) if key_map else e for e in it.get("expect", [])}
        kind = it["kind"]
        if kind == "none":
            out.append(Labelled(it["id"], corpus, "none", turns[0]))
        elif kind == "summary":
            # judged as the engine judges a summary: on the topic, without the request's words
            out += with_loo(Labelled(it["id"], corpus, "topic", topic_of(turns[0]), gold), "topic_loo")
        elif kind in ("qa", "name", "author"):
            out += with_loo(Labelled(it["id"], corpus, "pos", turns[0], gold))
    return out


def cross_items(n: int, seed: int = 11) -> list[Labelled]:
    """Questions from one corpus asked against corpora that do not cover them."""
    rng = random.Random(seed)
    claims = [c for _, c, _ in scifact_claims()]
    math_titles = [t for _, t in corpus_titles("arxiv_math")]
    ml_titles = [t for _, t in corpus_titles("ml_conf")]
    out = []
    for corpus in ("arxiv_math", "ml_conf", "seed"):
        out += [Labelled(f"x-sf-{corpus}-{i}", corpus, "cross", evidence_question(c))
                for i, c in enumerate(rng.sample(claims, n))]
    for corpus in ("scifact", "seed"):
        out += [Labelled(f"x-am-{corpus}-{i}", corpus, "cross", f"Which paper is about {t.lower()}?")
                for i, t in enumerate(rng.sample(math_titles, n))]
    out += [Labelled(f"x-ml-scifact-{i}", "scifact", "cross", f"What work is there on {t.lower()}?")
            for i, t in enumerate(rng.sample(ml_titles, n))]
    return out


def judged_text(item: Labelled) -> str:
    """What the engine retrieves and judges for this question (query.parse: a summary's topic
    is already stored as the item's query; a question loses its "is there evidence that")."""
    return item.query if item.kind.startswith("topic") else question_core(item.query)


def candidates(pa, embed, item: Labelled, n: int) -> dict:
    """The item's top-n candidates (its excluded papers removed) and their sentence similarity:
    the expensive part, cached; features are computed from these at fit time."""
    text = judged_text(item)
    hits = pa.retriever.search(text, k=n + len(item.exclude))
    hits = [h for h in hits if h.paper.paper_id not in item.exclude][:n]
    return {"item": item, "text": text, "hits": hits, "sent": sentence_similarity(text, hits, embed)}


def collect(items: list[Labelled], n: int) -> list[dict]:
    out = []
    for corpus in dict.fromkeys(i.corpus for i in items):
        pa = open_corpus(corpus)
        embed = SentenceEmbeddings(pa.store.embedder, capacity=400_000)
        t0 = time.perf_counter()
        mine = [i for i in items if i.corpus == corpus]
        out += [candidates(pa, embed, item, n) for item in mine]
        print(f"  {corpus}: {len(mine)} questions in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return out


def featurize(records: list[dict], stats) -> list[dict]:
    """Feature rows and labels of each record's candidates (stats: the corpus's CorpusStats)."""
    out = []
    for rec in records:
        item, hits = rec["item"], rec["hits"]
        rows = feature_rows(QueryTerms.of(rec.get("text", item.query), stats), hits, rec["sent"],
                            topic=item.kind.startswith("topic"))
        out.append({"item": item, "rows": rows, "ids": [h.paper.paper_id for h in hits],
                    "labels": [int(h.paper.paper_id in item.gold) for h in hits]})
    return out


def labelled_items(corpus: str, args) -> list[Labelled]:
    if corpus == "scifact":
        items = scifact_items(args.limit_scifact)
    elif corpus == "seed":
        keys = seed_ids_by_key(open_corpus("seed"))
        items = (written_items("seed", ROOT / "tests" / "data" / "seed_heldout.jsonl", keys)
                 + written_items("seed", CALIBRATION / "seed.jsonl", keys))
    else:
        items = written_items(corpus, CALIBRATION / f"{corpus}.jsonl")
    return items + [i for i in cross_items(args.cross) if i.corpus == corpus]


class _pickle_base:
    import pickle
    Unpickler = pickle.Unpickler


class _Unpickler(_pickle_base.Unpickler):
    """Caches written by this script run as __main__ load from any importer of it."""

    def find_class(self, module, name):
        return Labelled if name == "Labelled" else super().find_class(module, name)


def hash_order(item: Labelled) -> str:
    """A stable order of questions, by a hash of their id: what a limit keeps the first of."""
    import hashlib

    return hashlib.md5(item.qid.encode()).hexdigest()


def corpus_records(corpus: str, args, limit: int = 0) -> list[dict]:
    """The corpus's labelled questions with their candidates' features, collected once;
    `limit`: at most that many questions, chosen by a hash of their id (stable)."""
    import pickle

    cache = Path(args.cache) / f"relevance_candidates_{corpus}.pkl"
    cached = _Unpickler(cache.open("rb")).load() if cache.exists() else []
    known = {(r["item"].qid, r.get("text", r["item"].query)): r for r in cached}
    items = labelled_items(corpus, args)
    if limit:
        items = sorted(items, key=hash_order)[:limit]
    missing = [i for i in items if (i.qid, judged_text(i)) not in known]
    if missing:  # only questions new (or judged on new text) since the last run are collected
        print(f"{corpus}: {len(missing)} of {len(items)} labelled questions to collect", file=sys.stderr)
        known.update({(r["item"].qid, r["text"]): r for r in collect(missing, args.candidates)})
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(list(known.values())))
    records = [{**known[(i.qid, judged_text(i))], "item": i} for i in items]
    return featurize(records, open_corpus(corpus).store.corpus_stats())


def matrix(records: list[dict], features: list[str]) -> tuple[np.ndarray, np.ndarray]:
    X = [[r[f] for f in features] for rec in records for r in rec["rows"]]
    y = [l for rec in records for l in rec["labels"]]
    return np.array(X, dtype=float), np.array(y)


def corpus_weights(records: list[dict]) -> np.ndarray:
    """Per pair: 1 / (pairs of its corpus), so each corpus weighs the same in the fit; else
    SciFact's thousands of claims decide how a 20-paper collection is judged."""
    sizes: dict[str, int] = {}
    for r in records:
        sizes[r["item"].corpus] = sizes.get(r["item"].corpus, 0) + len(r["rows"])
    w = np.array([1.0 / sizes[r["item"].corpus] for r in records for _ in r["rows"]])
    return w * len(w) / w.sum()


def fit(records: list[dict], features: list[str], c: float, balance: bool = False) -> RelevanceModel:
    from sklearn.linear_model import LogisticRegression

    X, y = matrix(records, features)
    mean, scale = X.mean(axis=0), X.std(axis=0) + 1e-9
    weights = corpus_weights(records) if balance else None
    lr = LogisticRegression(C=c, max_iter=2000).fit((X - mean) / scale, y, sample_weight=weights)
    return RelevanceModel(list(features), mean, scale, lr.coef_[0], float(lr.intercept_[0]), 0.5, {})


@dataclass
class TreeModel:
    """Gradient-boosted trees, for comparison with the shipped logistic model (not shipped)."""

    features: list[str]
    clf: object
    threshold: float = 0.5
    provenance: dict = field(default_factory=dict)

    def proba(self, rows: np.ndarray) -> np.ndarray:
        return self.clf.predict_proba(rows)[:, 1]


def fit_trees(records: list[dict], features: list[str]) -> TreeModel:
    from sklearn.ensemble import HistGradientBoostingClassifier

    X, y = matrix(records, features)
    clf = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_depth=3,
                                         l2_regularization=1.0, random_state=0).fit(X, y)
    return TreeModel(list(features), clf)


def scored(records: list[dict], model: RelevanceModel) -> list[dict]:
    """Per question: probabilities of its candidates, best first."""
    out = []
    for rec in records:
        if not rec["rows"]:
            out.append({**rec, "p": [], "order": []})
            continue
        p = model.proba(np.array([[r[f] for f in model.features] for r in rec["rows"]]))
        out.append({**rec, "p": p.tolist(), "order": list(np.argsort(-p))})
    return out


def answered(rec: dict, t: float) -> bool:
    return bool(rec["p"]) and max(rec["p"]) >= t


def top_is_gold(rec: dict) -> bool:
    return bool(rec["p"]) and rec["labels"][rec["order"][0]] == 1


def question_figures(recs: list[dict], t: float) -> dict:
    pos = [r for r in recs if r["item"].kind == "pos"]
    fig = {"answered_correct": sum(answered(r, t) and top_is_gold(r) for r in pos) / max(len(pos), 1),
           "answered": sum(answered(r, t) for r in pos) / max(len(pos), 1), "n_pos": len(pos)}
    for kind in NEGATIVE_KINDS:
        neg = [r for r in recs if r["item"].kind == kind]
        fig[f"false_{kind}"] = sum(answered(r, t) for r in neg) / max(len(neg), 1)
        fig[f"n_{kind}"] = len(neg)
    neg = [r for r in recs if r["item"].kind in NEGATIVE_KINDS]
    fig["false_all"] = sum(answered(r, t) for r in neg) / max(len(neg), 1)
    # what the threshold rule counts: written out-of-corpus questions (none + cross); the
    # leave-one-out twins are near misses, reported apart
    ooc = [r for r in recs if r["item"].kind in ("none", "cross")]
    fig["false_out_of_corpus"] = sum(answered(r, t) for r in ooc) / max(len(ooc), 1)
    return fig


def choose_threshold(recs: list[dict], max_false: float, kinds=NEGATIVE_KINDS) -> float:
    """The lowest threshold whose false-answer rate on out-of-corpus questions is ≤ max_false."""
    neg = sorted((max(r["p"]) for r in recs if r["item"].kind in kinds and r["p"]), reverse=True)
    allowed = int(max_false * len(neg))
    return float(neg[allowed]) + 1e-6 if allowed < len(neg) else 0.0


def choose_summary_threshold(recs: list[dict], floor: float, beta: float = 2.0) -> float:
    """Summary membership: the threshold (at most the question gate's) with the best F-beta on
    held-out topics; beta 2 weighs recall, as a summary that misses a paper misleads more."""
    def f_beta(t: float) -> float:
        tf = topic_figures(recs, t)
        p, r = tf["precision"], tf["recall"]
        return (1 + beta ** 2) * p * r / (beta ** 2 * p + r) if p + r else 0.0

    grid = [float(x) for x in np.arange(0.05, floor + 1e-9, 0.05)] + [floor]
    return max(grid, key=lambda t: (round(f_beta(t), 4), t))


def precision_at_1(recs: list[dict], by_model: bool) -> float:
    pos = [r for r in recs if r["item"].kind == "pos" and r["labels"]]
    hits = sum(r["labels"][r["order"][0] if by_model else 0] for r in pos)
    return hits / max(len(pos), 1)


def topic_figures(recs: list[dict], t: float) -> dict:
    """Summary topics: share of the expected papers among the candidates selected, precision,
    and how often a topic whose papers were all removed still selects something."""
    topics = [r for r in recs if r["item"].kind == "topic"]
    tp = sum(l for r in topics for p, l in zip(r["p"], r["labels"]) if p >= t)
    sel = sum(1 for r in topics for p in r["p"] if p >= t)
    gold = sum(len(r["item"].gold) for r in topics)
    loo = [r for r in recs if r["item"].kind == "topic_loo"]
    return {"recall": tp / max(gold, 1), "precision": tp / max(sel, 1), "n": len(topics),
            "false": sum(answered(r, t) for r in loo) / max(len(loo), 1)}


def report(name: str, recs: list[dict], t: float) -> None:
    f = question_figures(recs, t)
    tf = topic_figures(recs, t)
    print(f"{name:10s} t={t:.3f} pos answered+right {f['answered_correct']:.3f} (answered {f['answered']:.3f}, "
          f"n={f['n_pos']}) | false: loo {f['false_loo']:.3f} (n={f['n_loo']}) none {f['false_none']:.3f} "
          f"(n={f['n_none']}) cross {f['false_cross']:.3f} (n={f['n_cross']}) all {f['false_all']:.3f} | "
          f"topics recall {tf['recall']:.2f} precision {tf['precision']:.2f} false {tf['false']:.2f} (n={tf['n']})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help=f"write the fitted model to {MODEL_PATH}")
    ap.add_argument("--candidates", type=int, default=20)
    ap.add_argument("--limit-scifact", type=int, default=0)
    ap.add_argument("--cross", type=int, default=120, help="cross-corpus questions per pair")
    ap.add_argument("--max-false", type=float, default=0.02)
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--sweep", action="store_true", help="print the held-out figures at other thresholds")
    ap.add_argument("--negatives", default=",".join(NEGATIVE_KINDS),
                    help="which out-of-corpus questions the threshold rule counts")
    ap.add_argument("--skip-loo", default="",
                    help="CORPUS:KIND pairs left out of the fit, e.g. scifact:loo")
    ap.add_argument("--balance", action="store_true", help="weigh each corpus equally in the fit")
    ap.add_argument("--trees", action="store_true", help="gradient-boosted trees instead (to compare)")
    ap.add_argument("--features", default=",".join(FEATURES))
    ap.add_argument("--corpora", default="seed,arxiv_math,ml_conf,scifact")
    ap.add_argument("--cache", default=str(ROOT / "benchmarks" / ".stores"),
                    help="folder for the collected candidates (relevance_candidates_CORPUS.pkl); "
                         "delete them to collect again")
    args = ap.parse_args()
    missing = [c for c in ("scifact", "arxiv_math", "ml_conf") if not available(c)]
    if missing:
        print(f"shared corpora missing ({', '.join(missing)}): nothing to calibrate on")
        return 0

    records = []
    for corpus in args.corpora.split(","):
        records += corpus_records(corpus, args)
    features = args.features.split(",")
    train = [r for r in records if not r["item"].held_out()]
    held = [r for r in records if r["item"].held_out()]
    skip = {tuple(x.split(":")) for x in args.skip_loo.split(",") if x}
    fit_on = [r for r in train if (r["item"].corpus, r["item"].kind) not in skip]
    model = fit_trees(fit_on, features) if args.trees else fit(fit_on, features, args.c, args.balance)
    held_scored = scored(held, model)
    t = choose_threshold(held_scored, args.max_false, args.negatives.split(","))
    model.threshold = t
    model.summary_threshold = choose_summary_threshold(held_scored, t)
    print(f"summary threshold {model.summary_threshold:.3f}: held-out topics {topic_figures(held_scored, model.summary_threshold)}")
    if args.sweep:
        for x in np.arange(0.1, 0.95, 0.05):
            report("sweep", held_scored, float(x))
    print(f"pairs: train {sum(len(r['rows']) for r in train)}, held-out {sum(len(r['rows']) for r in held)}")
    for name, w in zip(features, getattr(model, "coef", [])):
        print(f"  {name:13s} {w:+.3f}")
    report("held-out", held_scored, t)
    for corpus in dict.fromkeys(r["item"].corpus for r in held_scored):
        report(corpus, [r for r in held_scored if r["item"].corpus == corpus], t)
    sf = [r for r in held_scored if r["item"].corpus == "scifact"]
    p1_fused, p1_model = precision_at_1(sf, False), precision_at_1(sf, True)
    print(f"SciFact held-out precision@1: fused order {p1_fused:.3f}, model order {p1_model:.3f}")
    if args.write:
        model.provenance = {
            "fitted_by": "benchmarks/calibrate_relevance.py",
            "date": time.strftime("%Y-%m-%d"),
            "candidates_per_question": args.candidates,
            "training_questions": {k: sum(1 for r in train if r["item"].kind == k)
                                   for k in ("pos", "loo", "none", "cross")},
            "sources": ["SciFact train claims + qrels (BEIR)", "benchmarks/calibration/arxiv_math.jsonl",
                        "benchmarks/calibration/ml_conf.jsonl", "benchmarks/calibration/seed.jsonl",
                        "tests/data/seed_heldout.jsonl (single turn)",
                        "cross-corpus: SciFact claims, arXiv math titles, ml_conf titles",
                        "leave-one-out twins of every answerable question"],
            "threshold_rule": f"lowest with <= {args.max_false:.0%} answered out-of-corpus held-out "
                              f"questions ({args.negatives})",
            "summary_threshold_rule": "best F2 on held-out summary topics, at most the threshold",
            "held_out": question_figures(held_scored, t),
            "held_out_topics": topic_figures(held_scored, t),
            "scifact_precision_at_1": {"fused": p1_fused, "model": p1_model},
        }
        MODEL_PATH.write_text(json.dumps(model.to_json(), indent=1))
        print(f"wrote {MODEL_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
