"""The question-set items in which a surname alone is set aside because the collection's texts
also use it as a word (`relevance.used_as_word`: the Taylor of "Taylor expansion"): exactly the
items whose named authors that rule changes. Writes them as a question set, so that
`evaluate.py` scores those items with the code before and after the rule.

    .venv/bin/python benchmarks/surnames.py arxiv_math --out /tmp/surnames-arxiv_math.jsonl
    .venv/bin/python benchmarks/evaluate.py arxiv_math:/tmp/surnames-arxiv_math.jsonl \
        --reading local --show [--code A_CHECKOUT_BEFORE_THE_RULE]

It prints each item with the surnames set aside and the authors still named.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import open_corpus  # noqa: E402

from assistant.answer.relevance import authors_named, full_names_in, surname_mentions  # noqa: E402

QUESTIONS = HERE / "questions"
SEED_SETS = [HERE.parent / "tests" / "data" / "seed_heldout.jsonl",
             HERE.parent.parent / "shared" / "eval" / "seed_dev.jsonl"]


def set_aside(message: str, stats) -> list[str]:
    """The surnames of the message that the rule keeps from naming some or all of the authors
    who bear them."""
    mentions = surname_mentions(message, stats, full_names_in(message, stats))
    return [tok for tok, bearers, named in mentions if named != bearers]


def messages(item: dict) -> list[str]:
    turns = item.get("turns") or [item.get("question", "")]
    return [t for t in turns if isinstance(t, str)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    stats = open_corpus(args.corpus).store.corpus_stats()
    files = sorted(QUESTIONS.glob(f"{args.corpus}_*.jsonl"))
    files += [p for p in SEED_SETS if p.exists()] if args.corpus == "seed" else []
    found, total = [], 0
    for path in files:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            total += len(messages(item))
            aside = [tok for m in messages(item) for tok in set_aside(m, stats)]
            if aside:
                found.append(item)
                named = [n for m in messages(item) for n in authors_named(m, stats)]
                print(f"{item.get('id')} ({path.name}): set aside {aside}; still named {named[:3]}")
    Path(args.out).write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in found))
    print(f"{len(found)} items of {total} messages -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
