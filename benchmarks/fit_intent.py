"""Fit the intent model (answer/intent.py) and measure it against the phrase rules.

    .venv/bin/python benchmarks/fit_intent.py [--question-sets] [--round-sets] [--earlier-turns]
        [--test-round] [--balanced] [--words W] [--train-more FILE…] [--test-more FILE…]
        [--confidence P | --bar-on-held-out] [--held-out] [--changes] [--write [--out PATH]]

Training messages: benchmarks/intent/train.jsonl; test messages: benchmarks/intent/test.jsonl.
Each set was written by its own session that saw no code, no other set and not the other
session's messages. The model is a multinomial logistic regression over the packaged MiniLM
vectors; its regularisation, and the probability at which it reads a message the rules leave at
their default (question), are chosen by 5-fold cross-validation on the training messages only.
Scored on the test messages: the rules alone, the model alone, the model where it is confident
(else the rules), and the shipped way, the rules where they name an intent and the model where
they do not ("fired"; Settings.intent = rules_then_model).

--words W adds the TF-IDF of the message's words and word pairs (weighted W beside the vector;
answer/intent.py WordFeatures). --held-out scores the shipped model and the new one on every turn
of the question sets nothing is fitted on (`held_out_turns`: most of them one-paper questions, whose
misreading costs most); --bar-on-held-out takes as the bar the lowest at which the new model reads
those turns no worse than the shipped one.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Optional

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.answer.intent import MODEL_PATH, IntentModel, WordFeatures, message_vectors  # noqa: E402
from assistant.answer.query import detect_intent, plain, rules_then_model  # noqa: E402
from assistant.config import Settings  # noqa: E402
from assistant.text import tokens  # noqa: E402

SETS = ROOT / "benchmarks" / "intent"
OVERRULE = Settings().intent_overrule
C_GRID = (1.0, 4.0, 16.0, 64.0, 256.0)
CONFIDENCE_GRID = [round(x, 2) for x in np.arange(0.3, 0.96, 0.05)]


def load(path: Path) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r["message"] for r in rows], [r["intent"] for r in rows]


# The project's own question sets, whose kinds say what each single message asks for (the
# blind reworded sets are left out, as evaluation sets that nothing is fitted on).
KIND_INTENT = {"qa": "question", "name": "question", "author": "question", "multipart": "question",
               "none": "question", "summary": "summary", "compare": "compare",
               "described_compare": "compare", "compare_one_absent": "compare",
               "compare_both_absent": "compare"}
LABELLED_SETS = ["benchmarks/calibration/arxiv_math.jsonl", "benchmarks/calibration/ml_conf.jsonl",
                 "benchmarks/questions/arxiv_math_dev.jsonl", "benchmarks/questions/ml_conf_dev.jsonl",
                 "benchmarks/questions/arxiv_math_conversations.jsonl",
                 "benchmarks/questions/ml_conf_conversations.jsonl",
                 "benchmarks/questions/seed_conversations.jsonl", "tests/data/seed_heldout.jsonl",
                 "benchmarks/questions/seed_field_summaries.jsonl"]


def question_sets() -> tuple[list[str], list[str]]:
    """Single-message items of LABELLED_SETS with their intent (a field-summary set's "none"
    items are summaries of absent fields)."""
    msgs, intents = [], []
    for name in LABELLED_SETS:
        for line in (ROOT / name).read_text().splitlines():
            item = json.loads(line) if line.strip() else None
            turns = (item or {}).get("turns") or [(item or {}).get("query")]
            if not item or len(turns) != 1 or item["kind"] not in KIND_INTENT:
                continue
            intent = "summary" if "summaries" in name else KIND_INTENT[item["kind"]]
            msgs.append(turns[0])
            intents.append(intent)
    return msgs, intents


# Sets written blind for later rounds, whose kinds say what a message asks for, turn by turn: the
# last turn of a "those two" conversation compares the two papers it showed, a follow-up's last
# turn asks a question about its paper. The reworded sets (issue 21's recall measurement) and the
# newest round (the test below) stay out.
ROUND_SETS = [f"benchmarks/questions/{c}_{s}.jsonl" for c in ("seed", "arxiv_math", "ml_conf")
              for s in ("conversations_2", "conversations_3", "conversations_4", "conversations_6",
                        "conversations_7", "conversations_8", "compare_6", "compare_9", "compare_10",
                        "round_11", "round_12", "faith_5", "faith_8", "followups_5", "field_summaries_2",
                        "field_summaries_3", "field_summaries_4")]
HELD_OUT_ROUND = [f"benchmarks/questions/{c}_round_13.jsonl" for c in ("seed", "arxiv_math", "ml_conf")]
LAST_TURN_INTENT = {**KIND_INTENT, "those_two": "compare", "named_compare": "compare",
                    "compare_as_question": "compare", "plural_description": "compare",
                    "one_paper_question": "question", "followup_detail": "question",
                    "followup_count": "question", "topic_switch": "question"}


# Sets written after the shipped model was fitted, to score it blind: kept out of every choice
# a fit makes (the held-out turns too), so they stay blind and the fit stays reproducible.
BLIND_AFTER_FIT = [f"benchmarks/questions/{c}_round_15.jsonl" for c in ("seed", "arxiv_math", "ml_conf")]


def labelled_items(names: list[str]):
    """(set name, item) of each item of the sets `names` (those that exist) whose kind says
    the intent of its last turn."""
    for name in names:
        path = ROOT / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            item = json.loads(line) if line.strip() else None
            if item and item.get("kind") in LAST_TURN_INTENT:
                yield name, item


def last_turns(names: list[str]) -> tuple[list[str], list[str]]:
    """The last turn of each item of `names` whose kind says its intent (a field-summary set's
    "none" items are summaries of absent fields)."""
    msgs, intents = [], []
    for name, item in labelled_items(names):
        msgs.append((item.get("turns") or [item.get("query")])[-1])
        intents.append("summary" if "summaries" in name else LAST_TURN_INTENT[item["kind"]])
    return msgs, intents


def earlier_turns(names: list[str]) -> tuple[list[str], list[str]]:
    """Every turn but the last of each conversation of `names`: each asks for one paper (the
    first of "those two", a follow-up's first question, a topic before a switch), so a
    question. Without them the model reads "and the one about X?" as a comparison, from the
    comparisons that end such conversations."""
    msgs = [t for _, item in labelled_items(names) for t in (item.get("turns") or [])[:-1] if isinstance(t, str)]
    return msgs, ["question"] * len(msgs)


def set_items():
    """(path, item, its user turns) of every item of every question set (benchmarks/questions/,
    tests/data/), in file order."""
    for path in sorted((ROOT / "benchmarks" / "questions").glob("*.jsonl")) + sorted((ROOT / "tests" / "data").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            item = json.loads(line) if line.strip() else None
            if isinstance(item, dict) and item:
                yield path, item, item.get("turns") or [item.get("query") or item.get("question")]


def held_out_turns() -> tuple[list[str], list[str]]:
    """Every turn of the question sets nothing is fitted on (neither LABELLED_SETS nor
    ROUND_SETS) whose kind says its intent: the last turn by its kind, the earlier ones
    questions (`earlier_turns`)."""
    used = {ROOT / n for n in LABELLED_SETS + ROUND_SETS + BLIND_AFTER_FIT}
    msgs, intents = [], []
    for path, item, turns in set_items():
        if path in used or item.get("kind") not in LAST_TURN_INTENT or not all(isinstance(t, str) for t in turns):
            continue
        last = "summary" if "summaries" in path.name else LAST_TURN_INTENT[item["kind"]]
        msgs += turns
        intents += ["question"] * (len(turns) - 1) + [last]
    return msgs, intents


CLASS_WEIGHT: Optional[str] = None  # "balanced" with --balanced: each intent weighs the same in the fit
WORDS = 0.0  # --words: the weight of the word features (0: the vector alone)


def fit(X: np.ndarray, y: list[str], C: float, messages: Optional[list[str]] = None) -> IntentModel:
    """The model fitted on vectors `X` (and, with WORDS, the `messages`' word features, their
    vocabulary and idf taken from these messages only)."""
    from sklearn.linear_model import LogisticRegression

    words = word_features(messages) if WORDS and messages is not None else None
    rows = np.hstack([X, words.of(messages)]) if words is not None else X
    m = LogisticRegression(C=C, max_iter=3000, class_weight=CLASS_WEIGHT).fit(rows, y)
    coef, intercept = m.coef_, m.intercept_
    if len(m.classes_) == 2:  # sklearn keeps one row, P(second) = σ(z); a softmax over ±z/2 is the same
        coef, intercept = np.vstack([-coef / 2, coef / 2]), np.concatenate([-intercept / 2, intercept / 2])
    # four decimals keep the shipped file small (9,000 word features); every score below is of this model
    return IntentModel(list(m.classes_), np.round(coef, 4), np.round(intercept, 4), {}, words)


def word_features(messages: list[str]) -> WordFeatures:
    """The vocabulary (words and word pairs in at least two messages) and idf of `messages`,
    as scikit-learn computes them; WordFeatures.of reproduces its transform."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    tf = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, tokenizer=tokens,
                         token_pattern=None, lowercase=False).fit(messages)
    return WordFeatures({g: int(i) for g, i in tf.vocabulary_.items()}, np.round(tf.idf_, 4), WORDS)


