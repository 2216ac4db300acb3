"""Grounding: the check of every cited sentence of the model's prose.

An answer may only cite papers retrieval returned for this turn, and each cited sentence must
be supported by the abstract (or the metadata) of the paper it cites. Support mixes lexical
overlap (content stems of the claim found in one evidence sentence) with embedding similarity,
and figures in a claim must be the cited source's (its digits, and a dimension, degree, index or
count however written: cases.py): a wrong figure is the commonest hallucination of a small
model. The policy's numbers are chosen on blind-labelled sentences of the local model
(benchmarks/calibrate_support.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional


from ..config import CitationPolicy
from ..text import has_words, normalise, split_sentences, stems, terms
from .cases import uncovered_figures
from .evidence import FIGURE_RE, SentenceEmbeddings, Source
from .markers import MARKER_RE, parse_markers, renumber  # noqa: F401  (renumber: re-exported)

@dataclass
class GroundedText:
    text: str = ""
    removed_markers: int = 0
    unsupported: int = 0
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (sentence, why)
    kept: list["Verdict"] = field(default_factory=list)  # the sentences shown, in order

    def add(self, v: "Verdict") -> None:
        self.removed_markers += v.removed
        if not v.kept:
            self.unsupported += v.why == "unsupported"
            self.dropped.append((v.claim, v.why))
            return
        self.kept.append(v)

    @property
    def used(self) -> list[int]:
        """Source numbers cited by the kept sentences, in order of first appearance."""
        return list(dict.fromkeys(n for v in self.kept for n in v.markers))

    @property
    def evidence(self) -> dict[int, str]:
        """Source n → the line the first kept sentence citing it restates."""
        out: dict[int, str] = {}
        for v in self.kept:
            for n in v.markers:
                out.setdefault(n, v.evidence[n])
        return out


@dataclass
class Support:
    """How one source backs one claim."""

    score: float  # 0.5 · lexical overlap with its best sentence + 0.5 · embedding similarity
    content: float  # share of the claim's content words found anywhere in the source
    numbers_ok: bool  # every figure of the claim appears in the source
    sentence: str  # the source's best abstract sentence for the claim
    relations_ok: bool = True  # every causal link the claim states ("because", "leads to") is in its lines
    hedges_ok: bool = True  # a limit its best line puts on what the claim restates ("can explain") is kept


# Words an answer uses about itself ("Yes, there is work on …", "the paper"), never a claim
# about the paper's content.
ANSWER_FRAMING = frozenset(stems("yes paper papers work works study studies article source collection"))


@dataclass
class Verdict:
    """One prose sentence after the check: kept with these markers, or dropped and why."""

    claim: str
    markers: list[int]
    why: str = ""  # "", "unfinished", "filler", "unsupported", "names another paper", "marker as a word"
    repointed: bool = False
    removed: int = 0  # markers that named no source of this turn
    evidence: dict[int, str] = field(default_factory=dict)
    written: str = ""  # the sentence with its markers in place, when one stands for a noun

    @property
    def kept(self) -> bool:
        return not self.why

    def text(self) -> str:
        if self.written:
            return fix_spacing(self.written)
        return fix_spacing(self.claim.rstrip() + " " + "".join(f"[{n}]" for n in self.markers))

    def plain(self) -> str:
        """The sentence as shown, without its markers (with them where one stands for a noun)."""
        return fix_spacing(self.written or self.claim)


# "A does X [1], while B does Y [2]": each side of a contrast is a claim of its own, about its
# own paper. Checked whole, the true half carried the invented one past the check.
CONTRAST_RE = re.compile(r",?\s+(?:while|whereas)\s+|;\s+|,\s+but\s+", re.I)


def clauses(sentence: str) -> list[str]:
    """The sentence's contrasted claims, each with the markers written inside it (a part that
    says nothing, like a marker before "Whereas …", joins the claim after it)."""
    out, pending = [], ""
    for part in CONTRAST_RE.split(sentence):
        part = f"{pending} {part}".strip()
        if makes_claim(MARKER_RE.sub("", part)):
            out.append(part)
            pending = ""
        else:
            pending = part
    if pending and out:
        out[-1] = f"{out[-1]} {pending}"
    return out or [sentence]


class Grounder:
    """Checks each prose sentence against the paper its marker names. Each side of a contrast
    ("…, while …") is checked on its own, against the markers written in it. A source backs a
    claim when its best sentence is close enough, it holds enough of the claim's content words
    and every figure of the claim (CitationPolicy); a marker stays when its source backs the
    claim nearly as well as the best source; a claim its own markers do not back is re-pointed
    to the source that does, or the sentence is dropped; so is an unfinished sentence."""

    def __init__(self, embed: SentenceEmbeddings, policy: Optional[CitationPolicy] = None):
        self.embed = embed
        self.policy = policy or CitationPolicy()

    def support(self, claim: str, source: Source, allowed: frozenset[str] = frozenset()) -> Support:
        """How well the source backs the claim, judged on what the model was given: the paper's
        metadata line and its evidence sentences. `allowed` are stems the claim may use without
        the source (the question's own words). The claim's content words must be in its best
        `policy.content_sentences` evidence sentences (with the metadata line), so a sentence
        stitched from several places of an abstract, or from several papers, does not pass."""
        texts = source.support_texts()
        claim_stems = stems(" ".join(terms(claim)))
        vectors = self.embed([claim] + texts)
        sims = vectors[1:] @ vectors[0]
        scores = []
        for text, sim in zip(texts, sims):
            lex = len(claim_stems & stems(text)) / len(claim_stems) if claim_stems else 0.0
            scores.append(0.5 * lex + 0.5 * float(sim))
        ranked = sorted(range(1, len(texts)), key=lambda i: -scores[i])  # texts[0]: the metadata line
        sentence = texts[ranked[0]] if ranked else texts[0]
        backing = [texts[0]] + [texts[i] for i in ranked[: self.policy.content_sentences or len(ranked)]]
        own = claim_stems - allowed - ANSWER_FRAMING
        content = len(own & stems(" ".join(backing))) / len(own) if own else 1.0
        joined = " ".join(texts)
        whole = normalise(joined)
        figures = FIGURE_RE.findall(claim)
        numbers_ok = (all(n.rstrip("%") in whole for n in figures)
                      and not baseline_figures(figures, joined) and not uncovered_figures(claim, joined))
        said = normalise(" ".join(backing))
        relations_ok = all(r in said for r in relations(claim))
        return Support(max(scores), content, numbers_ok, sentence, relations_ok,
                       not dropped_hedges(claim, sentence))

    def verdict(self, sentence: str, by_n: dict[int, Source], finished: bool = True,
                allowed: frozenset[str] = frozenset()) -> Verdict:
        claim = MARKER_RE.sub("", sentence).strip()
        cited = cited_in(sentence)
        v = Verdict(claim, [], removed=len([n for n in cited if n not in by_n]))
        if not makes_claim(claim):
            v.why = "filler"  # a bare "[2]" or a list number "2.": nothing to keep
        elif SCAFFOLD_RE.match(claim):
            v.why = "filler"  # the prompt's own labels copied back ("Title: …  Record: …")
        elif not finished:
            v.why = "unfinished"  # cut off by the token limit: never shown half a claim
        if v.why:
            return v
        for part in clauses(sentence):
            markers, repointed, evidence = self._claim(part, by_n, allowed)
            if not markers or names_another(part, markers, by_n):
                v.markers, v.evidence = [], {}
                v.why = "unsupported" if not markers else "names another paper"
                return v
            v.markers += [n for n in markers if n not in v.markers]
            v.repointed |= repointed
            v.evidence.update(evidence)
        if NOUN_MARKER_RE.search(sentence):
            return self._marker_as_noun(v, sentence, cited)
        return v

    @staticmethod
    def _marker_as_noun(v: Verdict, sentence: str, cited: list[int]) -> Verdict:
        """A sentence that names a paper by its marker ("The authors of [1] show …") is shown
        as written, markers in place: taken out, they would leave a hole. Only when the check
        backs exactly the papers it names; naming another (re-pointed) or none, it is dropped."""
        if v.repointed or v.removed or set(v.markers) != set(cited):
            v.markers, v.why, v.evidence = [], "marker as a word", {}
        else:
            v.written = sentence
        return v

    def _claim(self, part: str, by_n: dict[int, Source], allowed: frozenset[str]):
        """(markers, re-pointed?, evidence) for one claim with the markers written in it."""
        claim = MARKER_RE.sub("", part).strip()
        valid = [n for n in cited_in(part) if n in by_n]
        scored = {n: self.support(claim, src, allowed) for n, src in by_n.items()}
        markers, repointed = self._markers(scored, valid)
        return markers, repointed, {n: scored[n].sentence for n in markers}

    def _markers(self, scored: dict[int, Support], cited: list[int]) -> tuple[list[int], bool]:
        """The cited sources that back the claim (within the margin of the best); else the one
        that backs it best, re-pointed; else none."""
        p = self.policy
        backing = {n: s for n, s in scored.items()
                   if s.numbers_ok and s.relations_ok and s.hedges_ok and s.score >= p.min_support
                   and s.content >= p.min_content}
        top = max((s.score for s in backing.values()), default=0.0)
        kept = [n for n in cited if n in backing and backing[n].score >= top - p.margin]
        if kept or not backing:
            return kept, False
        return [max(backing, key=lambda n: backing[n].score)], True

    def check(self, text: str, sources: list[Source], finished: bool = True,
              allowed: frozenset[str] = frozenset()) -> GroundedText:
        """Keep supported, correctly cited sentences; fix or drop the rest. `finished`: the
        model ended on its own (else its last sentence may be cut off)."""
        by_n = {s.n: s for s in sources}
        result = GroundedText()
        sentences = split_answer(text)
        kept = []
        for i, sentence in enumerate(sentences):
            done = finished or i < len(sentences) - 1 or ends_sentence(sentence)
            v = self.verdict(sentence, by_n, done, allowed)
            result.add(v)
            if v.kept:
                kept.append(v.text())
        result.text = " ".join(kept)
        return result


# A marker standing where a noun belongs: after a preposition or a conjunction ("The authors
# of [1] show …", "as reported in [2].", "both [1] and [2] use …"), or naming the paper after
# "paper" ("The paper [1] trains …": taken out, "The paper trains …" says not which).
NOUN_MARKER_RE = re.compile(r"\b(?:of|in|by|from|than|to|with|and|or|see|between|like|unlike|versus|vs\.?|"
                            r"paper|study|work|article)"
                            rf"\s+{MARKER_RE.pattern}", re.I)

# The labels of a source block in the prompt (compose.source_block): a sentence that starts
# with one copies the prompt back instead of restating a line.
SCAFFOLD_RE = re.compile(r"^\s*(?:Title|Record|Lines)\s*:", re.I)

# Words that state a causal link. A small model joining two lines of an abstract with
# "because" invents a relation the abstract does not state; a claim may only use such a word
# when the line it restates does.
RELATION_RE = re.compile(r"\b(because|therefore|hence|consequently|thereby|due to|as a result|"
                         r"leads? to|led to|results? in|causes?|caused)\b", re.I)


# "740 vs. 1020 GB/s": the figure after "vs." is what the paper's own figure is compared with
VERSUS_RE = re.compile(r"(?<![A-Za-z])(\d+(?:\.\d+)?)%?(?:\s*[A-Za-z/]+)?\s+(?:vs\.?|versus)\s+"
                       r"(\d+(?:\.\d+)?)")


def baseline_figures(figures: list[str], text: str) -> list[str]:
    """Figures of a claim that its source gives only as the other side of a comparison
    ("740 vs. 1020 GB/s") while the claim leaves out the side they were compared with: a
    baseline's figure credited to the paper."""
    said = {f.rstrip("%") for f in figures}
    pairs = VERSUS_RE.findall(text)
    own = {a for a, _ in pairs}  # a figure on the paper's side anywhere is the paper's
    return [b for a, b in pairs if b in said and a not in said and b not in own]


def names_of(paper) -> list[str]:
    """What a sentence calls a paper by: its title, the title's head before a colon ("Top-W:
    …"), its first author's surname."""
    names = [paper.title]
    head = paper.title.split(":", 1)[0].strip()
    if head != paper.title and 1 <= len(head.split()) <= 5:
        names.append(head)
    if paper.authors and len(paper.authors[0].split()[-1]) >= 3:
        names.append(paper.authors[0].split()[-1])
    return names


def names_another(claim: str, markers: list[int], by_n: dict[int, Source]) -> bool:
    """Does the claim name papers of this turn, none of them one its markers cite ("Top-W
    keeps …" under the marker of another paper, after the check re-pointed it there)?"""
    named = {n for n, src in by_n.items() if any(has_words(claim, x) for x in names_of(src.paper))}
    return bool(named) and not named & set(markers)


def relations(claim: str) -> list[str]:
    """The causal links a claim states, as words to find in its evidence ("leads to" → "lead")."""
    out = []
    for m in RELATION_RE.finditer(claim):
        word = m.group(1).lower()
        out.append({"leads to": "lead", "lead to": "lead", "led to": "led", "results in": "result",
                    "result in": "result", "causes": "caus", "cause": "caus", "caused": "caus"}.get(word, word))
    return out


# Words that limit a claim: a modal verb, a frequency, a likelihood ("can explain", "may
# depend", "often exhibit"). A closed class, so a list is exact. The word they limit is the
# next one, past adverbs, "not" and "be" ("can also be achieved" limits "achieved").
HEDGE_WORDS = r"may|might|can|could|often|possibly|potentially|likely|sometimes|tends?\s+to|appears?\s+to|seems?\s+to"
HEDGE_RE = re.compile(rf"\b(?:{HEDGE_WORDS})\s+(?:(?:not|be|also|still|further|\w+ly)\s+)*([A-Za-z][\w-]*)", re.I)
HEDGED_RE = re.compile(rf"\b(?:{HEDGE_WORDS}|suggests?|suggested|perhaps|possible)\b", re.I)


def dropped_hedges(claim: str, line: str) -> list[str]:
    """The words of `line` that a hedge limits and that `claim` states with no hedge at all:
    "… which can explain why …" restated as "… which explains why …" claims more than the
    line does."""
    if HEDGED_RE.search(claim):
        return []
    said = stems(claim)
    return [m.group(1) for m in HEDGE_RE.finditer(line) if stems(m.group(1)) & said]


def cited_in(text: str) -> list[int]:
    """The source numbers of the markers in `text`, once each, in order."""
    return list(dict.fromkeys(n for g in MARKER_RE.findall(text) for n in parse_markers(g)))


def makes_claim(claim: str) -> bool:
    """Does the sentence say anything: a word, not just markers, figures or punctuation?"""
    return any(not t.isdigit() for t in terms(claim))


def split_answer(text: str) -> list[str]:
    """Answer sentences; a marker right after the full stop belongs to the sentence before it."""
    text = " ".join(text.replace("\n", " ").split())
    text = re.sub(r"([.!?])\s*((?:\[\d+(?:\s*[,;–-]\s*\d+)*\]\s*)+)",
                  lambda m: " " + m.group(2).strip() + m.group(1) + " ", text)
    return [s.strip() for s in split_sentences(text) if s.strip()]


def ends_sentence(sentence: str) -> bool:
    """Does it end like a sentence ("… result [1].", "… is it?")?"""
    return bool(re.search(r"[.!?][\"”')\]]*\s*(\[\d+[^\]]*\]\s*)*$", sentence.strip()))


def fix_spacing(sentence: str) -> str:
    """One space between words (a marker taken out of "The paper [1] reaches …" leaves two),
    none before punctuation, the markers before the final full stop."""
    s = re.sub(r"\s+([.,;:!?])", r"\1", " ".join(sentence.split()))
    # put the markers before the final full stop: "... result [1]."
    m = re.match(r"^(.*?)([.!?])\s*((?:\[\d+\])+)$", s)
    if m:
        s = f"{m.group(1)} {m.group(3)}{m.group(2)}"
    elif not re.search(r"[.!?]$", s):
        s += "."
    return s
