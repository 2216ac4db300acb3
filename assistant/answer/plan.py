"""Planning a turn: intent, follow-up focus, compare targets, and relevance decisions.

The default local model neither abstains nor picks papers reliably on its own (see DESIGN.md),
so the decisions that make an answer correct are made here, from retrieval scores and lexical
evidence, and the model only writes prose over the papers chosen.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from ..index import Store
from ..types import Hit, Intent, Paper, Turn
from .text import distinctive_tokens, idf, normalise, stem, stems, term_in, terms, words_of

COMPARE_RE = re.compile(
    r"\b(compare|comparing|comparison|contrast|versus|vs\.?|differ|differs|different from|"
    r"difference|differences|how does .+ relate to|which is better)\b", re.I)
SUMMARY_RE = re.compile(
    r"\b(summari[sz]e|summary|summaries|overview|survey|landscape|review of|"
    r"what does (this|the) collection say|what do the papers say|themes?|"
    r"which papers are (in|about|on|from)|what papers are (in|about|on)|list (the |all )?papers)\b",
    re.I)
AREA_RE = re.compile(r"\b(area|category|categories|field|section|track)\b", re.I)
FOLLOWUP_RE = re.compile(
    r"\b(it|its|it's|they|them|their|this|that|these|those|both|former|latter|"
    r"the (paper|papers|method|approach|work|model|authors?|first|second|third|last|same)|"
    r"(first|second|third|last) one|the two|the three|both of them|each other)\b", re.I)
AUTHORS_Q_RE = re.compile(r"\b(who (wrote|authored|are the authors|is the author|did)|"
                          r"(author|authors) of (it|this|that|the))\b", re.I)
SINGULAR_RE = re.compile(r"\b(which|what) (paper|work|article|study|method)\b|\bthe paper\b", re.I)
# capitalised words that start questions, never surnames
STOP_NAMES = {"which", "what", "compare", "summarize", "summarise", "tell", "paper", "papers",
              "does", "how", "who", "where", "when", "show", "give", "list", "find", "contrast",
              "is", "are", "the", "and", "with", "between", "versus", "about"}
ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "1st": 0, "2nd": 1, "3rd": 2}
SPLIT_TARGETS_RE = re.compile(
    r"\s*(?:,|;|:|\band\b|\bwith\b|\bvs\.?|\bversus\b|\bagainst\b|\bto\b|&|"
    r"\b(?:is|are)\s+different\s+from\b|\bdiffers?\s+from\b|\bdifferent\s+from\b|\bfrom\b)\s*", re.I)
# a clause after the names says how to compare, not what: "... as views on LLM failure modes"
TRAILING_CLAUSE_RE = re.compile(
    r"\s+(?:as|in terms of|with respect to|regarding|for|on how|when it comes to|on|in)\s+.*$", re.I)


def detect_intent(message: str) -> Intent:
    if COMPARE_RE.search(message):
        return "compare"
    if SUMMARY_RE.search(message):
        return "summary"
    return "question"


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


@dataclass
class CorpusTerms:
    """Document frequencies over papers, for IDF-weighted lexical evidence."""

    n_docs: int
    df: dict[str, int]
    paper_stems: dict[str, set[str]]
    paper_norm: dict[str, str]
    paper_words: dict[str, set[str]]

    @classmethod
    def build(cls, papers: dict[str, Paper]) -> "CorpusTerms":
        df: dict[str, int] = {}
        paper_stems, paper_norm, paper_words = {}, {}, {}
        for pid, p in papers.items():
            text = paper_text(p)
            s = stems(text)
            paper_stems[pid] = s
            paper_norm[pid] = normalise(text)
            paper_words[pid] = words_of(text)
            for t in s:
                df[t] = df.get(t, 0) + 1
        return cls(len(papers), df, paper_stems, paper_norm, paper_words)

    def weight(self, term: str) -> float:

        return idf(self.df.get(stem(term), 0), self.n_docs)

    def coverage(self, query_terms: list[str], paper_id: str) -> float:
        """IDF-weighted share of the query's content terms found in the paper (0..1)."""
        if not query_terms or paper_id not in self.paper_stems:
            return 0.0
        s, norm = self.paper_stems[paper_id], self.paper_norm[paper_id]
        words = self.paper_words[paper_id]
        total = sum(self.weight(t) for t in query_terms)
        found = sum(self.weight(t) for t in query_terms if term_in(t, s, norm, words))
        return found / total if total else 0.0


def paper_text(p: Paper) -> str:
    return " ".join(x for x in (p.title, ", ".join(p.authors), p.category or "", p.abstract) if x)


@dataclass
class Relevance:
    hit: Hit
    coverage: float
    name_match: bool
    relevant: bool
    strength: float
    author_match: bool = False