def combined(model_labels: list[str], model_p: list[float], rules: list[str], confidence: float) -> list[str]:
    return [m if p >= confidence else r for m, p, r in zip(model_labels, model_p, rules)]


def fired(model_labels: list[str], model_p: list[float], rules: list[str], confidence: float,
          messages: list[str]) -> list[str]:
    """What the shipped way reads (`query.rules_then_model`): the rules where they decide;
    elsewhere the model, where its probability reaches `confidence` (at any probability for a
    comparison only a weak word suggests; at Settings.intent_overrule for one only "vs" asks for)."""
    return [rules_then_model(msg, r, m, p, confidence, OVERRULE)
            for m, p, r, msg in zip(model_labels, model_p, rules, messages)]


def read(model: IntentModel, X: np.ndarray, messages: Optional[list[str]] = None) -> tuple[list[str], list[float]]:
    p = model.proba(X, messages)
    return [model.labels[i] for i in p.argmax(axis=1)], p.max(axis=1).tolist()


def accuracy(pred: list[str], gold: list[str]) -> float:
    return sum(a == b for a, b in zip(pred, gold)) / max(len(gold), 1)


def cross_validated(X: np.ndarray, y: list[str], messages: Optional[list[str]] = None, folds: int = 5):
    """Out-of-fold readings for each C: (labels, probabilities); `messages` for word features."""
    from sklearn.model_selection import StratifiedKFold

    out = {}
    for C in C_GRID:
        labels, probs = [""] * len(y), [0.0] * len(y)
        for train, test in StratifiedKFold(folds, shuffle=True, random_state=0).split(X, y):
            fold_messages = ([messages[i] for i in train], [messages[i] for i in test]) if messages else (None, None)
            model = fit(X[train], [y[i] for i in train], C, fold_messages[0])
            lab, p = read(model, X[test], fold_messages[1])
            for i, a, b in zip(test, lab, p):
                labels[i], probs[i] = a, b
        out[C] = (labels, probs)
    return out


