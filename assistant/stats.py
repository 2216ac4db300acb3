"""Corpus statistics the answer stage needs: document frequencies, the author index, the
vocabulary, categories. Built once per store revision from the paper table.

Only corpus-wide tables are kept; what is needed per paper (its stems and words) is computed
for the few candidates of a question and cached (`PaperTerms.of`), so memory grows with the
vocabulary, not with the number of papers times their words.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable

from .text import common_prefix, normalise, split_sentences, stem, stems, term_in, words_of
from .types import Paper

NEAR_FORM_PREFIX = 6  # near forms share at least this many leading letters (text.near_form)


def paper_text(p: Paper) -> str:
    """Everything lexical evidence may match: title, authors, category, abstract."""
    return " ".join(x for x in (p.title, ", ".join(p.authors), p.category or "", p.abstract) if x)


@dataclass(frozen=True)
class TextTerms:
    """The stems, normalised text and words of one text, for matching query terms."""

    stems: frozenset[str]
    norm: str
    words: frozenset[str]

    def has(self, term: str) -> bool:
        return term_in(term, self.stems, self.norm, self.words)

    @classmethod
    def of_text(cls, text: str) -> "TextTerms":
        return cls(frozenset(stems(text)), normalise(text), frozenset(words_of(text)))


@dataclass(frozen=True)
class PaperTerms(TextTerms):
    sentences: tuple[TextTerms, ...] = ()  # the title, then each abstract sentence

    @staticmethod
    def of(paper: Paper) -> "PaperTerms":
        return _paper_terms(paper_text(paper), paper.title, paper.abstract)


@lru_cache(maxsize=4096)
def _paper_terms(text: str, title: str, abstract: str) -> PaperTerms:
    whole = TextTerms.of_text(text)
    parts = tuple(TextTerms.of_text(s) for s in [title] + split_sentences(abstract) if s)
    return PaperTerms(whole.stems, whole.norm, whole.words, parts)


@dataclass
class CorpusStats:
    n_docs: int = 0
    df: Counter = field(default_factory=Counter)  # stem -> papers using it
    authors: dict[str, set[str]] = field(default_factory=dict)  # normalised name -> paper ids
    surnames: dict[str, set[str]] = field(default_factory=dict)  # surname -> full names
    by_prefix: dict[str, set[str]] = field(default_factory=dict)  # word prefix -> words
    categories: Counter = field(default_factory=Counter)

    @classmethod
    def build(cls, papers: Iterable[Paper]) -> "CorpusStats":
        out = cls()
        for p in papers:
            out.add(p)
        return out

    def add(self, paper: Paper) -> None:
        text = paper_text(paper)
        self.n_docs += 1
        self.df.update(stems(text))
        for word in words_of(text):
            if len(word) >= NEAR_FORM_PREFIX:
                self.by_prefix.setdefault(word[:NEAR_FORM_PREFIX], set()).add(word)
        for author in paper.authors:
            name = normalise(author)
            self.authors.setdefault(name, set()).add(paper.paper_id)
            if " " in name:
                self.surnames.setdefault(name.split()[-1], set()).add(name)
        if paper.category:
            self.categories[paper.category] += 1

    def idf(self, term: str) -> float:
        """Inverse document frequency of a query term (by its stem), never negative."""
        return math.log((self.n_docs + 1) / (self.df.get(stem(term), 0) + 0.5))

    def max_idf(self) -> float:
        return math.log((self.n_docs + 1) / 0.5)

    def known(self, term: str) -> bool:
        """Does any paper use this word, or another form of it ("sycophancy"/"sycophantic")?"""
        if self.df.get(stem(term), 0) > 0:
            return True
        words = self.by_prefix.get(term[:NEAR_FORM_PREFIX], set())
        return term in words or any(_near(term, w) for w in words)

    def papers_by(self, names: Iterable[str]) -> set[str]:
        return {pid for n in names for pid in self.authors.get(n, set())}


def _near(term: str, word: str) -> bool:
    p = common_prefix(term, word)
    return len(term) >= NEAR_FORM_PREFIX and p >= NEAR_FORM_PREFIX and p >= 0.75 * min(len(term), len(word))