@dataclass
class Planner:
    store: Store
    min_dense: float
    min_lexical: float
    _terms: Optional[CorpusTerms] = None
    _terms_revision: Optional[str] = None
    _author_index: dict[str, set[str]] = field(default_factory=dict)
    _vocabulary: Optional[set[str]] = None
    _surnames: dict[str, set[str]] = field(default_factory=dict)

    def corpus_terms(self) -> CorpusTerms:
        papers = self.store.papers()
        key = f"{id(papers)}:{len(papers)}"
        if self._terms is None or self._terms_revision != key:
            self._terms = CorpusTerms.build(papers)
            self._terms_revision = key
            self._author_index = {}
            self._vocabulary = None
            self._surnames = {}
            for pid, p in papers.items():
                for a in p.authors:
                    name = normalise(a)
                    self._author_index.setdefault(name, set()).add(pid)
                    if " " in name:
                        self._surnames.setdefault(name.split()[-1], set()).add(name)
        return self._terms

    # -- relevance
    def judge(self, query: str, hits: list[Hit]) -> list[Relevance]:
        """Decide for each hit whether it is about the query (dense + lexical + names)."""
        ct = self.corpus_terms()
        q_terms = terms(query)
        names = [t for t in distinctive_tokens(query)]
        authors = self.authors_named(query)
        out = []
        for h in hits:
            pid = h.paper.paper_id
            cov = ct.coverage(q_terms, pid)
            name_match = any(term_in(n.lower(), ct.paper_stems.get(pid, set()),
                                     ct.paper_norm.get(pid, "")) for n in names)
            author_match = any(pid in self._author_index.get(a, set()) for a in authors)
            relevant = (
                author_match
                or (name_match and cov >= 0.3)
                or (h.dense_score >= self.min_dense and cov >= self.min_lexical * 0.5)
                or (cov >= self.min_lexical and h.dense_score >= self.min_dense * 0.6)
                or h.dense_score >= self.min_dense + 0.15
            )
            strength = h.dense_score + 0.5 * cov + (0.3 if (name_match or author_match) else 0.0)
            if author_match and h.paper.authors and normalise(h.paper.authors[0]) in authors:
                strength += 0.2  # "the Fröhlich paper" is the one Fröhlich leads
            out.append(Relevance(h, cov, name_match or author_match, relevant, strength,
                                 author_match))
        return out

    def known_term(self, term: str) -> bool:
        """Does any paper of the corpus use this word (or another form of it)?"""
        ct = self.corpus_terms()
        from .text import near_form

        if ct.df.get(stem(term), 0) > 0:
            return True
        if self._vocabulary is None:
            self._vocabulary = set().union(*ct.paper_words.values()) if ct.paper_words else set()
        return near_form(term, self._vocabulary) or any(
            term in words for words in ct.paper_words.values())

    def authors_named(self, query: str) -> list[str]:
        """Corpus author names that appear in the query: a full name, or a surname written as
        a name (capitalised, or long) — "the Khellaf paper", "What did Pontil work on?"."""
        self.corpus_terms()
        q = normalise(query)
        found = [name for name in self._author_index if len(name) > 4 and name in q]
        in_full_names = {w for name in found for w in name.split()}
        raw = re.findall(r"[^\W\d_][\w'-]*", query)
        for tok in raw:
            low = normalise(tok)
            if low in STOP_NAMES or len(low) < 4 or low in in_full_names:
                continue
            if not (tok[0].isupper() or len(low) >= 7):
                continue
            for name in self._surnames.get(low, ()):
                if name not in found:
                    found.append(name)
        return found

    def papers_by(self, names: list[str]) -> set[str]:
        return {pid for n in names for pid in self._author_index.get(n, set())}

    def choose(self, query: str, hits: list[Hit], singular: bool, max_papers: int = 3,
               plural: bool = False) -> list[Relevance]:
        """The papers an answer should rest on: the strongest relevant one, plus close seconds."""
        judged = [r for r in self.judge(query, hits) if r.relevant]
        if not judged:
            return []
        judged.sort(key=lambda r: -r.strength)
        authored = [r for r in judged if r.author_match]
        if authored:
            return authored[:max(max_papers, 5)]  # "papers by X": all of X's papers
        best = judged[0]
        if singular:
            return [best]
        keep = [best]
        for r in judged[1:max(max_papers, 5) if plural else max_papers]:
            close = plural or r.strength >= best.strength - 0.12
            if close and (r.coverage >= 0.5 or r.name_match):
                keep.append(r)
        return keep

    # -- categories (summaries of an area)
    def matching_categories(self, topic: str) -> list[str]:
        """Corpus categories the topic names: by word stem, prefix, or acronym ("LLMs")."""
        topic_terms = [t for t in terms(topic) if len(t) >= 3]
        raw = re.findall(r"[A-Za-z]+", topic)
        if not topic_terms and not raw:
            return []
        if any(not self.known_term(t) for t in topic_terms):
            return []  # "quantum chemistry": a word the corpus never uses is not its Chemistry area
        cats = sorted({p.category for p in self.store.papers().values() if p.category})
        named: dict[str, int] = {}
        for cat in cats:
            levels = [x.strip() for x in cat.split("·") if x.strip()]
            # a level is named when it, or one item of a list inside it ("Chemistry, Physics"), is
            count = sum(1 for level in levels
                        if any(self._names_part(part, topic_terms, raw)
                               for part in [level] + [x.strip() for x in level.split(",")]))
            if count:
                named[cat] = count
        if not named:
            return []
        # "Deep Learning · Theory" names both levels of one category: prefer it to the whole area
        best = max(named.values())
        return [c for c, n in named.items() if n == best]

    @staticmethod
    def _names_part(part: str, topic_terms: list[str], raw: list[str]) -> bool:
        words = [w for w in re.findall(r"[A-Za-z]+", part.lower()) if w not in ("and", "of", "the")]
        if not words:
            return False
        acronym = "".join(w[0] for w in words)
        for tok in raw:
            t = tok.lower().rstrip("s")
            if len(words) >= 2 and len(t) >= 2 and t == acronym:
                return True
        part_stems = {w[:5] for w in words if len(w) >= 4}
        hits = sum(1 for t in topic_terms if len(t) >= 4 and t[:5] in part_stems)
        # every word of a one/two-word part, or most of a longer one, must be named
        need = len(part_stems) if len(part_stems) <= 2 else len(part_stems) - 1
        return bool(part_stems) and hits >= need

    def papers_in(self, categories: list[str]) -> list[Paper]:
        wanted = set(categories)
        return [p for p in self.store.papers().values() if p.category in wanted]

    # -- compare targets
    def compare_targets(self, message: str) -> list[str]:
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


def mentions_area(message: str) -> bool:
    return bool(AREA_RE.search(message))