def one_standard_error(cv: dict, y: list[str]) -> float:
    """The strongest regularisation (smallest C) whose cross-validated accuracy is within one
    standard error of the best one's: sharper fits gain nothing measurable and read messages
    unlike the training ones with more confidence than they have."""
    best = max(accuracy(cv[c][0], y) for c in C_GRID)
    se = (best * (1 - best) / len(y)) ** 0.5
    return min(c for c in C_GRID if accuracy(cv[c][0], y) >= best - se)


def confusion(pred: list[str], gold: list[str]) -> str:
    wrong = Counter((g, p) for p, g in zip(pred, gold) if p != g)
    return ", ".join(f"{g}→{p} {n}" for (g, p), n in wrong.most_common(8)) or "none"


def every_turn() -> list[tuple[str, str, int, str]]:
    """(set, item id, turn number, message) of every user turn of every question set."""
    return [(path.stem, str(item.get("id", "")), n, turn) for path, item, turns in set_items()
            for n, turn in enumerate(turns, 1) if isinstance(turn, str) and turn]


def print_changes(model: IntentModel, confidence: float) -> None:
    """Every question-set message whose shipped reading (rules, then the shipped model) the new
    model (rules, then it at `confidence`) changes, with its set, item id and turn number."""
    shipped = IntentModel.load(MODEL_PATH)
    turns = every_turn()
    messages = [plain(m) for _, _, _, m in turns]
    X = message_vectors(messages)
    old_l, old_p = read(shipped, X, messages)
    new_l, new_p = read(model, X, messages)
    ship_conf = shipped.provenance.get("confidence", 0.0)
    changed = 0
    for (name, item, n, _), msg, ol, op, nl, np_ in zip(turns, messages, old_l, old_p, new_l, new_p):
        rules = detect_intent(msg)
        before = rules_then_model(msg, rules, ol, op, ship_conf, OVERRULE)
        after = rules_then_model(msg, rules, nl, np_, confidence, OVERRULE)
        if before != after:
            changed += 1
            print(f"  {name} {item} turn {n}: {before} → {after} ({np_:.2f})  {msg[:110]}")
    print(f"{changed} of {len(turns)} messages change their reading")


