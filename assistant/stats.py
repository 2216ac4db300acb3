"""Corpus statistics the answer stage needs: document frequencies, the author index, the
vocabulary, categories. Kept up to date as papers are written (`Store.upsert_papers`) and saved
beside the BM25 index, so they are built from the whole paper table only for a store that has
none saved (one written by an older version).

Only corpus-wide tables are kept; what is needed per paper (its stems and words) is computed
for the few candidates of a question and cached (`PaperTerms.of`), so memory grows with the
vocabulary, not with the number of papers times their words.
"""
from __future__ import annotations

import hashlib
import heapq
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from .text import acronym as acronym_of, common_prefix, normalise, split_sentences, stem, stems, term_in, words_of
from .types import Paper

NEAR_FORM_PREFIX = 6  # near forms share at least this many leading letters (text.near_form)
STATS_FORMAT = 3  # of the saved statistics (CorpusStats.save); another is rebuilt
FP_MASK = (1 << 64) - 1


def paper_text(p: Paper) -> str:
    """Everything lexical evidence may match: title, authors, category, abstract."""
    return " ".join(x for x in (p.title, ", ".join(p.authors), p.category or "", p.abstract) if x)


# "model-agnostic meta-learning (MAML)", "graph convolutional networks (GCNs)": an acronym an
# abstract defines, in parentheses after its long form
DEFINED_RE = re.compile(r"\(([A-Za-z][A-Za-z0-9-]{1,9}?)s?\)")
LONG_FORM_WORD_RE = re.compile(r"[A-Za-z0-9]+")  # hyphenated parts count as words
MINOR = {"of", "for", "and", "the", "in", "on", "to", "with", "a", "an", "by", "via"}


def defined_acronyms(text: str) -> set[tuple[str, str]]:
    """(acronym, long form) pairs a text defines: "… model-agnostic meta-learning (MAML) …" →
    ("MAML", "model-agnostic meta-learning"). The long form is the shortest run of words right
    before the parenthesis whose initials spell the acronym's letters in order, a minor word
    ("of", "for") spelling nothing, and one word after them may be a head noun ("model-agnostic
    meta-learning algorithm (MAML)"); the Schwartz–Hearst idea, strict: every letter from a
    word's first letter. Written by hand: scispacy's abbreviation detector would bring spaCy
    and its models for this one pattern."""
    out = set()
    for m in DEFINED_RE.finditer(text):
        acronym = m.group(1)
        letters = re.sub(r"[^A-Za-z0-9]", "", acronym).lower()
        if sum(c.isupper() for c in acronym) < 2 or not 2 <= len(letters) <= 8:
            continue
        before = text[max(0, m.start() - 160):m.start()]
        words = list(LONG_FORM_WORD_RE.finditer(before))[-(len(letters) + 4):]
        texts = [w.group() for w in words]
        long_form = _spelled(letters, texts)
        if not long_form and len(texts) > 1:  # a head noun after the spelled words: "… algorithm (MAML)"
            spelled = _spelled(letters, texts[:-1])
            long_form = spelled + 1 if spelled else 0
        if long_form:
            start = words[len(words) - long_form].start()
            out.add((acronym, " ".join(before[start:].split()).lower()))
    return out


def _spelled(letters: str, words: list[str]) -> int:
    """How many of the last `words` spell `letters` by their first letters (minor words may
    spell nothing); 0 when none do."""
    need = len(letters) - 1
    for i in range(len(words) - 1, -1, -1):
        word = words[i].lower()
        if need >= 0 and word[0] == letters[need]:
            need -= 1
            if need < 0:
                return len(words) - i
        elif word not in MINOR:
            return 0
    return 0


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


def stats_key(paper: Paper) -> str:
    """What of a paper its statistics depend on: two records with the same key count the same."""
    return json.dumps([paper.paper_id, paper.title, paper.authors, paper.category, paper.abstract,
                       paper.year], ensure_ascii=False)


def paper_fingerprint(paper: Paper) -> int:
    return int.from_bytes(hashlib.sha1(stats_key(paper).encode("utf-8")).digest()[:8], "big")


def fingerprint_of(papers: Iterable[Paper]) -> int:
    """Order-free fingerprint of a set of papers (a sum of per-paper hashes, mod 2**64), so it
    can be kept up to date paper by paper and compared with one computed from the store."""
    return sum(paper_fingerprint(p) for p in papers) & FP_MASK


