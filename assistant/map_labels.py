"""Names for the map's themes: the phrases that set each theme apart from the others.

    name_groups([[paper, ...], [paper, ...], ...])   # [("Federated learning, backdoor attacks",
                                                     #   ["federated learning", "backdoor attacks"]), ...]

Class-based TF-IDF (c-TF-IDF) over phrases of one to three words from the papers' titles and
abstracts tells how distinctive a phrase is: log(1 + 1 / the sum of its shares over all themes),
where a phrase's share in a theme is the share of the theme's papers using it (a use in a title
counts twice: a title says what the paper is about). "Neural networks", used everywhere, names
no theme. A theme of a large collection is broad (a twelfth of 5,000 papers), so one phrase
describes only some of its papers; a name is therefore picked as a cover: first the phrase with
the best share × distinctiveness, then the phrase that adds the most of the papers not yet
described (their weight), times its distinctiveness, up to NAME_PHRASES ("Clustering, community
detection, social networks"). A phrase that only restates a chosen one adds no papers and is
not picked ("gans" after "generative adversarial networks").
Phrases are runs of words between stop words, generic research
words ("propose", "outperforms", "typically") and punctuation, so a name is words that stand
together in the papers; a few generic nouns may be part of a phrase ("reinforcement learning",
"language models") but not all of it.

A theme is read from a seeded sample of at most LABEL_SAMPLE papers: the shares are stable well
before that, and reading every paper of a 100,000-paper collection would cost minutes.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .answer.themes import GENERIC, written_name
from .text import STOPWORDS, stem
from .types import Paper

LABEL_SAMPLE = 300  # papers read per theme (seeded sample)
MAX_WORDS = 3  # longest phrase
MIN_SHARE = 0.08  # a name is used by at least this share of the theme's papers…
MIN_PAPERS = 2  # …and by at least this many
NAME_PHRASES = 3  # phrases in a name at most
NEXT_PHRASE = 0.4  # a further phrase is kept if it adds at least this share of the first's score
EXTEND = 0.5  # a phrase is named by a longer one holding it that this share of its papers use
LONGER_BONUS = {1: 1.0, 2: 1.6, 3: 1.8}  # "federated learning" reads better than "federated"
OTHER = "Other papers"
# generic words that still belong in a topic's name: "reinforcement learning", "language models"
PHRASE_NOUNS = frozenset("learning model models data analysis problem problems set sets".split())
# words that end a phrase besides stop words and the other generic words: verbs and adverbs of
# an abstract's prose, and the pieces of web addresses ("code at https://github.com/…")
BREAKS = frozenset("""
outperform outperforms outperforming keep keeps keeping reduce reduces reducing increase increases
achieve achieves achieved achieving present presents presented introduce introduces introduced
describe describes described investigate investigates investigated consider considers considered
yield yields lead leads obtain obtains obtained assume assumes assumed require requires required
remain remains exhibit exhibits offer offers apply applied applying compared compare
http https www com org net html github doi
""".split()) | (GENERIC - PHRASE_NOUNS)
ADVERB_RE = re.compile(r"[a-z]{4,}ly$")  # "typically", "consistently": never in a name
NOT_ADVERBS = frozenset("anomaly family assembly monopoly supply butterfly".split())

CLAUSE_RE = re.compile(r"[^\w\s-]+|_+|\s-\s|--")  # punctuation ends a phrase
# a word: letters of any alphabet ("schrödinger"), digits and inner hyphens
WORD_RE = re.compile(r"[^\W\d_][\w-]*[^\W_]")


def paper_phrases(paper: Paper) -> set[str]:
    """The candidate phrases of a paper's title and abstract (each once)."""
    return text_phrases(f"{paper.title}. {paper.abstract}")


def text_phrases(text: str) -> set[str]:
    out: set[str] = set()
    for clause in CLAUSE_RE.split(text.lower()):
        run: list[str] = []
        for word in WORD_RE.findall(clause) + [""]:
            if word and len(word) > 2 and not breaks(word):
                run.append(word)
                continue
            out.update(_ngrams(run))
            run = []
    return out


def breaks(word: str) -> bool:
    """Whether a word ends a phrase (is never part of a theme's name)."""
    return (word in STOPWORDS or word in BREAKS
            or (ADVERB_RE.match(word) is not None and word not in NOT_ADVERBS))


def _ngrams(run: list[str]) -> set[str]:
    """Phrases of 1..MAX_WORDS consecutive words of a run, but not those of generic nouns only
    ("learning", "data analysis")."""
    out = set()
    for size in range(1, MAX_WORDS + 1):
        for i in range(len(run) - size + 1):
            words = run[i:i + size]
            if all(w in PHRASE_NOUNS for w in words):
                continue
            out.add(" ".join(words))
    return out


