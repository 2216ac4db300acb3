"""Fit the model that reads what a follow-up asks about its paper (answer/intent.py, AsksModel),
and measure it against the phrase rules.

    .venv/bin/python benchmarks/fit_asks.py [--write]

Messages: benchmarks/asks/train.jsonl and benchmarks/asks/test.jsonl, follow-ups about one paper
labelled authors_count ("solo work or joint?"), authors ("whose paper is that"), date ("when did
it come out?") or content (anything the paper does or says, including "how many datasets do
they use?" and "who proved the case they extend?"). Each set was written by its own session that
saw no code and not the other set. The model is a multinomial logistic regression over the
packaged MiniLM vectors; its regularisation, and the probability at which it reads a message the
model must reach to be taken over the rules, are chosen by 5-fold cross-validation on the training messages only.
Scored on the test messages: the rules alone (query.asked_by_rules), the model alone, the rules where they name what is asked and
the model elsewhere ("fired"), and the shipped way ("confident"): the model where its probability
reaches the chosen confidence, the rules elsewhere.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "benchmarks"))

from assistant.answer.intent import ASKS_MODEL_PATH, message_vectors  # noqa: E402
from assistant.answer.query import asked_by_rules  # noqa: E402
from fit_intent import (C_GRID, CONFIDENCE_GRID, accuracy, combined, confusion, cross_validated, fired,  # noqa: E402
                        fit, read)

SETS = ROOT / "benchmarks" / "asks"
RULES_DEFAULT = "content"  # what the rules read when no author or date phrase matches


def load(path: Path) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r["message"] for r in rows], [r["label"] for r in rows]


def authors_f1(pred: list[str], gold: list[str]) -> str:
    """How well the two labels that change the answer (authors, authors_count) are read."""
    out = []
    for label in ("authors", "authors_count"):
        tp = sum(p == g == label for p, g in zip(pred, gold))
        fp = sum(p == label != g for p, g in zip(pred, gold))
        fn = sum(g == label != p for p, g in zip(pred, gold))
        out.append(f"{label} precision {tp / max(tp + fp, 1):.2f} recall {tp / max(tp + fn, 1):.2f}")
    return "; ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help=f"write the fitted model to {ASKS_MODEL_PATH}")
    args = ap.parse_args()
    train_msgs, train_y = load(SETS / "train.jsonl")
    test_msgs, test_y = load(SETS / "test.jsonl")
    X, X_test = message_vectors(train_msgs), message_vectors(test_msgs)
    rules_train = [asked_by_rules(m) for m in train_msgs]
    cv = cross_validated(X, train_y)
    C = max(C_GRID, key=lambda c: (accuracy(cv[c][0], train_y), -c))
    labels, probs = cv[C]
    confidence = max([0.0] + CONFIDENCE_GRID,
                     key=lambda t: (accuracy(combined(labels, probs, rules_train, t), train_y), t))
    fired_at = max([0.0] + CONFIDENCE_GRID,
                   key=lambda t: (accuracy(fired(labels, probs, rules_train, t, RULES_DEFAULT), train_y), t))
    print(f"training {len(train_y)} messages {dict(Counter(train_y))}; cross-validated: rules "
          f"{accuracy(rules_train, train_y):.3f}, model {accuracy(labels, train_y):.3f} (C={C}), confident "
          f"{accuracy(combined(labels, probs, rules_train, confidence), train_y):.3f} (model where p >= {confidence}), "
          f"fired {accuracy(fired(labels, probs, rules_train, fired_at, RULES_DEFAULT), train_y):.3f} (p >= {fired_at})")
    model = fit(X, train_y, C)
    lab, p = read(model, X_test)
    rules_test = [asked_by_rules(m) for m in test_msgs]
    scores = {}
    print(f"test ({len(test_y)} messages, {dict(Counter(test_y))}):")
    for name, pred in (("rules", rules_test), ("model", lab), ("fired", fired(lab, p, rules_test, fired_at, RULES_DEFAULT)),
                       ("confident", combined(lab, p, rules_test, confidence))):
        scores[name] = accuracy(pred, test_y)
        print(f"  {name:9s} accuracy {scores[name]:.3f}; {authors_f1(pred, test_y)}\n"
              f"         errors (gold→read): {confusion(pred, test_y)}")
    if args.write:
        model.provenance = {
            "fitted_by": "benchmarks/fit_asks.py", "date": time.strftime("%Y-%m-%d"),
            "training_messages": len(train_y), "C": C, "confidence": confidence,
            "confidence_rule": "the model where its p reaches this, else the phrase rules "
                               "(best 5-fold accuracy on training)",
            "embedding": "all-MiniLM-L6-v2 (packaged ONNX)",
            "test_accuracy": scores, "test_messages": len(test_y),
        }
        ASKS_MODEL_PATH.write_text(json.dumps(model.to_json()))
        print(f"wrote {ASKS_MODEL_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
