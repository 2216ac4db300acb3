"""Grounding: evidence sentences for the prompt, and the check of every cited sentence.

An answer may only cite papers retrieval returned for this turn, and each cited sentence must
be supported by the abstract (or the metadata) of the paper it cites. Support mixes lexical
overlap (content stems of the claim found in one evidence sentence) with embedding similarity,
and numbers in a claim must appear in the cited source: a wrong figure is the commonest
hallucination of a small model.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from ..types import Paper
from ..text import normalise, split_sentences, stems, terms
from .markers import MARKER_RE, parse_markers, renumber  # noqa: F401  (renumber: re-exported)

NUMBER_RE = re.compile(r"(?<![A-Za-z])\d+(?:\.\d+)?%?")
# Text in an abstract that talks to the assistant rather than about research is data we keep
# out of the prompt altogether (it is still searchable and shown as the paper's text).
INJECTION_RE = re.compile(
    r"(ignore|disregard|forget)\s+(all\s+|any\s+|the\s+)?(previous|prior|above|earlier)\s+"
    r"(instructions|prompts?|rules)|\byou are (now )?(an?|the) (assistant|ai|language model)\b|"
    r"\bsystem prompt\b|<\|im_start\|>|<\|im_end\|>|\bassistant:\s|\brespond (only )?with\b|"
    r"\b(reply|answer) (only )?with\b", re.I)


class SentenceEmbeddings:
    """Embeds short texts on demand with a bounded cache (abstract sentences recur a lot)."""

    def __init__(self, embedder, capacity: int = 20000):
        self.embedder = embedder
        self.capacity = capacity
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            from ..embed import embed_texts

            vectors = embed_texts(self.embedder, missing, batch_size=64)
            with self._lock:
                for t, v in zip(missing, vectors):
                    self._cache[t] = v
                while len(self._cache) > self.capacity:
                    self._cache.popitem(last=False)
        with self._lock:
            return np.stack([self._cache[t] for t in texts]) if texts else np.zeros((0, 384))


def metadata_line(paper: Paper) -> str:
    bits = [f"{paper.title}", f"by {', '.join(paper.authors)}" if paper.authors else ""]
    if paper.category:
        bits.append(f"category {paper.category}")
    if paper.year:
        bits.append(f"year {paper.year}")
    return "; ".join(b for b in bits if b)


def safe_sentences(paper: Paper) -> list[str]:
    return [s for s in split_sentences(paper.abstract) if not INJECTION_RE.search(s)]


QUANTITY_RE = re.compile(r"\b(how (much|many|large|big|fast|often|well)|by what (margin|factor)|"
                         r"what (percentage|fraction|share|accuracy|error|speed-?up)|"
                         r"improve(ment)?s? (by|of)|reduc\w* (error|cost|time))", re.I)


def sentence_scores(sents: list[str], query: str, embed: SentenceEmbeddings) -> np.ndarray:
    """How well each sentence answers the query: embedding similarity plus shared stems, and
    for a question asking "how much", a bonus for sentences that state a number."""
    qv = embed([query])[0]
    sims = embed(sents) @ qv
    q_stems = stems(" ".join(terms(query)))
    lex = np.array([len(q_stems & stems(s)) / max(len(q_stems), 1) for s in sents])
    wants_number = bool(QUANTITY_RE.search(query))
    numbers = np.array([bool(NUMBER_RE.search(s)) for s in sents], dtype=float)
    return sims + 0.3 * lex + (0.3 * numbers if wants_number else 0.0)


def best_sentences(paper: Paper, query: str, embed: SentenceEmbeddings, n: int) -> list[str]:
    """The n abstract sentences closest to the query, kept in the abstract's order."""
    return evidence_for(paper, [query], embed, n)


def evidence_for(paper: Paper, parts: list[str], embed: SentenceEmbeddings, n: int) -> list[str]:
    """The n best sentences for the question's first part and the best one for each further
    part ("…, and by how much does it reduce error?"), once each, in the abstract's order."""
    sents = safe_sentences(paper)
    if len(sents) <= n:
        return sents
    chosen: list[int] = []
    for k, part in enumerate(parts):
        order = [int(i) for i in np.argsort(-sentence_scores(sents, part, embed))]
        chosen += [i for i in order if i not in chosen][: n if k == 0 else 1]
    return [sents[i] for i in sorted(chosen)]