def _papers(papers: Paper | Iterable[Paper]) -> Iterable[Paper]:
    return [papers] if isinstance(papers, Paper) else papers


@dataclass
class CorpusStats:
    """Corpus-wide tables, kept up to date paper by paper (`add`, `remove`) as the store is
    written, and saved beside the BM25 index (`save`, `load`) so a reader never rebuilds them
    from every paper."""

    n_docs: int = 0
    df: Counter = field(default_factory=Counter)  # stem -> papers using it
    authors: dict[str, set[str]] = field(default_factory=dict)  # normalised name -> paper ids
    surnames: dict[str, set[str]] = field(default_factory=dict)  # surname -> full names
    by_prefix: dict[str, set[str]] = field(default_factory=dict)  # word prefix -> words
    categories: Counter = field(default_factory=Counter)
    # kept so that removal is exact; by_prefix and surnames are derived from them
    words: Counter = field(default_factory=Counter)  # word (>= NEAR_FORM_PREFIX letters) -> papers
    names: dict[str, str] = field(default_factory=dict)  # normalised name -> a spelling as written
    years: Counter = field(default_factory=Counter)
    acronyms: Counter = field(default_factory=Counter)  # "ACRONYM\tlong form" -> papers defining it
    spelled: dict[str, set[str]] = field(default_factory=dict)  # acronym -> its long forms (derived)
    fingerprint: int = 0  # fingerprint_of(the papers counted)

    @classmethod
    def build(cls, papers: Iterable[Paper]) -> "CorpusStats":
        out = cls()
        out.add(papers)
        return out

    def add(self, papers: Paper | Iterable[Paper]) -> None:
        """Count one paper or many (each must not be counted already)."""
        for paper in _papers(papers):
            self._count(paper, +1)

    def remove(self, papers: Paper | Iterable[Paper]) -> None:
        """Uncount papers counted before (the record as it was counted)."""
        for paper in _papers(papers):
            self._count(paper, -1)

    def _count(self, paper: Paper, sign: int) -> None:
        text = paper_text(paper)
        self.n_docs += sign
        self.fingerprint = (self.fingerprint + sign * paper_fingerprint(paper)) & FP_MASK
        _bump(self.df, stems(text), sign)
        for word in words_of(text):
            if len(word) < NEAR_FORM_PREFIX:
                continue
            self.words[word] += sign
            prefix = word[:NEAR_FORM_PREFIX]
            if sign > 0:
                self.by_prefix.setdefault(prefix, set()).add(word)
            elif self.words[word] <= 0:
                del self.words[word]
                _discard(self.by_prefix, prefix, word)
        for author in dict.fromkeys(paper.authors):
            name = normalise(author)
            surname = name.split()[-1] if " " in name else None
            if sign > 0:
                self.authors.setdefault(name, set()).add(paper.paper_id)
                self.names.setdefault(name, author)
                if surname:
                    self.surnames.setdefault(surname, set()).add(name)
            else:
                _discard(self.authors, name, paper.paper_id)
                if name not in self.authors:
                    self.names.pop(name, None)
                    if surname:
                        _discard(self.surnames, surname, name)
        if paper.category:
            _bump(self.categories, [paper.category], sign)
        if paper.year is not None:
            _bump(self.years, [int(paper.year)], sign)
        defined = defined_acronyms(paper.abstract)
        _bump(self.acronyms, [f"{a}\t{long}" for a, long in defined], sign)
        for a, long in defined:
            if sign > 0:
                self.spelled.setdefault(a, set()).add(long)
            elif f"{a}\t{long}" not in self.acronyms:
                _discard(self.spelled, a, long)

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

    def papers_using(self, name: str) -> int:
        """How many papers write a name ("LSTM" hundreds, "SQLNet" one); a hyphenated name that
        none writes whole ("Mahalanobis-distance") counts as its rarest part."""
        whole = normalise(name)
        count = self.df.get(stem(whole), 0)
        parts = [p for p in whole.split("-") if p]
        if count or len(parts) < 2:
            return count
        return min(self.df.get(stem(p), 0) for p in parts)

    def long_form(self, acronym: str) -> str:
        """What the collection's abstracts most often spell `acronym` out as ("MAML" →
        "model-agnostic meta-learning"; "GCNs" as "GCN"), "" when none defines it."""
        key = acronym_of(acronym) or acronym
        spelled = [(self.acronyms[f"{key}\t{long}"], long) for long in self.spelled.get(key, ())]
        return max(spelled)[1] if spelled else ""

    def papers_by(self, names: Iterable[str]) -> set[str]:
        return {pid for n in names for pid in self.authors.get(n, set())}

    # -- what the UI's filters offer, without reading the paper table
    def author_suggestions(self, typed: str = "", limit: int = 50) -> list[str]:
        """Up to `limit` author names (as written) containing `typed`, most prolific first."""
        needle = normalise(typed.strip())
        found = (n for n in self.authors if needle in n) if needle else self.authors
        # the first `limit` of the sorted names, without sorting 300k of them for 50 (100k papers)
        best = heapq.nsmallest(limit, found, key=lambda n: (-len(self.authors[n]), n))
        return [self.names.get(n, n) for n in best]

    def year_range(self) -> tuple[Optional[int], Optional[int]]:
        return (min(self.years), max(self.years)) if self.years else (None, None)

    # -- persistence
    def to_dict(self) -> dict:
        return {"format": STATS_FORMAT, "n_docs": self.n_docs, "fingerprint": self.fingerprint,
                "df": dict(self.df), "words": dict(self.words),
                "authors": {n: sorted(p) for n, p in self.authors.items()},
                "names": self.names, "categories": dict(self.categories),
                "years": {str(y): c for y, c in self.years.items()}, "acronyms": dict(self.acronyms)}

    @classmethod
    def from_dict(cls, data: dict) -> "CorpusStats":
        if data.get("format") != STATS_FORMAT:
            raise ValueError(f"corpus statistics format {data.get('format')!r}, not {STATS_FORMAT}")
        out = cls(n_docs=int(data["n_docs"]), fingerprint=int(data["fingerprint"]),
                  df=Counter(data["df"]), words=Counter(data["words"]),
                  authors={n: set(p) for n, p in data["authors"].items()},
                  names=dict(data["names"]), categories=Counter(data["categories"]),
                  years=Counter({int(y): c for y, c in data["years"].items()}),
                  acronyms=Counter(data["acronyms"]))
        for word in out.words:
            out.by_prefix.setdefault(word[:NEAR_FORM_PREFIX], set()).add(word)
        for name in out.authors:
            if " " in name:
                out.surnames.setdefault(name.split()[-1], set()).add(name)
        for entry in out.acronyms:
            written, _, long = entry.partition("\t")
            out.spelled.setdefault(written, set()).add(long)
        return out

    def save(self, path: Path, **extra) -> None:
        """Write atomically (a temporary file renamed over `path`); `extra` (the store's
        revision) is saved alongside and returned by `load`."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps({**self.to_dict(), **extra}, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> tuple["CorpusStats", dict]:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        extra = {k: v for k, v in data.items() if k not in _SAVED_FIELDS}
        return cls.from_dict(data), extra

    def same_counts(self, other: "CorpusStats") -> bool:
        """Equal tables (what a test compares: incremental upkeep against a fresh build)."""
        return all(getattr(self, f) == getattr(other, f) for f in
                   ("n_docs", "fingerprint", "df", "authors", "surnames", "by_prefix",
                    "categories", "words", "years", "acronyms", "spelled")) and self.names.keys() == other.names.keys()


_SAVED_FIELDS = {"format", "n_docs", "fingerprint", "df", "words", "authors", "names",
                 "categories", "years", "acronyms"}


def _bump(counter: Counter, keys: Iterable, sign: int) -> None:
    for key in keys:
        counter[key] += sign
        if counter[key] <= 0:
            del counter[key]


def _discard(index: dict[str, set[str]], key: str, value: str) -> None:
    members = index.get(key)
    if members is not None:
        members.discard(value)
        if not members:
            del index[key]


def _near(term: str, word: str) -> bool:
    p = common_prefix(term, word)
    return len(term) >= NEAR_FORM_PREFIX and p >= NEAR_FORM_PREFIX and p >= 0.75 * min(len(term), len(word))
