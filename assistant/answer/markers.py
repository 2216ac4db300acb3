"""Citation markers as answers write them: `[1]`, also groups such as `[1, 3]` and `[1-2]`.

One definition for the whole product: grounding (answer/ground.py) checks and renumbers them,
the page (ui/render.py) turns them into links to source cards.
"""
from __future__ import annotations

import re

MARKER_RE = re.compile(r"\[(\d+(?:\s*[,;–-]\s*\d+)*)\]")


def parse_markers(group: str) -> list[int]:
    """The numbers of one marker's inside: "1, 3" → [1, 3], "2-4" → [2, 3, 4]."""
    nums: list[int] = []
    for part in re.split(r"\s*[,;]\s*", group):
        if re.fullmatch(r"\d+\s*[–-]\s*\d+", part):
            a, b = (int(x) for x in re.split(r"\s*[–-]\s*", part))
            nums.extend(range(min(a, b), max(a, b) + 1) if abs(b - a) < 10 else [a, b])
        elif part.strip().isdigit():
            nums.append(int(part))
    return nums


def renumber(text: str, order: list[int]) -> str:
    """Rewrite source numbers so citations read [1], [2], … in order of first appearance."""
    mapping = {old: i + 1 for i, old in enumerate(order)}
    return MARKER_RE.sub(lambda m: "".join(f"[{mapping[n]}]" for n in parse_markers(m.group(1))
                                           if n in mapping), text)