def held_out(model: IntentModel, bar: float, choose: bool) -> float:
    """Print how the shipped model and `model` (at `bar`) read the held-out turns; with
    `choose`, the lowest bar of CONFIDENCE_GRID at which `model` reads them no worse, and return it."""
    msgs, gold = held_out_turns()
    msgs = [plain(m) for m in msgs]
    X = message_vectors(msgs)
    shipped = IntentModel.load(MODEL_PATH)
    rules = [detect_intent(m) for m in msgs]

    def right(reading: tuple[list[str], list[float]], at: float) -> int:
        return sum(rules_then_model(msg, r, lab, p, at, OVERRULE) == g
                   for msg, r, lab, p, g in zip(msgs, rules, *reading, gold))

    new = read(model, X, msgs)
    before = right(read(shipped, X, msgs), shipped.provenance.get("confidence", 0.0))
    if choose:
        bar = next((t for t in CONFIDENCE_GRID if right(new, t) >= before), CONFIDENCE_GRID[-1])
    print(f"held-out turns ({len(gold)}, {dict(Counter(gold))}): shipped model {before} right, "
          f"new model at {bar} {right(new, bar)}")
    return bar


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true", help=f"write the fitted model to {MODEL_PATH}")
    ap.add_argument("--question-sets", action="store_true",
                    help="also fit on the single messages of the project's question sets (LABELLED_SETS)")
    ap.add_argument("--round-sets", action="store_true",
                    help="also fit on the last turns of the later rounds' sets (ROUND_SETS)")
    ap.add_argument("--test-round", action="store_true",
                    help="also score the last turns of the newest round (HELD_OUT_ROUND)")
    ap.add_argument("--earlier-turns", action="store_true",
                    help="also fit on the earlier turns of the later rounds' conversations, as questions")
    ap.add_argument("--balanced", action="store_true", help="weigh each intent the same in the fit")
    ap.add_argument("--words", type=float, default=0.0,
                    help="weight of the word and word-pair TF-IDF features beside the vector (0: none)")
    ap.add_argument("--C", type=float, default=None, help="the regularisation (default: chosen by cross-validation)")
    ap.add_argument("--held-out", action="store_true",
                    help="score the shipped and the new model on every turn of the question sets not fitted on")
    ap.add_argument("--bar-on-held-out", action="store_true",
                    help="the bar: the lowest at which the new model reads the held-out turns no worse than the shipped one")
    ap.add_argument("--train-more", nargs="*", default=[], type=Path,
                    help="more labelled messages to fit on (JSON Lines like train.jsonl)")
    ap.add_argument("--test-more", nargs="*", default=[], type=Path,
                    help="more labelled messages to score (JSON Lines like test.jsonl)")
    ap.add_argument("--changes", action="store_true",
                    help="list the messages of every question set whose shipped reading the new model changes")
    ap.add_argument("--confidence", type=float, default=None,
                    help="the model's bar where the rules say question (default: chosen by cross-validation)")
    ap.add_argument("--out", type=Path, default=MODEL_PATH, help="where --write writes the model")
    args = ap.parse_args()
    global CLASS_WEIGHT, WORDS
    CLASS_WEIGHT = "balanced" if args.balanced else None
    WORDS = args.words
    train_msgs, train_y = load(SETS / "train.jsonl")
    if args.question_sets:
        more, more_y = question_sets()
        train_msgs, train_y = train_msgs + more, train_y + more_y
        print(f"+ {len(more)} messages of the question sets: {dict(Counter(more_y))}")
    if args.round_sets:
        more, more_y = last_turns(ROUND_SETS)
        train_msgs, train_y = train_msgs + more, train_y + more_y
        print(f"+ {len(more)} last turns of the later rounds: {dict(Counter(more_y))}")
    if args.earlier_turns:
        more, more_y = earlier_turns(ROUND_SETS)
        train_msgs, train_y = train_msgs + more, train_y + more_y
        print(f"+ {len(more)} earlier turns of the later rounds, as questions")
    for path in args.train_more:
        more, more_y = load(path)
        train_msgs, train_y = train_msgs + more, train_y + more_y
        print(f"+ {len(more)} messages of {path.name}: {dict(Counter(more_y))}")
    test_msgs, test_y = load(SETS / "test.jsonl")
    for path in args.test_more:
        more, more_y = load(path)
        test_msgs, test_y = test_msgs + more, test_y + more_y
    if args.test_round:
        more, more_y = last_turns(HELD_OUT_ROUND)
        test_msgs, test_y = test_msgs + more, test_y + more_y
    t0 = time.perf_counter()
    X, X_test = message_vectors(train_msgs), message_vectors(test_msgs)
    print(f"embedded {len(train_msgs)} + {len(test_msgs)} messages in {time.perf_counter() - t0:.1f} s")
    rules_train = [detect_intent(m) for m in train_msgs]
    cv = cross_validated(X, train_y, train_msgs)
    C = args.C or one_standard_error(cv, train_y)
    labels, probs = cv[C]
    confidence = max(CONFIDENCE_GRID, key=lambda t: (accuracy(combined(labels, probs, rules_train, t), train_y), t))
    fired_at = max([0.0] + CONFIDENCE_GRID, key=lambda t: (accuracy(fired(labels, probs, rules_train, t, train_msgs), train_y), -t))
    if args.confidence is not None:
        fired_at = args.confidence
    model = fit(X, train_y, C, train_msgs)
    if args.held_out or args.bar_on_held_out:
        fired_at = held_out(model, fired_at, args.bar_on_held_out)
    print(f"cross-validated on training: rules {accuracy(rules_train, train_y):.3f}, model {accuracy(labels, train_y):.3f} "
          f"(C={C}), confident {accuracy(combined(labels, probs, rules_train, confidence), train_y):.3f} "
          f"(model where p >= {confidence}), fired {accuracy(fired(labels, probs, rules_train, fired_at, train_msgs), train_y):.3f} "
          f"(model where the rules say question and p >= {fired_at})")
    lab, p = read(model, X_test, test_msgs)
    rules_test = [detect_intent(m) for m in test_msgs]
    both = combined(lab, p, rules_test, confidence)
    rules_fired = fired(lab, p, rules_test, fired_at, test_msgs)
    scores = {"rules": accuracy(rules_test, test_y), "model": accuracy(lab, test_y),
              "confident": accuracy(both, test_y), "fired": accuracy(rules_fired, test_y)}
    print(f"test ({len(test_y)} messages, {dict(Counter(test_y))}):")
    for name, pred in (("rules", rules_test), ("model", lab), ("confident", both), ("fired", rules_fired)):
        print(f"  {name:9s} accuracy {scores[name]:.3f}; errors (gold→read): {confusion(pred, test_y)}")
    if args.write:
        model.provenance = {
            "fitted_by": "benchmarks/fit_intent.py", "date": time.strftime("%Y-%m-%d"),
            "training_messages": len(train_y), "C": C, "confidence": fired_at, "words": WORDS,
            "confidence_rule": "Settings.intent rules_then_model: the model where the rules say "
                               "question and its p reaches this " + (
                                   "(the lowest at which the held-out question-set turns are read no "
                                   "worse than by the model before)" if args.bar_on_held_out
                                   else "(given: --confidence)" if args.confidence is not None
                                   else "(best 5-fold accuracy on training)"),
            "embedding": "all-MiniLM-L6-v2 (packaged ONNX)",
            "test_accuracy": scores, "test_messages": len(test_y),
        }
        args.out.write_text(json.dumps(model.to_json()))
        print(f"wrote {args.out}")
    if args.changes:
        print_changes(model, fired_at)
    return 0


if __name__ == "__main__":
    sys.exit(main())
