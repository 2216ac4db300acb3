"""Literature tables: one row per paper, one cell per aspect ("method, data, main result").

Every cell is quoted from the paper's abstract, never written by a model: the abstract sentence
closest in meaning to a description of the aspect ("the dataset or benchmark used in the
experiments"), cut to its most relevant clause when it is long, or "—" when no sentence comes
close enough. So a table is exact about what each abstract says, and says plainly where an
abstract is silent (a theory paper has no dataset).

    aspect_query(aspect)                       what an aspect's sentence is expected to say
    table_cells(paper, aspects, embed, ...)    the row of one paper: (cell, sentence) per aspect
    table_markdown(table, names)               the Markdown table, a [n] marker per row
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..types import LiteratureTable, Paper
from .aspects import ASPECT_CUES
from .evidence import safe_sentences

Embed = Callable[[list[str]], np.ndarray]
NONE = "—"

# Descriptions embedded in place of the user's one-word aspect: a bare word ("data") sits far
# from every sentence, a sentence-like description of what such a sentence says sits close.
ASPECT_QUERIES = {
    "problem": "the problem, gap or limitation of existing work that this paper addresses",
    "method": "we propose a new method, model, algorithm or framework that works by",
    "data": "we evaluate on the following datasets and benchmarks",
    "result": "the main result: our approach outperforms baselines and improves accuracy",
    "setting": "the setting and assumptions under which the problem is studied",
    "limitation": "a limitation or weakness of the approach that remains open",
    "contribution": "the main contribution of this paper is",
    "task": "the task the paper is evaluated on",
    "theory": "we prove a theorem and derive theoretical bounds and guarantees",
}
# the words people use for an aspect → its description above
ASPECT_WORDS = {
    "problem": "problem", "problems": "problem", "question": "problem", "motivation": "problem",
    "gap": "problem", "challenge": "problem", "goal": "problem", "aim": "problem",
    "method": "method", "methods": "method", "approach": "method", "approaches": "method",
    "technique": "method", "model": "method", "algorithm": "method", "framework": "method",
    "idea": "method", "architecture": "method",
    "data": "data", "dataset": "data", "datasets": "data", "benchmark": "data",
    "benchmarks": "data", "corpus": "data", "evaluation": "data", "experiments": "data",
    "result": "result", "results": "result", "finding": "result", "findings": "result",
    "outcome": "result", "performance": "result", "evidence": "result",
    "setting": "setting", "assumptions": "setting", "assumption": "setting",
    "limitation": "limitation", "limitations": "limitation", "weakness": "limitation",
    "contribution": "contribution", "contributions": "contribution",
    "task": "task", "tasks": "task", "application": "task",
    "theory": "theory", "guarantee": "theory", "guarantees": "theory", "bounds": "theory",
}
# where a long sentence may be cut into clauses; a cell is the best clause (or run of clauses)
CLAUSE_BREAK_RE = re.compile(r",\s+|;\s+|:\s+|\s+—\s+|\s+–\s+|\s+\(|\)\s+|"
                             r"\s+(?=(?:which|while|whereas|where|and we|but)\b)")


def canonical(aspect: str) -> str:
    """The known aspect a column name means ("main result" → "result"), else ""."""
    words = re.findall(r"[a-z]+", aspect.lower())
    return next((ASPECT_WORDS[w] for w in reversed(words) if w in ASPECT_WORDS), "")


def aspect_query(aspect: str) -> str:
    """The description embedded for an aspect, else a description made of the aspect itself."""
    known = canonical(aspect)
    return ASPECT_QUERIES[known] if known else f"the {aspect.strip()} of this paper is"


def cue_matrix(aspects: list[str], sents: list[str]) -> np.ndarray:
    """1 where a sentence has the cue words of an aspect (aspects × sentences). MiniLM alone
    places "we evaluate on ImageNet" hardly nearer to "data" than "we propose X", so a sentence
    that also has the aspect's cue words (aspects.py) scores a bonus (settings.table_cue_bonus);
    aspects without cues (anything the user names) rank by meaning alone."""
    cues = [ASPECT_CUES.get(canonical(a)) for a in aspects]
    return np.array([[1.0 if c is not None and c.search(s) else 0.0 for s in sents] for c in cues])


@dataclass
class Cell:
    text: str  # a verbatim phrase of the abstract (ending in "…" when cut), or "—"
    sentence: str  # the abstract sentence it was taken from ("" for "—")
    score: float


def phrases(sentence: str, max_words: int) -> list[str]:
    """Verbatim pieces of a sentence of at most `max_words` words: the sentence itself when it is
    short enough, else every run of consecutive clauses that fits."""
    if len(sentence.split()) <= max_words:
        return [sentence]
    cuts = [0] + [m.end() for m in CLAUSE_BREAK_RE.finditer(sentence)] + [len(sentence)]
    bounds = [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)]
    out = []
    for i in range(len(bounds)):
        for j in range(i, len(bounds)):
            text = sentence[bounds[i][0]:bounds[j][1]].strip(" ,;:—–()")
            if len(text.split()) > max_words:
                break
            if len(text.split()) >= 3:  # a lone "we propose" says nothing
                out.append(text)
    return out


def cut(text: str, max_words: int) -> str:
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words]).rstrip(",;:") + " …"


def table_cells(paper: Paper, aspects: list[str], embed: Embed, min_similarity: float,
                max_words: int, cue_bonus: float = 0.25) -> list[Cell]:
    """One cell per aspect. Sentences are assigned best match first and each serves one aspect
    of the row, so "method" and "result" don't both quote the same sentence."""
    sents = safe_sentences(paper)
    if not sents or not aspects:
        return [Cell(NONE, "", 0.0) for _ in aspects]
    queries = embed([aspect_query(a) for a in aspects])
    sims = queries @ embed(sents).T + cue_bonus * cue_matrix(aspects, sents)  # aspects × sentences
    cells: dict[int, Cell] = {}
    used: set[int] = set()
    for flat in np.argsort(-sims, axis=None):
        a, s = divmod(int(flat), len(sents))
        if a in cells or s in used:
            continue
        if sims[a, s] < min_similarity:
            break  # sorted: nothing further reaches the threshold
        phrase = _best_phrase(sents[s], queries[a], ASPECT_CUES.get(canonical(aspects[a])), embed, max_words)
        cells[a] = Cell(phrase, sents[s], float(sims[a, s]))
        used.add(s)
    return [cells.get(i, Cell(NONE, "", 0.0)) for i in range(len(aspects))]


