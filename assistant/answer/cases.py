"""The specific case a question asks about, against the case a paper treats: a dimension ("in
four dimensions", "3-folds", "dimension d ≥ 4"), a group or space with its index ("SU(3)", "C^4",
"D_4"), a degree, rank or genus ("degree 6", "sextic", "rank at least 4"), or a count ("three or
more generators"). A paper that states the same kind of figure and
never the question's value treats another case: it does not answer the question, however near
its words are ("the random connection model in dimensions d ≥ 4" is not answered by the paper
that proves it for d = 2, 3). The gate and the model's reading both take such a paper for the
answer (docs/relevance.md, "Another case than the one asked").

This is a rule, and kept to what is exact: a figure is compared only with a figure of the same
kind written in the paper's title or abstract; a paper that states no such figure, or states the
question's among others, is left to the gate and the reading; a symbolic value ("dimension n",
"SU(n)") is no figure.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

from ..types import Paper

NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_NUM = rf"(\d+|{'|'.join(NUMBER_WORDS)})"
_AT_LEAST = r"(at least\s+|≥\s*|>=\s*|\\geq?\s*)?"  # a lower bound written before the figure
_OR_MORE = r"(\s*(?:or (?:more|higher|larger|greater)|and (?:up|above|higher)|\+))?"  # … after it

# "four-dimensional", "in four dimensions", "3D", "3-folds", "4-manifolds", "2-spheres"
DIMENSIONAL_RE = re.compile(rf"\b{_AT_LEAST}{_NUM}\s*[-‐]?\s*(?:dimensional|dimensions?\b|dim\b|d\b|folds?\b|"
                            rf"manifolds?\b|spheres?\b)", re.I)
# "dimension 3", "dimensions d = 2, 3", "dimension at least 4", "dimensions d >= 4"
DIMENSION_RE = re.compile(rf"\bdimensions?\s+(?:[dnm]\s*)?(?:=\s*|equal to\s+|of\s+)?{_AT_LEAST}{_NUM}"
                          rf"(?:\s*(?:,|and|or)\s*{_NUM})?{_OR_MORE}(?![\w^]|\s*[-+*/])", re.I)
# "degree 6", "of rank 3", "genus-2", "rank at least 4"; "sextic" is degree 6
NAMED_RE = re.compile(rf"\b(degree|rank|genus)\s*[-‐]?\s*(?:[a-z]\s*=\s*)?{_AT_LEAST}{_NUM}{_OR_MORE}(?![\w^]|\s*[-+*/])"
                      rf"|\b{_AT_LEAST}{_NUM}{_OR_MORE}\s*[-‐]\s*(degree|rank|genus)\b", re.I)
DEGREE_WORDS = {"cubic": 3, "quartic": 4, "quintic": 5, "sextic": 6, "septic": 7, "octic": 8}
DEGREE_WORD_RE = re.compile(rf"\b({'|'.join(DEGREE_WORDS)})s?\b", re.I)
GROUP_RE = re.compile(r"\b([A-Z][A-Za-z]{0,3})\s*\(\s*(\d+)\s*\)")             # SU(2), GL(3), Sp(4)
POWER_RE = re.compile(r"(?<![\w^])([A-Za-z])\s*\^\s*\{?(\d+)\}?(?![\d.])")      # C^4, R^3, H^2
INDEX_RE = re.compile(r"(?<!\w)([A-Z])_\{?(\d+)\}?(?![\d.])")                  # D_4, A_2
COUNT_RE = re.compile(rf"\b{_AT_LEAST}{_NUM}{_OR_MORE}\s*[-‐ ]\s*(generators?|colou?rs?|players?|variables?|states?|"
                      rf"vortex|vortices|body|bodies|agents?|layers?|loops?)\b", re.I)
_SUPERSCRIPTS = str.maketrans({c: f"^{d}" for d, c in enumerate("⁰¹²³⁴⁵⁶⁷⁸⁹")})
_SUBSCRIPTS = str.maketrans({c: f"_{d}" for d, c in enumerate("₀₁₂₃₄₅₆₇₈₉")})
_LATEX_FONT_RE = re.compile(r"\\(?:mathbb|mathrm|mathcal|mathbf|operatorname)\s*\{([^{}]*)\}")


@dataclass
class Figures:
    """The values one kind of figure takes in a text: exact ones, and the lowest open bound
    ("d ≥ 4", "three or more") when there is one."""
    exact: set[int] = field(default_factory=set)
    at_least: Optional[int] = None

    def covers(self, value: int) -> bool:
        return value in self.exact or (self.at_least is not None and value >= self.at_least)

    def disjoint(self, other: "Figures") -> bool:
        """No value of one is a value of the other (two open bounds always meet)."""
        if self.at_least is not None and other.at_least is not None:
            return False
        return not any(other.covers(v) for v in self.exact) and not any(self.covers(v) for v in other.exact)

    def within(self, other: "Figures") -> bool:
        """Every value of this one is a value of the other; an open bound only within an open
        bound that starts no higher ("d ≥ 4" is within "d ≥ 3", not within "d = 4")."""
        open_ok = self.at_least is None or (other.at_least is not None and other.at_least <= self.at_least)
        return open_ok and all(other.covers(v) for v in self.exact)

    def written(self) -> str:
        values = [str(v) for v in sorted(self.exact)]
        if self.at_least is not None:
            values.append(f"{self.at_least} or more")
        return " or ".join(values)


@dataclass(frozen=True)
class OtherCase:
    """A paper treating another case than the question's: the kind of figure, and both values."""
    kind: str
    asked: str
    treated: str


