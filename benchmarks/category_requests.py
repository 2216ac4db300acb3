"""How `answer.query.parse` reads requests that name categories, the whole collection or a topic.

    .venv/bin/python benchmarks/category_requests.py [FILE.jsonl ...] [--show]

Each line: {"id", "kind", "message", "expect_categories": [filter values], "expect_topic_empty"}
and/or "expect_unknown": a category named as one that the collection lacks ("" when none).
The default files (benchmarks/questions/seed_category_requests_{1,2,3}.jsonl) were written by
three helper sessions that saw neither the code nor its tests, over the seed corpus's ten
categories, one after another: set 1 was measured and then read to mend the parser, set 2 was
measured blind after that and read in turn, set 3 only measured (figures in README). Sets 4 and 5
(also blind, by two more helpers) ask for categories the collection lacks ("the NLP area"): set 4
was measured and then read to mend `unknown_category`, set 5 only measured. Prints, per file and
kind, how often the categories read from the message are exactly the expected ones, how often "no
topic" (an overview of the scope) and the category the collection lacks are read as expected, and
all of them together.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assistant.answer.query import parse  # noqa: E402
from assistant.config import SEED_CORPUS  # noqa: E402
from assistant.corpus import read_papers  # noqa: E402

DEFAULT = sorted((ROOT / "benchmarks" / "questions").glob("seed_category_requests_*.jsonl"))


def seed_categories() -> list[str]:
    return sorted({p.category for p in read_papers(SEED_CORPUS) if p.category})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*", default=[str(p) for p in DEFAULT])
    ap.add_argument("--show", action="store_true", help="print the items read wrongly")
    args = ap.parse_args()
    categories = seed_categories()
    for path in args.files:
        print(f"\n{Path(path).name}")
        report(score(Path(path), categories, args.show))
    return 0


def checks(item: dict, q) -> dict[str, bool]:
    """The measures an item defines: the categories read as a filter, "no topic" (an overview),
    and the category named that the collection lacks ("the NLP area"; "" when none)."""
    out = {"categories": sorted(q.categories) == sorted(item["expect_categories"])}
    if "expect_topic_empty" in item:
        out["no-topic"] = (q.topic == "") == item["expect_topic_empty"]
    if "expect_unknown" in item:
        out["unknown"] = q.unknown_category.strip().lower() == item["expect_unknown"].strip().lower()
    return out


def score(path: Path, categories: list[str], show: bool) -> dict[str, list[dict[str, bool]]]:
    rows: dict[str, list[dict[str, bool]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        item = json.loads(line)
        q = parse(item["message"], [], categories=categories)
        right = checks(item, q)
        rows[item["kind"]].append(right)
        rows["all"].append(right)
        if show and not all(right.values()):
            print(f"  {item['id']} {item['kind']}: {item['message']!r} -> categories {q.categories}, "
                  f"topic {q.topic!r}, unknown {q.unknown_category!r} (expected {item['expect_categories']}, "
                  f"topic empty {item.get('expect_topic_empty')}, unknown {item.get('expect_unknown')!r})")
    return rows


def report(rows: dict[str, list[dict[str, bool]]]) -> None:
    for kind, r in sorted(rows.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        n = len(r)
        measures = "  ".join(f"{m} {sum(x[m] for x in r) / n:.2f}" for m in r[0])
        print(f"  {kind:15s} n={n:3d}  {measures}  both {sum(all(x.values()) for x in r) / n:.2f}")


if __name__ == "__main__":
    sys.exit(main())
