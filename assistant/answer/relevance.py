"""Which retrieved papers are about the question: a calibrated model, not hand-set weights.

For each (question, candidate paper) we measure the retrieval evidence — dense similarity,
BM25, IDF-weighted coverage of the question's terms, names, rank and gaps to the best
candidate — and a logistic model fitted on labelled pairs (`benchmarks/calibrate_relevance.py`)
turns it into a probability. The same probability gates an answer (refuse when no candidate
reaches the policy's threshold), orders the papers an answer rests on, and selects the papers
of a summary. The fitted model ships as `assistant/data/relevance_model.json` with the
provenance of its training data.

Authors named in the question stay a rule (their papers are relevant): names are exact
evidence, and the calibration data shows no case where a named author's paper was not wanted.
"""
from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from ..config import DATA_DIR, RelevancePolicy
from ..stats import CorpusStats, PaperTerms
from ..text import WORD_END_RE, WORD_START_RE, distinctive_tokens, normalise, split_sentences, stem, terms
from ..types import Hit

MODEL_PATH = DATA_DIR / "relevance_model.json"

# Capitalised words that start questions; never surnames.
NOT_NAMES = {"which", "what", "compare", "summarize", "summarise", "tell", "paper", "papers",
             "does", "how", "who", "where", "when", "show", "give", "list", "find", "contrast",
             "is", "are", "the", "and", "with", "between", "versus", "about"}

FEATURES = (
    "dense",          # cosine of the paper's best chunk with the question
    "dense_gap",      # best candidate's cosine minus this one's
    "dense_z",        # how far this cosine stands above the candidates' mean, in their spread
    "sent",           # cosine of the paper's closest sentence (or title) with the question
    "fused_gap",      # best fused score minus this one's
    "bm25_rel",       # BM25 over the best BM25 among the candidates
    "coverage",       # IDF-weighted share of the question's terms the paper uses
    "coverage_n",     # plain share of the question's terms the paper uses
    "missing_idf",    # rarest question term the paper lacks (IDF / max IDF; 0 when none)
    "unknown_mass",   # IDF share of question terms no paper of the corpus uses
    "n_terms",        # log(1 + content terms in the question)
    "rank",           # log(1 + fused rank)
    "name_asked",     # the question names something (acronym, CamelCase, digits)
    "name_match",     # ... and this paper uses that name
    "sent_cov",       # IDF-weighted coverage of the question by the paper's best single sentence
    "title_cov",      # IDF-weighted coverage of the question by the title
    "dense_lead",     # cosine minus the best other candidate's: does this paper stand out?
    "cov_lead",       # coverage minus the best other candidate's
    "sent_gap",       # best candidate's sentence cosine minus this one's
    "topic",          # 1 for the topic of a summary, 0 for a question
)

SentenceEmbedder = Callable[[list[str]], np.ndarray]


@dataclass
class QueryTerms:
    """What the question asks about, measured once against the corpus."""

    text: str
    terms: list[str]
    weights: list[float]
    unknown_mass: float
    names: list[str]

    @classmethod
    def of(cls, query: str, stats: CorpusStats) -> "QueryTerms":
        q_terms = list(dict.fromkeys(terms(query)))
        weights = [stats.idf(t) for t in q_terms]
        total = sum(weights) or 1.0
        unknown = sum(w for t, w in zip(q_terms, weights) if not stats.known(t)) / total
        return cls(query, q_terms, weights, unknown, [n.lower() for n in distinctive_tokens(query)])


@dataclass
class Judged:
    """A candidate paper with the model's probability that it is about the question."""

    hit: Hit
    p: float
    features: dict[str, float] = field(default_factory=dict)
    author_match: bool = False

    @property
    def paper(self):
        return self.hit.paper


