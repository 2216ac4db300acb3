"""Fit the model that reads whether a message asks about the paper in focus or asks something new
(answer/intent.py, focus_model), and measure it.

    .venv/bin/python benchmarks/fit_focus.py [--write]

"How big is the training data?" or "benchmarks + headline number?" right after an answer about one
paper asks about that paper, though it points at none; "cool. how do you brighten an underexposed
face in a photo?" does not. The model reading the focus paper against such a message cannot tell
them apart (a detail question is rarely "about" the paper in its words:
benchmarks/calibrate_focus.py), so this model reads the message itself: a binary logistic
regression over the packaged MiniLM vector, labels "focus" and "new".

Training messages (rounds 1 to 5 and benchmarks/asks/train.jsonl, each written blind by a
session that saw no code):
- focus: every message of benchmarks/asks/train.jsonl (follow-ups about one paper), and the last
  turn of every followup_detail / followup_count item of the conversation and follow-up sets;
- new: the second turn of every "those two" item ("and the one about …"), the last turn of every
  topic_switch item and of every follow-up set's "none" item (an absent topic asked after an
  answer), and the first turn of every conversation item (a question asking for a paper).
Test messages, never used in the fit: benchmarks/asks/test.jsonl and the same kinds of turns of
round 6. The regularisation and the probability at which a message is read as about the focus are
chosen by 5-fold cross-validation on the training messages only: the lowest probability at which at
most 2% of the "new" messages would be read as about the focus (answering the paper in focus for
a new question cites a wrong paper; missing a follow-up only falls back to reading it).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "benchmarks"))

from assistant.answer.intent import FOCUS_MODEL_PATH, message_vectors  # noqa: E402
from fit_intent import C_GRID, cross_validated, fit, read  # noqa: E402

QUESTIONS = ROOT / "benchmarks" / "questions"
ASKS = ROOT / "benchmarks" / "asks"
TRAIN_ROUNDS = ("", "_2", "_3", "_4", "_5")  # file suffixes of rounds 1 to 5
TEST_ROUNDS = ("_6",)
MAX_NEW_READ_AS_FOCUS = 0.005
THRESHOLDS = [round(x, 2) for x in np.arange(0.5, 0.99, 0.02)]


def round_of(path: Path) -> str:
    m = re.search(r"(_\d+)$", path.stem)
    return m.group(1) if m else ""


def conversation_turns(rounds: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(message, label) from the conversation and follow-up sets of these rounds."""
    msgs, labels = [], []
    for path in sorted(QUESTIONS.glob("*.jsonl")):
        if not re.search(r"_(conversations|followups)(_\d+)?$", path.stem) or round_of(path) not in rounds:
            continue
        for line in path.read_text().splitlines():
            item = json.loads(line) if line.strip() else None
            if not item or len(item.get("turns", [])) < 2:
                continue
            turns, kind = item["turns"], item.get("kind", "")
            if kind in ("followup_detail", "followup_count"):
                msgs.append(turns[-1]); labels.append("focus")
            elif kind == "those_two":
                msgs.append(turns[1]); labels.append("new")
            elif kind in ("topic_switch", "none"):
                msgs.append(turns[-1]); labels.append("new")
            msgs.append(turns[0]); labels.append("new")
    return msgs, labels


def asks_messages(name: str) -> tuple[list[str], list[str]]:
    rows = [json.loads(l) for l in (ASKS / f"{name}.jsonl").read_text().splitlines() if l.strip()]
    return [r["message"] for r in rows], ["focus"] * len(rows)


def dataset(rounds: tuple[str, ...], asks: str) -> tuple[list[str], list[str]]:
    m1, l1 = conversation_turns(rounds)
    m2, l2 = asks_messages(asks)
    seen, msgs, labels = set(), [], []
    for m, l in zip(m1 + m2, l1 + l2):
        if m not in seen:
            seen.add(m); msgs.append(m); labels.append(l)
    return msgs, labels


def focus_p(labels: list[str], probs: list[float]) -> np.ndarray:
    """P(focus) from the binary readings (label, probability of that label)."""
    return np.array([p if lab == "focus" else 1 - p for lab, p in zip(labels, probs)])


def threshold_for(p_focus: np.ndarray, y: list[str]) -> float:
    """The lowest threshold at which at most MAX_NEW_READ_AS_FOCUS of "new" messages read as focus."""
    new = np.array([t == "new" for t in y])
    for t in THRESHOLDS:
        if (p_focus[new] >= t).mean() <= MAX_NEW_READ_AS_FOCUS:
            return t
    return THRESHOLDS[-1]


def report(name: str, p_focus: np.ndarray, y: list[str], t: float) -> dict:
    focus = np.array([t_ == "focus" for t_ in y])
    got = p_focus >= t
    out = {"focus_read": int((got & focus).sum()), "focus": int(focus.sum()),
           "new_read_as_focus": int((got & ~focus).sum()), "new": int((~focus).sum())}
    print(f"  {name}: focus read as focus {out['focus_read']}/{out['focus']}, "
          f"new read as focus {out['new_read_as_focus']}/{out['new']} (at p >= {t})")
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help=f"write the fitted model to {FOCUS_MODEL_PATH}")
    ap.add_argument("--show", action="store_true", help="print the test messages read wrongly")
    args = ap.parse_args()
    train_msgs, train_y = dataset(TRAIN_ROUNDS, "train")
    test_msgs, test_y = dataset(TEST_ROUNDS, "test")
    X, X_test = message_vectors(train_msgs), message_vectors(test_msgs)
    cv = cross_validated(X, train_y)
    scored = {}
    for C in C_GRID:
        p = focus_p(*cv[C])
        t = threshold_for(p, train_y)
        focus = np.array([y == "focus" for y in train_y])
        scored[C] = (int(((p >= t) & focus).sum()), t)
    C = max(C_GRID, key=lambda c: (scored[c][0], -c))
    t = scored[C][1]
    print(f"training {len(train_y)} messages {dict(Counter(train_y))}; 5-fold, C={C}, threshold {t}:")
    train_scores = report("training (out of fold)", focus_p(*cv[C]), train_y, t)
    model = fit(X, train_y, C)
    p_test = focus_p(*read(model, X_test))
    print(f"test {len(test_y)} messages {dict(Counter(test_y))}:")
    test_scores = report("test", p_test, test_y, t)
    if args.show:
        for m, y, p in zip(test_msgs, test_y, p_test):
            if (p >= t) != (y == "focus"):
                print(f"    {y:5s} p={p:.2f}  {m[:110]}")
    if args.write:
        model.provenance = {
            "fitted_by": "benchmarks/fit_focus.py", "date": time.strftime("%Y-%m-%d"),
            "training_messages": len(train_y), "C": C, "threshold": t,
            "threshold_rule": f"lowest p at which at most {MAX_NEW_READ_AS_FOCUS:.1%} of new messages "
                              "read as focus (5-fold, training)",
            "embedding": "all-MiniLM-L6-v2 (packaged ONNX)",
            "training": train_scores, "test": test_scores,
        }
        FOCUS_MODEL_PATH.write_text(json.dumps(model.to_json()))
        print(f"wrote {FOCUS_MODEL_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
