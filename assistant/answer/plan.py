"""Planning a turn: follow-up focus, ordinal references, compare targets.

The default local model neither abstains nor picks papers reliably on its own, so the decisions
that make an answer correct are made in the pipeline (here, query.py and relevance.py), and the
model only writes prose over the papers chosen.
"""
from __future__ import annotations

import re

from ..types import Turn
from ..text import terms

FOLLOWUP_RE = re.compile(
    r"\b(it|its|it's|they|them|their|this|that|these|those|both|former|latter|"
    r"the (paper|papers|method|approach|work|model|authors?|first|second|third|last|same)|"
    r"(first|second|third|last) one|the two|the three|both of them|each other)\b", re.I)
AUTHORS_Q_RE = re.compile(r"\b(who (wrote|authored|are the authors|is the author|did)|"
                          r"(author|authors) of (it|this|that|the))\b", re.I)
SINGULAR_RE = re.compile(r"\b(which|what) (paper|work|article|study|method)\b|\bthe paper\b", re.I)
ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "1st": 0, "2nd": 1, "3rd": 2}
SPLIT_TARGETS_RE = re.compile(
    r"\s*(?:,|;|:|\band\b|\bwith\b|\bvs\.?|\bversus\b|\bagainst\b|\bto\b|&|"
    r"\b(?:is|are)\s+different\s+from\b|\bdiffers?\s+from\b|\bdifferent\s+from\b|\bfrom\b)\s*", re.I)
# a clause after the names says how to compare, not what: "... as views on LLM failure modes"
TRAILING_CLAUSE_RE = re.compile(
    r"\s+(?:as|in terms of|with respect to|regarding|for|on how|when it comes to|on|in)\s+.*$", re.I)


def previous_focus(history: list[Turn], want: int = 1) -> list[str]:
    """Paper ids the last assistant turn cited: what "it" and "them" refer to. With want=2
    ("compare the two" after two one-paper answers) earlier turns are added until there are two."""
    ids: list[str] = []
    for turn in reversed(history):
        if turn.role == "assistant" and turn.paper_ids:
            ids.extend(p for p in turn.paper_ids if p not in ids)
            if len(ids) >= want:
                break
    return ids


def previous_user_message(history: list[Turn]) -> str:
    for turn in reversed(history):
        if turn.role == "user":
            return turn.content
    return ""


def ordinal_references(message: str) -> list[int]:
    """Positions named by ordinals ("the first and the second one" → [0, 1]), in order."""
    found = re.findall(r"\b(first|second|third|fourth|1st|2nd|3rd)\b", message, re.I)
    return list(dict.fromkeys(ORDINALS[f.lower()] for f in found))


def compare_targets(message: str) -> list[str]:
    """Names of the things to compare, e.g. 'Compare Top-W with Verbalized Sampling'."""
    m = re.search(r"\b(?:compare|comparing|contrast|between)\b(.*)", message, re.I | re.S)
    body = m.group(1) if m else message
    body = re.sub(r"[?.!]+$", "", body.strip())
    body = re.sub(r"^(how|in what way|what)\s+(does|do|is|are)\s+", "", body, flags=re.I)
    parts = [p for p in SPLIT_TARGETS_RE.split(body) if p and p.strip()]
    targets = []
    for part in parts:
        part = TRAILING_CLAUSE_RE.sub("", part.strip()) if len(part.split()) > 3 else part
        part = re.sub(r"\b(the|a|an|papers?|works?|methods?|approach(es)?|called|on|about|"
                      r"one|two|does|do|differ|differs|different)\b", " ", part, flags=re.I)
        part = " ".join(part.split()).strip(" '\"“”")
        if part and terms(part) and not FOLLOWUP_RE.search(part):
            targets.append(part)
    named = [t for t in targets if any(w[0].isupper() for w in t.split())]
    # "Heurtebise vs Fröhlich: how do their approaches to causality differ?" names two
    # things; the rest of the sentence says how to compare them
    return named if len(named) >= 2 else targets


def is_plural_question(message: str) -> bool:
    return bool(re.search(r"\b(papers|works|studies|articles|any work|is there (any|work))\b",
                          message, re.I))


def is_singular_question(message: str) -> bool:
    return bool(SINGULAR_RE.search(message)) and not re.search(r"\bpapers\b", message, re.I)


def refers_back(message: str) -> bool:
    return bool(FOLLOWUP_RE.search(message))


def asks_for_authors(message: str) -> bool:
    return bool(AUTHORS_Q_RE.search(message))