@dataclass
class RelevanceModel:
    """Standardised logistic regression over FEATURES (weights fitted offline)."""

    features: list[str]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    threshold: float
    provenance: dict
    # a summary's members, once its best paper passed `threshold`: chosen for recall (F2 on
    # held-out topics), since a paper left out of an area's summary is worse than a loose one
    summary_threshold: Optional[float] = None

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> "RelevanceModel":
        raw = json.loads(Path(path).read_text())
        return cls(raw["features"], np.array(raw["mean"]), np.array(raw["scale"]),
                   np.array(raw["coef"]), float(raw["intercept"]), float(raw["threshold"]),
                   raw.get("provenance", {}), raw.get("summary_threshold"))

    def to_json(self) -> dict:
        return {"features": self.features, "mean": self.mean.tolist(), "scale": self.scale.tolist(),
                "coef": self.coef.tolist(), "intercept": self.intercept,
                "threshold": self.threshold, "summary_threshold": self.summary_threshold,
                "provenance": self.provenance}

    def proba(self, rows: np.ndarray) -> np.ndarray:
        z = ((rows - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-z))


@lru_cache(maxsize=1)
def default_model() -> RelevanceModel:
    return RelevanceModel.load(MODEL_PATH)


def feature_rows(q: QueryTerms, hits: Sequence[Hit], sent: Sequence[float],
                 topic: bool = False) -> list[dict[str, float]]:
    """FEATURES for each hit (in the hits' order, which is the fused ranking); `topic` when
    judging the topic of a summary rather than a question."""
    if not hits:
        return []
    dense = np.array([h.dense_score for h in hits])
    fused = np.array([h.score for h in hits])
    bm25_top = max(h.bm25_score for h in hits) or 1.0
    spread = float(dense.std()) + 0.02
    total_w = sum(q.weights) or 1.0
    max_w = max(q.weights, default=1.0) or 1.0
    rows = []
    for rank, (h, s) in enumerate(zip(hits, sent)):
        pt = PaperTerms.of(h.paper)
        found = [pt.has(t) for t in q.terms]
        missing = [w for w, f in zip(q.weights, found) if not f]
        per_sentence = [weighted_share(q, [s.has(t) for t in q.terms]) for s in pt.sentences]
        name_match = any(pt.has(n) for n in q.names)
        rows.append({
            "dense": h.dense_score,
            "dense_gap": float(dense.max() - h.dense_score),
            "dense_z": float((h.dense_score - dense.mean()) / spread),
            "sent": s,
            "fused_gap": float(fused.max() - h.score),
            "bm25_rel": h.bm25_score / bm25_top,
            "coverage": sum(w for w, f in zip(q.weights, found) if f) / total_w,
            "coverage_n": sum(found) / len(found) if found else 0.0,
            "missing_idf": max(missing) / max_w if missing else 0.0,
            "unknown_mass": q.unknown_mass,
            "n_terms": math.log1p(len(q.terms)),
            "rank": math.log1p(rank),
            "name_asked": float(bool(q.names)),
            "name_match": float(name_match),
            "sent_cov": max(per_sentence, default=0.0),
            "title_cov": per_sentence[0] if per_sentence else 0.0,
            "topic": float(topic),
        })
    add_relative(rows)
    return rows


def weighted_share(q: QueryTerms, found: list[bool]) -> float:
    total = sum(q.weights)
    return sum(w for w, f in zip(q.weights, found) if f) / total if total else 0.0


def add_relative(rows: list[dict[str, float]]) -> None:
    """Features that compare each candidate with the others of the same question."""
    for key, lead in (("dense", "dense_lead"), ("coverage", "cov_lead")):
        values = [r[key] for r in rows]
        for i, r in enumerate(rows):
            others = values[:i] + values[i + 1:]
            r[lead] = r[key] - max(others) if others else r[key]
    best_sent = max(r["sent"] for r in rows)
    for r in rows:
        r["sent_gap"] = best_sent - r["sent"]


def sentence_similarity(query: str, hits: Sequence[Hit], embed: Optional[SentenceEmbedder]) -> list[float]:
    """Cosine of each paper's closest sentence or title with the question (0 without embedder)."""
    if embed is None or not hits:
        return [0.0] * len(hits)
    texts = [[h.paper.title] + split_sentences(h.paper.abstract) for h in hits]
    flat = [t for group in texts for t in group]
    vectors = embed([query] + flat)
    sims = vectors[1:] @ vectors[0]
    out, i = [], 0
    for group in texts:
        out.append(float(sims[i:i + len(group)].max()))
        i += len(group)
    return out


