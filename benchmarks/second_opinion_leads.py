"""How many candidates should the second opinion score, and against what should a paper's pmi
be contrasted? A study, not a fit that ships: it prints held-out figures per variant.

    .venv/bin/python benchmarks/second_opinion_leads.py [--collect] [--corpora seed,ml_conf,arxiv_math]

Variants, each a logistic model over (logit of the gate's p, pmi[, lead]) fitted on the band
questions' 70% and judged on the 30% exactly as calibrate_second_opinion.py does (threshold: the
largest net gain of right answers over wrong ones):
- K=1: the shipped model (the best paper's pmi alone);
- K=2 and K=3 with lead = pmi minus the best other's (likelihood.leads);
- K=3 with lead = pmi minus the mean of the other two (a third paper as contrast, so that one close
  neighbour does not cancel the right paper's lead).
Every variant is scored on the same questions: those whose three best candidates all have a
cached pmi (`--collect` computes the missing ones, ~6 s a pair on two cores, resumable).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import calibrate_relevance as cr  # noqa: E402
import calibrate_second_opinion as cs  # noqa: E402
from corpora import ROOT  # noqa: E402

from assistant.answer.likelihood import leads, logit  # noqa: E402
from assistant.answer.relevance import default_model as relevance_model  # noqa: E402

VARIANTS = [(1, "max"), (2, "max"), (3, "max"), (3, "mean")]
MOST = max(k for k, _ in VARIANTS)


def contrasts(pmis: list[float], against: str) -> list[float]:
    """Each pmi's lead: over the best other (the engine's likelihood.leads), or over the others'
    mean (the variant measured here)."""
    if against == "max" or len(pmis) < 2:
        return leads(pmis)
    return [pmi - float(np.mean(pmis[:i] + pmis[i + 1:])) for i, pmi in enumerate(pmis)]


def by_question(band: list[dict], k: int) -> dict[int, list[tuple[int, str]]]:
    """(candidate index, cache key) of each question's k best candidates, as
    calibrate_second_opinion asks and caches them."""
    out: dict[int, list[tuple[int, str]]] = {}
    for rec, i, key in cs.candidates(band, k):
        out.setdefault(id(rec), []).append((i, key))
    return out


def pair_rows(band: list[dict], cache: dict[str, float], k: int, against: str) -> list[tuple]:
    """(question record, gate p, pmi, lead, label) for each of a question's k best candidates."""
    scored = by_question(band, k)
    out = []
    for rec in band:
        idx = [i for i, _ in scored[id(rec)]]
        pmis = [cache[key] for _, key in scored[id(rec)]]
        out += [(rec, rec["p"][i], pmi, ld, rec["labels"][i])
                for i, pmi, ld in zip(idx, pmis, contrasts(pmis, against))]
    return out


def features(p: float, pmi: float, ld: float, k: int) -> list[float]:
    return [logit(p), pmi] + ([ld] if k > 1 else [])


def best_per_question(rows: list[tuple], model, k: int) -> dict:
    best: dict[str, tuple[float, int]] = {}
    for rec, p, pmi, ld, label in rows:
        q = float(model.predict_proba(np.array([features(p, pmi, ld, k)]))[0, 1])
        if rec["item"].qid not in best or q > best[rec["item"].qid][0]:
            best[rec["item"].qid] = (q, label)
    return best


def fully_cached(rec: dict, cache: dict[str, float]) -> bool:
    return all(key in cache for _, _, key in cs.candidates([rec], MOST))


def main() -> int:
    from sklearn.linear_model import LogisticRegression

    ap = argparse.ArgumentParser()
    ap.add_argument("--collect", action="store_true", help=f"compute the missing pmi of the {MOST} best candidates")
    ap.add_argument("--corpora", default="seed,ml_conf,arxiv_math")
    ap.add_argument("--scifact", type=int, default=200, help="SciFact band questions (as calibrate_second_opinion)")
    args = ap.parse_args()
    gate = relevance_model()
    rel_args = argparse.Namespace(cache=str(ROOT / "benchmarks" / ".stores"), candidates=20, limit_scifact=0, cross=120)
    records, band = [], []
    for corpus in args.corpora.split(","):
        recs = cr.scored(cr.corpus_records(corpus, rel_args), gate)
        records += recs
        band += cs.sampled(cs.band_questions(recs, 0.03, gate.threshold), corpus,
                           args.scifact if corpus == "scifact" else 0)
    cache = cs.collect_pmi(band, MOST) if args.collect else cs.read_cache()
    scored = [r for r in band if fully_cached(r, cache)]
    print(f"{len(scored)} of {len(band)} band questions have their {MOST} best candidates scored")
    train = [r for r in scored if not r["item"].held_out()]
    held = [r for r in scored if r["item"].held_out()]
    held_recs = [r for r in records if r["item"].held_out()]
    for k, against in VARIANTS:
        rows = pair_rows(train, cache, k, against)
        X = np.array([features(p, pmi, ld, k) for _, p, pmi, ld, _ in rows])
        model = LogisticRegression(C=1.0, max_iter=1000).fit(X, np.array([r[-1] for r in rows]))
        best = best_per_question(pair_rows(held, cache, k, against), model, k)
        t = cs.choose_threshold(held_recs, best, gate.threshold)
        fig = cs.figures(held_recs, best, gate.threshold, t)
        weights = " ".join(f"{w:+.2f}" for w in model.coef_[0])
        name = f"lead against the {against} of the others" if k > 1 else "no lead"
        print(f"\nK={k}, {name}: weights {weights}, "
              f"intercept {model.intercept_[0]:+.2f}, threshold {t:.3f}, net gain {cs.net_gain(fig):+d}")
        cs.report("held-out", fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