@dataclass
class Source:
    """A paper given to the model under the number `n` for this turn."""

    n: int
    paper: Paper
    sentences: list[str]  # what the model saw

    def support_texts(self) -> list[str]:
        return [metadata_line(self.paper)] + safe_sentences(self.paper)


@dataclass
class GroundedText:
    text: str
    used: list[int]  # source numbers cited, in order of first appearance
    evidence: dict[int, str] = field(default_factory=dict)  # source n -> best supporting sentence
    removed_markers: int = 0
    unsupported: int = 0


class Grounder:
    def __init__(self, embed: SentenceEmbeddings, min_support: float):
        self.embed = embed
        self.min_support = min_support

    def support(self, claim: str, source: Source) -> tuple[float, str]:
        """How well the source supports the claim (0..1), and its best sentence."""
        texts = source.support_texts()
        claim_terms = terms(claim)
        claim_stems = stems(" ".join(claim_terms))
        vectors = self.embed([claim] + texts)
        sims = vectors[1:] @ vectors[0]
        best, best_text, best_sentence, best_sentence_score = 0.0, "", "", -1.0
        for i, (text, sim) in enumerate(zip(texts, sims)):
            lex = len(claim_stems & stems(text)) / len(claim_stems) if claim_stems else 0.0
            score = 0.5 * lex + 0.5 * float(sim)
            best = max(best, score)
            if i > 0 and score > best_sentence_score:  # texts[0] is the metadata line
                best_sentence, best_sentence_score = text, score
        # the evidence shown to a reader is an abstract sentence, never the metadata line
        best_text = best_sentence or texts[0]
        # a figure the source never states is not supported by it, however similar the wording
        src_norm = normalise(" ".join(texts))
        for num in NUMBER_RE.findall(claim):
            if num.rstrip("%") not in src_norm:
                return 0.0, best_text
        return best, best_text

    def check(self, text: str, sources: list[Source]) -> GroundedText:
        """Keep supported, correctly cited sentences; fix or drop the rest."""
        by_n = {s.n: s for s in sources}
        result = GroundedText(text="", used=[])
        kept: list[str] = []
        for sentence in split_answer(text):
            claim = MARKER_RE.sub("", sentence).strip()
            cited = [n for g in MARKER_RE.findall(sentence) for n in parse_markers(g)]
            valid = [n for n in dict.fromkeys(cited) if n in by_n]
            result.removed_markers += len(set(cited)) - len(valid)
            if not terms(claim):
                continue  # a bare "[2]" or filler: nothing to keep
            scored = {n: self.support(claim, s) for n, s in by_n.items()}
            best_n = max(scored, key=lambda n: scored[n][0]) if scored else None
            top = scored[best_n][0] if best_n is not None else 0.0
            # a marker stays when its paper supports the claim, and not far less than another does
            supported = [n for n in valid if scored[n][0] >= self.min_support
                         and scored[n][0] >= top - 0.25]
            if not supported:
                if best_n is not None and scored[best_n][0] >= self.min_support:
                    supported = [best_n]  # right claim, wrong or missing number: re-point it
                else:
                    result.unsupported += 1
                    continue  # never shown as cited when nothing supports it
            for n in supported:
                result.evidence.setdefault(n, scored[n][1])
                if n not in result.used:
                    result.used.append(n)
            kept.append(claim.rstrip() + " " + "".join(f"[{n}]" for n in supported))
        result.text = " ".join(fix_spacing(s) for s in kept)
        return result


def split_answer(text: str) -> list[str]:
    """Answer sentences; a marker right after the full stop belongs to the sentence before it."""
    text = " ".join(text.replace("\n", " ").split())
    text = re.sub(r"([.!?])\s*((?:\[\d+(?:\s*[,;–-]\s*\d+)*\]\s*)+)",
                  lambda m: " " + m.group(2).strip() + m.group(1) + " ", text)
    return [s.strip() for s in split_sentences(text) if s.strip()]


def fix_spacing(sentence: str) -> str:
    s = re.sub(r"\s+([.,;:!?])", r"\1", sentence.strip())
    # put the markers before the final full stop: "... result [1]."
    m = re.match(r"^(.*?)([.!?])\s*((?:\[\d+\])+)$", s)
    if m:
        s = f"{m.group(1)} {m.group(3)}{m.group(2)}"
    elif not re.search(r"[.!?]$", s):
        s += "."
    return s