def authors_named(query: str, stats: CorpusStats) -> list[str]:
    """Corpus author names in the question: a full name, or a surname written as a name
    (capitalised, or long) — "the Khellaf paper", "What did Pontil work on?" — that the
    collection does not also use as a word (see `used_as_word`), unless the author's first name
    is there too."""
    found = full_names_in(query, stats)
    for _, _, named in surname_mentions(query, stats, found):
        found.extend(n for n in named if n not in found)
    return found


NAME_WORD_RE = re.compile(r"[^\W\d_][\w'-]*")  # a word that may be a name: "O'Neil", "Jean-Luc"
POSSESSIVE_RE = re.compile(r"(?<=[^\W\d_])['’]s?(?!\w)")  # "Zywina's", "Koymans'"


def authors_referred(query: str, stats: CorpusStats) -> list[str]:
    """`authors_named`, possessives included ("Does Zywina's theorem contain Koymans and Pagano's
    result?"). Not for relevance: a possessive surname is as often an eponym ("Kendall's tau",
    "Green's function") whose bearer's papers would count as certain; a question that refers to
    two papers of the collection (answer/plan.py) says which work it means."""
    return authors_named(POSSESSIVE_RE.sub("", query), stats)


NAME_CHARS = 120  # the longest span of a question looked up as a full name


def full_names_in(query: str, stats: CorpusStats) -> list[str]:
    """Corpus authors' full names the question writes as words ("Long He" is not in "along
    heat"), in the order it writes them. Each span of the question between word boundaries
    (`text.WORD_START_RE` and `WORD_END_RE`, those of `has_words`) is looked up among the names,
    so the cost grows with the question, not with the collection's authors (300k at 100k
    papers)."""
    q = normalise(query)
    starts = [m.start() for m in WORD_START_RE.finditer(q)]
    ends = [m.start() for m in WORD_END_RE.finditer(q)]
    found = {}
    for s in starts:
        for j in range(bisect_right(ends, s), len(ends)):
            e = ends[j]
            if e - s > NAME_CHARS:
                break
            name = q[s:e]
            if e > s + 4 and name in stats.authors:
                found.setdefault(name, None)
    return list(found)


def surname_mentions(query: str, stats: CorpusStats,
                     full_names: Sequence[str]) -> list[tuple[str, list[str], list[str]]]:
    """Each word of the question written as a corpus surname (capitalised, or long; not part of
    one of `full_names`, the full names it gives): (the word, the authors who bear it, those it
    names). It names all of them, unless the collection also uses it as a word; then only those
    whose first name the question gives too ("Emily King" still names Emily J. King)."""
    q = normalise(query)
    in_full = {w for name in full_names for w in name.split()}
    said = NAME_WORD_RE.findall(q)  # the question's words, for first names
    mentions = []
    for m in NAME_WORD_RE.finditer(query):
        tok = m.group(0)
        low = normalise(tok)
        if low in NOT_NAMES or len(low) < 4 or low in in_full:
            continue
        if not (tok[0].isupper() or len(low) >= 7):
            continue
        bearers = sorted(stats.surnames.get(low, ()))
        if not bearers:
            continue
        named = ([n for n in bearers if _first_name_given(n, low, said)]
                 if used_as_word(low, bearers, stats) else bearers)
        if cited_elsewhere(query[m.end():], stats):
            named = []
        mentions.append((tok, bearers, named))
    return mentions


# a work cited by its author and year: "Zhang et al. 2011", "Zhang et al. (2011)", "Zhang, 2011"
CITED_YEAR_RE = re.compile(r"^(?:\s+et\s+al\.?)?,?\s*\(?((?:19|20)\d\d)\b")


def cited_elsewhere(after: str, stats: CorpusStats) -> bool:
    """Is a surname followed by a year (`after`: the text after it) that no paper of the
    collection has, so that it cites a work from elsewhere ("KCIT from Zhang et al. 2011" in a
    collection of 2025 papers, or of papers without years)?"""
    m = CITED_YEAR_RE.match(after)
    if m is None:
        return False
    low, high = stats.year_range()
    return low is None or not low <= int(m.group(1)) <= high


