"""Names for the map's themes: the phrases that set each theme apart from the others.

    name_groups([[paper, ...], [paper, ...], ...])   # [("Federated learning, backdoor attacks",
                                                     #   ["federated learning", "backdoor attacks"]), ...]

Class-based TF-IDF (c-TF-IDF) over phrases of one to three words from the papers' titles and
abstracts: a phrase scores by the share of the theme's papers using it (a use in a title counts
twice: a title says what the paper is about), times how rare it is across the themes
(log(1 + 1 / the sum of its shares over all themes)), so "federated learning"
names the theme where a third of the papers use it and few elsewhere do, while "neural networks",
used everywhere, names none. Phrases are runs of words between stop words, generic research
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

from .answer.themes import GENERIC
from .text import STOPWORDS, stem
from .types import Paper

LABEL_SAMPLE = 300  # papers read per theme (seeded sample)
MAX_WORDS = 3  # longest phrase
MIN_SHARE = 0.08  # a name is used by at least this share of the theme's papers…
MIN_PAPERS = 2  # …and by at least this many
NAME_PHRASES = 2  # phrases in a name
SECOND_PHRASE = 0.4  # the second phrase is kept if it scores at least this share of the first
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

CLAUSE_RE = re.compile(r"[^a-z0-9\s-]+|\s-\s|--")  # punctuation ends a phrase
WORD_RE = re.compile(r"[a-z][a-z0-9-]*[a-z0-9]")


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
    """A theme's phrases: `papers` using each, its `weight` (uses in titles count again), and
    the number of papers `read`."""
    papers: Counter
    weight: Counter
    read: int

    def share(self, phrase: str) -> float:
        return self.weight[phrase] / self.read if self.read else 0.0


def theme_words(groups: Sequence[Sequence[Paper]], seed: int = 0) -> list[ThemeWords]:
    """The phrases of each theme's papers (a seeded sample of at most LABEL_SAMPLE)."""
    rng = np.random.default_rng(seed)
    out = []
    for papers in groups:
        papers = list(papers)
        if len(papers) > LABEL_SAMPLE:
            papers = [papers[i] for i in sorted(rng.choice(len(papers), LABEL_SAMPLE, replace=False))]
        used: Counter = Counter()
        in_titles: Counter = Counter()
        for p in papers:
            used.update(paper_phrases(p))
            in_titles.update(text_phrases(p.title))
        out.append(ThemeWords(used, used + in_titles, len(papers)))
    return out


def scored_phrases(themes: list[ThemeWords], theme: int) -> list[tuple[float, str]]:
    """c-TF-IDF of the theme's phrases used by enough of its papers, best first."""
    words = themes[theme]
    need = max(MIN_PAPERS, math.ceil(MIN_SHARE * words.read))
    scored = []
    for phrase, n in words.papers.items():
        if n < need:
            continue
        everywhere = sum(t.share(phrase) for t in themes)
        weight = LONGER_BONUS[phrase.count(" ") + 1]
        scored.append((words.share(phrase) * math.log1p(1.0 / everywhere) * weight, phrase))
    return sorted(scored, key=lambda s: (-s[0], s[1]))


def pick_name(scored: list[tuple[float, str]], counts: Counter) -> list[str]:
    """Up to NAME_PHRASES phrases that say different things ("spiking neurons", not also
    "spiking"), the later ones only if they score near the first; each as its usual longer
    form ("generative adversarial" → "generative adversarial networks")."""
    chosen: list[str] = []
    chosen_stems: set[str] = set()
    for score, phrase in scored:
        if chosen and score < SECOND_PHRASE * scored[0][0]:
            break
        phrase = longer_form(phrase, counts)
        phrase_stems = {root(w) for w in phrase.split()}
        if phrase_stems & chosen_stems:
            continue
        chosen.append(phrase)
        chosen_stems |= phrase_stems
        if len(chosen) == NAME_PHRASES:
            break
    return chosen


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


def name_groups(groups: Sequence[Sequence[Paper]], seed: int = 0) -> list[tuple[str, list[str]]]:
    """(name, phrases) of every theme; OTHER for a theme no phrase recurs in."""
    themes = theme_words(groups, seed)
    out = []
    for theme in range(len(groups)):
        phrases = pick_name(scored_phrases(themes, theme), themes[theme].papers)
        out.append((", ".join(phrases).capitalize(), phrases) if phrases else (OTHER, []))
    return out
