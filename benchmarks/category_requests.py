"""How `answer.query.parse` reads requests that name categories, the whole collection or a topic.

    .venv/bin/python benchmarks/category_requests.py [FILE.jsonl ...] [--show]

Each line: {"id", "kind", "message", "expect_categories": [filter values], "expect_topic_empty"}.
The default files (benchmarks/questions/seed_category_requests_{1,2,3}.jsonl) were written by
three helper sessions that saw neither the code nor its tests, over the seed corpus's ten
categories, one after another: set 1 was measured and then read to mend the parser, set 2 was
measured blind after that and read in turn, set 3 only measured (figures in README). Prints, per
file and kind, how often the categories read from the message are exactly the expected ones, how
often "no topic" (an overview of the scope) is read as expected, and both together.
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


def score(path: Path, categories: list[str], show: bool) -> dict[str, list[tuple[bool, bool]]]:
    rows: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        item = json.loads(line)
        q = parse(item["message"], [], categories=categories)
        cats_ok = sorted(q.categories) == sorted(item["expect_categories"])
        empty_ok = (q.topic == "") == item["expect_topic_empty"]
        rows[item["kind"]].append((cats_ok, empty_ok))
        rows["all"].append((cats_ok, empty_ok))
        if show and not (cats_ok and empty_ok):
            print(f"  {item['id']} {item['kind']}: {item['message']!r} -> categories {q.categories}, "
                  f"topic {q.topic!r} (expected {item['expect_categories']}, "
                  f"topic empty {item['expect_topic_empty']})")
    return rows


def report(rows: dict[str, list[tuple[bool, bool]]]) -> None:
    for kind, r in sorted(rows.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        n = len(r)
        print(f"  {kind:15s} n={n:3d}  categories {sum(c for c, _ in r) / n:.2f}  "
              f"no-topic {sum(e for _, e in r) / n:.2f}  both {sum(c and e for c, e in r) / n:.2f}")


if __name__ == "__main__":
    sys.exit(main())