def _first_name_given(name: str, surname: str, said: list[str]) -> bool:
    """Does the question (its normalised words, `said`) give this author's first name besides the
    surname? A first name that is the surname too ("Tian Tian") needs the word twice: "Tian
    functions" is no one's name."""
    first = name.split()[0]
    return said.count(first) > (1 if first == surname else 0)


def used_as_word(surname: str, names: Sequence[str], stats: CorpusStats) -> bool:
    """Does the collection's text hold the surname beyond the records of the authors who bear
    it: the Krylov of "Krylov subspace", the Taylor of "Taylor expansion", a first name? Then a
    question's "Taylor" alone ("the Taylor–Wiles method") may not mean them, and their papers are
    judged like any other instead of counting as certain. A full name still counts."""
    own = set().union(*(stats.authors.get(n, set()) for n in names))
    return stats.df.get(stem(surname), 0) > len(own)


def leads(paper, names: Sequence[str]) -> bool:
    return bool(paper.authors) and normalise(paper.authors[0]) in names


class Judge:
    """Scores candidates with the calibrated model and applies the relevance policy."""

    def __init__(self, stats_source: Callable[[], CorpusStats], policy: RelevancePolicy,
                 embed: Optional[SentenceEmbedder] = None, model: Optional[RelevanceModel] = None):
        self.stats_source = stats_source
        self.policy = policy
        self.embed = embed
        self.model = model or default_model()

    @property
    def threshold(self) -> float:
        return self.policy.threshold if self.policy.threshold is not None else self.model.threshold

    def judge(self, query: str, hits: Sequence[Hit], topic: bool = False) -> list[Judged]:
        """Every hit with its probability, best first; named authors' papers count as certain.
        `topic`: the query is the topic of a summary, not a question."""
        if not hits:
            return []
        stats = self.stats_source()
        q = QueryTerms.of(query, stats)
        rows = feature_rows(q, hits, sentence_similarity(query, hits, self.embed), topic)
        matrix = np.array([[r[f] for f in self.model.features] for r in rows])
        probs = self.model.proba(matrix)
        names = authors_named(query, stats)
        by_author = stats.papers_by(names)
        judged = [Judged(h, 1.0 if h.paper.paper_id in by_author else float(p), r,
                         h.paper.paper_id in by_author)
                  for h, p, r in zip(hits, probs, rows)]
        # among a named author's papers, those they lead come first ("the Fröhlich paper")
        return sorted(judged, key=lambda j: (-j.p, not leads(j.paper, names)))

    @property
    def summary_threshold(self) -> float:
        """Membership of a paper already known to be on topic (a summary's papers, a compare
        side the user names): never stricter than the question gate."""
        fitted = self.model.summary_threshold
        own = self.policy.summary_threshold
        chosen = own if own is not None else (fitted if fitted is not None else self.threshold)
        return min(chosen, self.threshold)

    def members(self, judged: Sequence[Judged]) -> list[Judged]:
        """A summary's papers: none unless its best paper passes the question gate (is there
        anything on this at all?), then every paper at the summary threshold (which belong?)."""
        if not self.relevant(judged[:1]):
            return []
        return self.relevant(judged, self.summary_threshold)

    def relevant(self, judged: Sequence[Judged], threshold: Optional[float] = None) -> list[Judged]:
        cut = self.threshold if threshold is None else threshold
        return [j for j in judged if j.p >= cut]

    def choose(self, judged: Sequence[Judged], singular: bool, plural: bool,
               threshold: Optional[float] = None) -> list[Judged]:
        """The papers an answer rests on: the best relevant one, plus close seconds (or, for a
        question asking for papers in the plural, every relevant one up to the policy's cap).
        `threshold`: the probability the judged papers' `p` must reach (default: the gate's)."""
        passing = self.relevant(judged, threshold)
        if not passing:
            return []
        authored = [j for j in passing if j.author_match]
        if authored:
            return authored[: self.policy.max_papers_plural]
        if singular:
            return passing[:1]
        if plural:
            return passing[: self.policy.max_papers_plural]
        best = passing[0].p
        return [j for j in passing if j.p >= best * self.policy.second_ratio][: self.policy.max_papers]