def _best_phrase(sentence: str, query: np.ndarray, cue, embed: Embed, max_words: int) -> str:
    """The piece of the sentence closest to the aspect among those with its cue words (the clause
    "experiments on real and synthetic data" is the data, not the clause after it), cut to
    `max_words` when no clause fits."""
    pieces = phrases(sentence, max_words)
    cued = [p for p in pieces if cue is not None and cue.search(p)]
    hit = cue.search(sentence) if cue is not None else None
    if hit and not cued:  # the clause with the cue words is too long: it, cut, still beats another
        start = max([0] + [m.end() for m in CLAUSE_BREAK_RE.finditer(sentence) if m.end() <= hit.start()])
        return cut(sentence[start:].strip(" ,;:—–()"), max_words)
    pieces = cued or pieces  # the clause that says "datasets" is the data, whatever MiniLM thinks
    if len(pieces) == 1:
        return pieces[0]
    return pieces[int(np.argmax(embed(pieces) @ query))] if pieces else cut(sentence, max_words)


def table_markdown(table: LiteratureTable, names: dict[str, str]) -> str:
    """The table with a header row of aspects and one row per paper, its name and [n] first.
    `names`: paper id → the short name shown for it."""
    head = "| Paper | " + " | ".join(_escape(a[:1].upper() + a[1:]) for a in table.aspects) + " |"
    rule = "|---|" + "---|" * len(table.aspects)
    rows = [f"| *{_escape(names.get(r.paper_id, r.title))}* [{r.number}] | "
            + " | ".join(_escape(c) for c in r.cells) + " |" for r in table.rows]
    return "\n".join([head, rule, *rows])


def _escape(text: str) -> str:
    """A cell may not contain a pipe or a line break (they would split the table)."""
    return " ".join(text.split()).replace("|", "\\|")
