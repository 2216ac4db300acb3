"""The sides of a comparison: "compare A with B" → ["A", "B"].

Sides are names ("Top-W", "Verbalized Sampling"), exact titles, or descriptions ("the paper
that unrolls the discriminator optimization", "the goal-oriented one"); what both sides share
("the two causal papers: …") is carried into each description, and a trailing clause that says
how to compare ("… as views on failure modes") is not a side. Resolving each side to a paper is
the planner's work; this module only reads the message.
"""
from __future__ import annotations

import re

from ..text import terms

SPLIT_TARGETS_RE = re.compile(
    r"\s*(?:,|;|:|\band\b|\bwith\b|\bvs\.?|\bversus\b|\bagainst\b|\bto\b|&|"
    r"\b(?:is|are)\s+different\s+from\b|\bdiffers?\s+from\b|\bdifferent\s+from\b|\bfrom\b)\s*", re.I)
# a clause after the names says how to compare, not what: "... as views on LLM failure modes"
TRAILING_CLAUSE_RE = re.compile(
    r"\s+(?:as|in terms of|with respect to|regarding|for|on how|when it comes to|on|in)\s+.*$", re.I)
# after the last side, how to compare rather than what ("… as views on LLM failure modes")
SIDE_NOUN = r"(?:one|paper|work|method|approach|study|article)s?"
# (only right after the side's noun: "the one that treats X as an energy function" keeps its "as")
HOW_CLAUSE_RE = re.compile(rf"(\b{SIDE_NOUN})\s+(?:as|in terms of|with respect to|regarding|when it comes to|"
                           r"on how)\s+.*$", re.I)
# a side described rather than named: "the paper that unrolls …", "the one estimating the
# global error", "the goal-oriented one", "the geometric Littlewood-Offord paper (…)"
SIDE_START = rf"the\s+(?:[\w'()-]+\s+){{0,5}}?{SIDE_NOUN}\b"
DESCRIPTION_RE = re.compile(rf"^{SIDE_START}", re.I)
DESCRIPTION_SEARCH_RE = re.compile(rf"\b{SIDE_START}", re.I)
SIDE_SPLIT_RE = re.compile(rf"\s*[,;]?\s+(?:with|and|to|versus|vs\.?|against|(?:differs?|different)\s+from|from)"
                           rf"\s+(?={SIDE_START})", re.I)
SIDE_SCAFFOLD_RE = re.compile(rf"^the\s+|\b{SIDE_NOUN}\b|\b(?:that|which|who|where|on|about)\b", re.I)
# after the last side, a remark or a new sentence is not part of it ("… brain regions — any
# methodological overlap?", "… hidden confounders. How do they use the features differently?")
REMARK_RE = re.compile(r"\s+[—–]\s+.*$|\s+-\s+.*$|(?<=\w)[.;:]\s+(?=[A-Z]).*$", re.S)
# "the two … papers for X:" before a colon says what both sides share
SHARED_RE = re.compile(r"\bthe\s+(?:two|both)\b|\b(?:papers|works|studies|articles|ones)\b", re.I)


def compare_targets(message: str) -> list[str]:
    """The sides of "compare A with B": names ("Top-W", "Verbalized Sampling") or descriptions
    ("the paper that unrolls the discriminator optimization")."""
    m = re.search(r"\b(?:compare|comparing|contrast|between)\b(.*)", message, re.I | re.S)
    body = m.group(1) if m else message
    body = re.sub(r"[?.!]+$", "", body.strip())
    body = re.sub(r"^(how|in what way|what)\s+(does|do|is|are)\s+", "", body, flags=re.I)
    # "between" may sit inside a described side ("… causal graphs between brain regions"):
    # sides described from the message's first "the … paper" are tried as well
    first = DESCRIPTION_SEARCH_RE.search(message)
    described = described_sides(body) or (described_sides(message[first.start():]) if first else [])
    if described:
        return described
    parts = [p for p in SPLIT_TARGETS_RE.split(body) if p and p.strip()]
    targets = []
    for part in parts:
        part = TRAILING_CLAUSE_RE.sub("", part.strip()) if len(part.split()) > 3 else part
        part = re.sub(r"\b(the|a|an|papers?|works?|methods?|approach(es)?|called|on|about|"
                      r"one|two|does|do|differ|differs|different)\b", " ", part, flags=re.I)
        part = " ".join(part.split()).strip(" '\"“”")
        if part and terms(part):
            targets.append(part)
    named = [t for t in targets if any(w[0].isupper() for w in t.split())]
    # "Heurtebise vs Fröhlich: how do their approaches to causality differ?" names two
    # things; the rest of the sentence says how to compare them
    return named if len(named) >= 2 else targets


def described_sides(body: str) -> list[str]:
    """"the paper that unrolls X with the one that treats Y" → the two descriptions; "the two
    X papers: the one doing Y and the Z one" → each description with what they share (X)."""
    shared = ""
    head, colon, tail = body.partition(":")
    if colon and len(SIDE_SPLIT_RE.split(tail.strip())) >= 2:
        body, shared = tail.strip(), " ".join(SHARED_RE.sub(" ", head).split())
    if not DESCRIPTION_RE.search(body.strip()):
        return []
    sides = [s for s in SIDE_SPLIT_RE.split(body.strip()) if s.strip()]
    if len(sides) < 2:
        return []
    sides[-1] = HOW_CLAUSE_RE.sub(r"\1", REMARK_RE.sub("", sides[-1]))  # "… the sycophancy paper as views on failure modes"
    out = [" ".join(SIDE_SCAFFOLD_RE.sub(" ", s).split()).strip(" ,;") for s in sides]
    return [f"{s} ({shared})" if shared else s for s in out if s]