def _plain(text: str) -> str:
    """Superscript and subscript digits, blackboard letters and LaTeX font commands as plain
    text: "ℂ⁴" and "$\\mathbb{C}^4$" are "C^4"."""
    text = text.translate(_SUPERSCRIPTS).translate(_SUBSCRIPTS)
    text = text.replace("ℝ", "R").replace("ℂ", "C").replace("ℍ", "H")
    return _LATEX_FONT_RE.sub(r"\1", text).replace("$", " ")


def _value(word: str) -> int:
    """"four" or "4" as 4."""
    return NUMBER_WORDS[word.lower()] if word.lower() in NUMBER_WORDS else int(word)


def _singular(noun: str) -> str:
    noun = noun.lower().replace("vortices", "vortex").replace("bodies", "body").replace("colour", "color")
    return noun[:-1] if noun.endswith("s") else noun


def stated_figures(text: str) -> dict[str, Figures]:
    """Each kind of figure the text states ("dimension", "degree", "rank", "SU(·)", "C^·", "D_·",
    "generators"), with its values."""
    text, found = _plain(text), {}

    def add(kind: str, value: int, open_: bool = False) -> None:
        figures = found.setdefault(kind, Figures())
        if open_:
            figures.at_least = value if figures.at_least is None else min(figures.at_least, value)
        else:
            figures.exact.add(value)

    for m in DIMENSIONAL_RE.finditer(text):
        add("dimension", _value(m.group(2)), bool(m.group(1)))
    for m in DIMENSION_RE.finditer(text):
        for value in filter(None, (m.group(2), m.group(3))):
            add("dimension", _value(value), bool(m.group(1) or m.group(4)))
    for m in NAMED_RE.finditer(text):
        if m.group(1):
            add(m.group(1).lower(), _value(m.group(3)), bool(m.group(2) or m.group(4)))
        else:
            add(m.group(8).lower(), _value(m.group(6)), bool(m.group(5) or m.group(7)))
    for m in DEGREE_WORD_RE.finditer(text):
        add("degree", DEGREE_WORDS[m.group(1).lower()])
    for m in GROUP_RE.finditer(text):
        add(f"{m.group(1)}(·)", int(m.group(2)))
    for m in POWER_RE.finditer(text):
        add(f"{m.group(1)}^·", int(m.group(2)))
    for m in INDEX_RE.finditer(text):
        add(f"{m.group(1)}_·", int(m.group(2)))
    for m in COUNT_RE.finditer(text):
        add(_singular(m.group(4)) + "s", _value(m.group(2)), bool(m.group(1) or m.group(3)))
    return found


def uncovered_figures(claim: str, source: str) -> list[str]:
    """The kinds of figure a claim states with a value its source does not give for that kind
    ("on a complete four-dimensional manifold" against a source on 3-manifolds, or against one
    that states no dimension; "for every d ≥ 4" against one that proves d = 4 only). A claim's
    figures must be its source's, however they are written, as its digits must be (ground.py)."""
    given = stated_figures(source)
    return [kind for kind, figures in stated_figures(claim).items()
            if kind not in given or not figures.within(given[kind])]


def other_cases(question: str, papers: Sequence[Paper]) -> list[Optional[OtherCase]]:
    """Per paper, the first kind of figure the question states whose values the paper, stating
    that kind too, never takes (the paper treats another case), or None. The question is read
    once for all of them."""
    asked = stated_figures(question)
    return [_other_case(asked, paper) if asked else None for paper in papers]


def _other_case(asked: dict[str, Figures], paper: Paper) -> Optional[OtherCase]:
    treated = stated_figures(f"{paper.title}. {paper.abstract}")
    for kind, figures in asked.items():
        if kind in treated and figures.disjoint(treated[kind]):
            return OtherCase(kind, figures.written(), treated[kind].written())
    return None
