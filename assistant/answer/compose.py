"""The structure of each kind of answer, built from the papers chosen by the planner.

The pipeline writes the parts that must be exact (comparison tables, the per-theme paper list
of a summary, extracts, author lists) from the abstracts themselves, already cited; the model
writes only the prose (an answer, an overview, a verdict), which grounding then checks.
"""
from __future__ import annotations

import re
from typing import Optional

from ..prompts import render
from ..types import Paper
from .ground import Source, safe_sentences
from ..text import shorten

ASPECTS = {
    "Problem": re.compile(r"\b(however|yet|challeng|problem|limit|bottleneck|remains|difficult|"
                          r"lack|vulnerab|costly|expensive|fail|suffer)", re.I),
    "Approach": re.compile(r"\b(we (propose|present|introduce|develop|design|leverage|view|formul|"
                           r"argue|analy[sz]e|study|address|derive|build)|this paper|in this (work|paper)|"
                           r"our (method|approach|framework))", re.I),
    "Evidence": re.compile(r"\b(experiment|evaluat|benchmark|dataset|simulat|empiric|validat|"
                           r"test(ed|s)? on|across \w+ (models|tasks|datasets))", re.I),
    "Key result": re.compile(r"(outperform|achiev|improv|reduc|speed-?up|\d+(\.\d+)?%|"
                             r"state-of-the-art|we (show|find|prove)|demonstrat|surpass|matching)", re.I),
}


def source_block(source: Source) -> str:
    p = source.paper
    who = p.author_line(3)
    meta = ", ".join(str(x) for x in (p.category, p.year) if x)
    head = f"[{source.n}] {p.title}" + (f" — {who}" if who else "") + (f" ({meta})" if meta else "")
    body = " ".join(source.sentences)
    return f"<source n={source.n}>\n{head}\n{body}\n</source>"


def sources_text(sources: list[Source]) -> str:
    return "\n".join(source_block(s) for s in sources)


def question_prompt(question: str, sources: list[Source], previous: str = "") -> str:
    if previous:
        return render("followup", sources=sources_text(sources), question=question,
                      previous=previous)
    return render("question", sources=sources_text(sources), question=question)


def summary_prompt(topic: str, themes: list[tuple[str, list[Source]]], per_theme: int = 2) -> str:
    """One synthesis sentence per theme, over the first papers of each theme."""
    shown = [s for _, group in themes for s in group[:per_theme]]
    listing = "\n".join(f"- {name}: " + ", ".join(f"[{s.n}]" for s in group[:per_theme])
                        for name, group in themes)
    return render("summary", sources=sources_text(shown), topic=topic, themes=listing)


def compare_prompt(sources: list[Source]) -> str:
    names = " and ".join(f"[{s.n}] {short_name(s.paper)}" for s in sources)
    return render("compare", sources=sources_text(sources), names=names)


def short_name(paper: Paper) -> str:
    """The method name of a derived label ("Top-W: …" → "Top-W"), else the title cut short."""
    title = paper.title
    for sep in (":", " — ", " - "):
        if sep in title:
            head = title.split(sep, 1)[0].strip()
            if 1 <= len(head.split()) <= 5:
                return head
    return shorten(title, 8)


def aspect_sentences(paper: Paper) -> dict[str, str]:
    """One abstract sentence per comparison aspect, each used once, falling back by position."""
    sents = safe_sentences(paper)
    chosen: dict[str, str] = {}
    used: set[int] = set()
    for aspect, pattern in ASPECTS.items():
        candidates = [i for i, s in enumerate(sents) if i not in used and pattern.search(s)]
        if aspect == "Key result":
            candidates = list(reversed(candidates))  # results are stated late in an abstract
        if candidates:
            used.add(candidates[0])
            chosen[aspect] = sents[candidates[0]]
    fallback = {"Problem": 0, "Approach": 1, "Evidence": len(sents) - 2, "Key result": len(sents) - 1}
    for aspect, pos in fallback.items():
        if aspect not in chosen and sents:
            i = min(max(pos, 0), len(sents) - 1)
            chosen[aspect] = sents[i] if i not in used else "—"
    return chosen


def cell(text: str, n: int) -> str:
    if text == "—":
        return "—"
    return shorten(text, 28).replace("|", "\\|") + f" [{n}]"


def compare_table(sources: list[Source]) -> str:
    header = "| | " + " | ".join(f"{short_name(s.paper)} [{s.n}]" for s in sources) + " |"
    rule = "|---|" + "---|" * len(sources)
    aspects = [aspect_sentences(s.paper) for s in sources]
    rows = []
    for aspect in ASPECTS:
        cells = [cell(a.get(aspect, "—"), s.n) for a, s in zip(aspects, sources)]
        rows.append(f"| **{aspect}** | " + " | ".join(cells) + " |")
    authors = [s.paper.author_line(2) or "—" for s in sources]
    rows.append("| **Authors** | " + " | ".join(f"{a} [{s.n}]" for a, s in zip(authors, sources)) + " |")
    return "\n".join([header, rule, *rows])


def summary_listing(topic: str, themes: list[tuple[str, list[Source]]], matching: int,
                    collection: int) -> str:
    """How many papers match, then the papers grouped by theme, one cited line each."""
    shown = sum(len(g) for _, g in themes)
    more = f"; the {shown} most relevant are below" if matching > shown else ""
    lines = [f"{matching} of the {collection} papers in this collection are about "
             f"*{shorten(topic, 12)}*{more}.", ""]
    for theme, sources in themes:
        lines.append(f"**{theme}**")
        for s in sources:
            # what the paper does says more in a listing than its opening sentence
            gist = aspect_sentences(s.paper).get("Approach") or (
                s.sentences[0] if s.sentences else s.paper.abstract)
            lines.append(f"- *{short_name(s.paper)}*: {shorten(gist, 30)} [{s.n}]")
        lines.append("")
    return "\n".join(lines).strip()


def authors_answer(sources: list[Source]) -> str:
    parts = []
    for s in sources:
        names = s.paper.authors
        if not names:
            parts.append(f"The collection lists no authors for *{short_name(s.paper)}* [{s.n}].")
            continue
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        parts.append(f"*{short_name(s.paper)}* is by {who} [{s.n}].")
    return " ".join(parts)


def extracts(sources: list[Source], words: int = 45) -> str:
    lines = []
    for s in sources:
        text = " ".join(s.sentences[:2]) if s.sentences else s.paper.abstract
        lines.append(f"- *{short_name(s.paper)}*: {shorten(text, words)} [{s.n}]")
    return "\n".join(lines)


def abstain_text(topic: str, nearest: Optional[list[Paper]] = None) -> str:
    text = (f"I found nothing in this collection about that"
            f"{': ' + shorten(topic, 14) if topic else ''}. None of its papers is relevant enough "
            "to answer, so I cite none.")
    if nearest:
        names = "; ".join(f"“{shorten(p.title, 10)}”" for p in nearest[:2])
        text += f" (Closest, but not about it: {names}.)"
    return text
