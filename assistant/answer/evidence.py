"""Evidence: the abstract sentences a prompt gives the model for a paper, chosen for the question.

Below planning, composing, reading and grounding, which all use it: the sentence-vector cache
(`SentenceEmbeddings`), the sentences safe to put in a prompt, their ranking for a question, and
`Source`, a paper numbered for one turn with the sentences the model saw.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..types import Paper
from ..text import split_sentences, stems, terms
from ..embed import embed_texts
from ..index import SentenceVectors

# a figure stated in a sentence: 12, 3.5, 40%
FIGURE_RE = re.compile(r"(?<![A-Za-z])\d+(?:\.\d+)?%?")
# Text in an abstract that talks to the assistant rather than about research is data we keep
# out of the prompt altogether (it is still searchable and shown as the paper's text).
INJECTION_RE = re.compile(
    r"(ignore|disregard|forget)\s+(all\s+|any\s+|the\s+)?(previous|prior|above|earlier)\s+"
    r"(instructions|prompts?|rules)|\byou are (now )?(an?|the) (assistant|ai|language model)\b|"
    r"\bsystem prompt\b|<\|im_start\|>|<\|im_end\|>|\bassistant:\s|\brespond (only )?with\b|"
    r"\b(reply|answer) (only )?with\b", re.I)


class SentenceEmbeddings:
    """Embeds short texts on demand with a bounded cache (abstract sentences recur a lot).

    Texts another thread is embedding right now are waited for, not embedded again: on a cold
    cache, concurrent questions share their candidates' sentences, and the embedding session
    runs one batch at a time, so embedding them twice would queue the same work."""

    def __init__(self, embedder, capacity: int = 20000, disk: Optional[SentenceVectors] = None):
        """`disk`: vectors kept beside the store (for `embedder`'s model), read before
        embedding and given every vector embedded here."""
        self.embedder = embedder
        self.capacity = capacity
        self.disk = disk
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: dict[str, threading.Event] = {}  # text → set when its vector is cached
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384))
        unique = list(dict.fromkeys(texts))
        mine: list[str] = []
        theirs: dict[str, threading.Event] = {}
        done = threading.Event()
        with self._lock:  # this call's vectors are collected before anything is evicted
            found = {t: self._cache[t] for t in unique if t in self._cache}
            for t in found:
                self._cache.move_to_end(t)  # least recently used goes first
            for t in unique:
                if t in found:
                    continue
                if t in self._pending:
                    theirs[t] = self._pending[t]
                else:
                    mine.append(t)
                    self._pending[t] = done
        if mine:
            try:
                found.update(self._stored_or_embedded(mine))
                with self._lock:
                    for t in mine:
                        self._cache[t] = found[t]
                    while len(self._cache) > self.capacity:
                        self._cache.popitem(last=False)
            finally:
                with self._lock:
                    for t in mine:
                        if self._pending.get(t) is done:
                            del self._pending[t]
                done.set()
        if theirs:
            for event in set(theirs.values()):
                event.wait()
            with self._lock:
                found.update({t: self._cache[t] for t in theirs if t in self._cache})
            rest = [t for t in theirs if t not in found]  # the other thread failed, or evicted
            if rest:
                found.update(zip(rest, self._embed(rest)))
        return np.stack([found[t] for t in texts])

    def _stored_or_embedded(self, texts: list[str]) -> dict[str, np.ndarray]:
        stored = self.disk.get(texts) if self.disk is not None else {}
        rest = [t for t in texts if t not in stored]
        if rest:
            fresh = dict(zip(rest, self._embed(rest)))
            if self.disk is not None:
                self.disk.put(fresh)
            stored.update(fresh)
        return stored

    def _embed(self, texts: list[str]) -> np.ndarray:
        return embed_texts(self.embedder, texts, batch_size=64)


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
    numbers = np.array([bool(FIGURE_RE.search(s)) for s in sents], dtype=float)
    return sims + 0.3 * lex + (0.3 * numbers if wants_number else 0.0)


def best_sentences(paper: Paper, query: str, embed: SentenceEmbeddings, n: int) -> list[str]:
    """The n abstract sentences closest to the query, kept in the abstract's order."""
    return evidence_for(paper, [query], embed, n)


def evidence_for(paper: Paper, parts: list[str], embed: SentenceEmbeddings, n: int,
                 own: bool = False) -> list[str]:
    """The n best sentences for the question's first part and the best one for each further
    part ("…, and by how much does it reduce error?"), once each, in the abstract's order.
    `own`: only the sentences in the paper's own voice (`own_sentences`), for answers that say
    what each paper does: a line about earlier work, restated under the paper's name, credits
    the paper with it."""
    sents = safe_sentences(paper)
    if own:
        sents = [sents[i] for i in own_sentences(sents)]
    if len(sents) <= n:
        return sents
    chosen: list[int] = []
    for k, part in enumerate(parts):
        order = [int(i) for i in np.argsort(-sentence_scores(sents, part, embed))]
        chosen += [i for i in order if i not in chosen][: n if k == 0 else 1]
    return [sents[i] for i in sorted(chosen)]


# The authors speaking of their own work: "we", "our", "this paper", "is proposed".
OWN_VOICE_RE = re.compile(r"\b(?:we|our|ours|us|this (?:paper|work|study|article|note|thesis|letter|report)|"
                          r"the authors|(?:is|are) (?:proposed|introduced|presented|developed))\b", re.I)
# A sentence that cites other work: "Han et al. (2016)", "\citep{…}", "(Nowlan & Hinton, 1991)".
CITES_OTHERS_RE = re.compile(r"\bet al\b|\\cite\w*\{|\(\s*[A-Z][\w-]+(?:\s+(?:&|and)\s+[A-Z][\w-]+)?,?\s+"
                             r"(?:19|20)\d\d[a-z]?\s*\)")


# A line in the authors' voice that answers a problem the lines before it state: "To mitigate,
# we introduce …", "To address these limitations, our …" (not "To further improve it, we …").
ANSWERS_ABOVE_RE = re.compile(r"^\W*to\s+(?:address|mitigate|overcome|tackle|remedy|alleviate|resolve|"
                              r"circumvent|fix|close|bridge|fill)\b", re.I)


def own_sentences(sents: list[str]) -> list[int]:
    """Indices of the sentences that speak for the paper itself: from its first sentence in the
    authors' voice on (an abstract opens with its field and earlier work), without those that
    cite other work and do not speak of the authors' own ("Recent work by Han et al. (2016)
    propose …"), and without the lines, not in the authors' voice, that a later line answers
    ("An established approach is … Consequently, the method can fail … To mitigate, we
    introduce …": the method that fails is the earlier one). An abstract never in the authors'
    voice is all its own."""
    voiced = [bool(OWN_VOICE_RE.search(s)) for s in sents]
    if not any(voiced):
        return list(range(len(sents)))
    first = voiced.index(True)
    return [i for i in range(first, len(sents))
            if voiced[i] or not (CITES_OTHERS_RE.search(sents[i]) or _answered_below(sents, voiced, i))]


def _answered_below(sents: list[str], voiced: list[bool], i: int) -> bool:
    """Is line i, not in the authors' voice, among the lines that the next line in their voice
    answers ("To mitigate, we …")? Such lines state the problem, not what the paper does."""
    after = next((j for j in range(i + 1, len(sents)) if voiced[j]), None)
    return after is not None and bool(ANSWERS_ABOVE_RE.search(sents[after]))


@dataclass
class Source:
    """A paper given to the model under the number `n` for this turn."""

    n: int
    paper: Paper
    sentences: list[str]  # what the model saw

    def support_texts(self) -> list[str]:
        """What a claim citing this paper is checked against: its metadata line and the
        sentences the model was given (the whole abstract when none were chosen)."""
        return [metadata_line(self.paper)] + (self.sentences or safe_sentences(self.paper))