@dataclass
class ThemeWords:
    """A theme's phrases: for each, the papers using it by their row among the `read` papers,
    with the weight of the use (2 in the title, else 1)."""
    uses: dict[str, dict[int, int]]
    read: int

    def share(self, phrase: str) -> float:
        return sum(self.uses.get(phrase, {}).values()) / self.read if self.read else 0.0

    def papers(self) -> Counter:
        """How many papers use each phrase."""
        return Counter({phrase: len(rows) for phrase, rows in self.uses.items()})


def theme_words(groups: Sequence[Sequence[Paper]], seed: int = 0) -> list[ThemeWords]:
    """The phrases of each theme's papers (a seeded sample of at most LABEL_SAMPLE)."""
    rng = np.random.default_rng(seed)
    out = []
    for papers in groups:
        papers = list(papers)
        if len(papers) > LABEL_SAMPLE:
            papers = [papers[i] for i in sorted(rng.choice(len(papers), LABEL_SAMPLE, replace=False))]
        uses: dict[str, dict[int, int]] = {}
        for row, p in enumerate(papers):
            in_title = text_phrases(p.title)
            for phrase in paper_phrases(p):
                uses.setdefault(phrase, {})[row] = 2 if phrase in in_title else 1
        out.append(ThemeWords(uses, len(papers)))
    return out


def distinctive(themes: list[ThemeWords], theme: int) -> dict[str, float]:
    """The theme's phrases used by enough of its papers, each with how distinctive it is of the
    theme (the c-TF-IDF rarity, times a bonus for longer phrases)."""
    words = themes[theme]
    need = max(MIN_PAPERS, math.ceil(MIN_SHARE * words.read))
    out = {}
    for phrase, rows in words.uses.items():
        if len(rows) >= need:
            everywhere = sum(t.share(phrase) for t in themes)
            out[phrase] = math.log1p(1.0 / everywhere) * LONGER_BONUS[phrase.count(" ") + 1]
    return out


def pick_name(themes: list[ThemeWords], theme: int) -> list[str]:
    """Up to NAME_PHRASES phrases that together describe most of the theme's papers: each
    time the phrase whose papers not yet described (by weight) times its distinctiveness
    scores best, the later ones only if they score at least NEXT_PHRASE of the first; each
    as its usual longer form ("generative adversarial" → "generative adversarial networks"),
    never one that repeats a chosen phrase's words ("spiking neurons", not also "spiking")."""
    words = themes[theme]
    candidates = distinctive(themes, theme)
    counts = words.papers()
    described: set[int] = set()
    chosen: list[str] = []
    chosen_stems: set[str] = set()
    first = 0.0
    while candidates and len(chosen) < NAME_PHRASES:
        loss, phrase = min((-_adds(words.uses[p], described) * rarity / words.read, p)
                           for p, rarity in candidates.items())  # ties: alphabetical
        score = -loss
        if score <= 0 or score < NEXT_PHRASE * first:
            break
        first = first or score
        del candidates[phrase]
        phrase = longer_form(phrase, counts)
        phrase_stems = {root(w) for w in phrase.split()}
        if phrase_stems & chosen_stems:
            continue
        chosen.append(phrase)
        chosen_stems |= phrase_stems
        described |= words.uses[phrase].keys()
    return chosen


def _adds(rows: dict[int, int], described: set[int]) -> int:
    """The weight of a phrase's uses in papers no chosen phrase describes yet."""
    return sum(weight for row, weight in rows.items() if row not in described)


def root(word: str) -> str:
    """A word's stem, plural or not ("rnas" and "rna" say one thing; the stemmer keeps both)."""
    word = stem(word)
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def longer_form(phrase: str, counts: Counter) -> str:
    """The most used phrase of up to MAX_WORDS words that holds `phrase` and is used by at
    least EXTEND of the papers using it; else the phrase itself."""
    if phrase.count(" ") + 1 >= MAX_WORDS:
        return phrase
    need = EXTEND * counts[phrase]
    padded = f" {phrase} "
    longer = [(n, other) for other, n in counts.items()
              if n >= need and other != phrase and padded in f" {other} "]
    return max(longer, key=lambda c: (c[0], len(c[1]), c[1]))[1] if longer else phrase


CASE_SAMPLE = 300  # papers of a theme read for how its name's words are written ("LLM", "PCA")


def name_groups(groups: Sequence[Sequence[Paper]], seed: int = 0) -> list[tuple[str, list[str]]]:
    """(name, phrases) of every theme; OTHER for a theme no phrase recurs in."""
    themes = theme_words(groups, seed)
    out = []
    for theme in range(len(groups)):
        phrases = pick_name(themes, theme)
        name = written_name(phrases, groups[theme][:CASE_SAMPLE]) if phrases else OTHER
        out.append((name, phrases))
    return out
