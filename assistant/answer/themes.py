"""Themes of a summary: the relevant papers grouped by meaning, each named by its own words.

Grouping is average-linkage agglomerative clustering of the papers' embeddings (cosine),
stopped when the closest two groups are less similar than the policy's `theme_similarity`;
at most ~40 papers, so the O(n³) loop written here costs microseconds and needs no
scikit-learn or SciPy at run time. A theme is named by the terms that are frequent in its
papers, rare in the corpus, and not shared by the other themes or by the topic itself.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..stats import CorpusStats
from ..text import STOPWORDS, split_sentences, stem, terms
from ..types import Paper

# Words that describe research in general and never name a theme.
GENERIC = set("""
show shows shown paper propose proposed method model models framework results result learning
approach approaches task tasks performance data via across demonstrate demonstrates achieve
existing prior state-of-the-art art novel first also well however significant significantly
experiments experimental evaluate evaluation analysis large small number set sets two three
furthermore moreover specifically additionally particular often challenge challenges problem
problems study studies work recent improve improves improved empirical theoretical provide
provides different various key main new simple general based enables enable allows high low
""".split())


@dataclass
class Theme:
    name: str
    papers: list[Paper]


def cluster(vectors: np.ndarray, min_similarity: float, max_groups: int) -> list[list[int]]:
    """Average-linkage agglomerative clustering on cosine similarity; indices per group,
    groups in order of their first member."""
    groups = [[i] for i in range(len(vectors))]
    if len(vectors) < 2:
        return groups
    unit = vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9)
    sim = unit @ unit.T
    while len(groups) > 1:
        best, pair = -2.0, (0, 1)
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                s = float(sim[np.ix_(groups[a], groups[b])].mean())
                if s > best:
                    best, pair = s, (a, b)
        if best < min_similarity and len(groups) <= max_groups:
            break
        a, b = pair
        groups[a] = sorted(groups[a] + groups[b])
        del groups[b]
    return sorted(groups, key=lambda g: g[0])


def phrases(paper: Paper) -> set[str]:
    """Content words and two-word phrases of a paper's title and abstract."""
    out: set[str] = set()
    for sentence in [paper.title] + split_sentences(paper.abstract):
        words = [w for w in re.findall(r"[a-z][a-z0-9-]+", sentence.lower())
                 if w not in STOPWORDS and w not in GENERIC and len(w) > 2]
        out.update(words)
        out.update(f"{a} {b}" for a, b in zip(words, words[1:]))
    return out


def theme_name(members: list[Paper], others: list[Paper], topic: str, stats: CorpusStats) -> str:
    """Two phrases frequent in the theme, rare in the corpus, absent from the other themes."""
    topic_stems = {stem(t) for t in terms(topic)}
    inside = Counter(p for paper in members for p in phrases(paper))
    outside = Counter(p for paper in others for p in phrases(paper))
    scored = []
    for phrase, count in inside.items():
        if count < min(2, len(members)) or any(stem(w) in topic_stems for w in phrase.split()):
            continue
        share_in = count / len(members)
        share_out = outside[phrase] / len(others) if others else 0.0
        rarity = min(stats.idf(w) for w in phrase.split()) / stats.max_idf()
        bonus = 1.15 if " " in phrase else 1.0  # "federated learning" reads better than "federated"
        scored.append(((share_in - share_out) * rarity * bonus, phrase))
    chosen: list[str] = []
    for _, phrase in sorted(scored, reverse=True):
        if any(phrase in c or c in phrase for c in chosen):
            continue
        chosen.append(phrase)
        if len(chosen) == 2:
            break
    return ", ".join(chosen).capitalize() if chosen else "Other"


def themes(papers: list[Paper], vectors: np.ndarray, topic: str, stats: CorpusStats,
           min_similarity: float, max_themes: int) -> list[Theme]:
    groups = cluster(vectors, min_similarity, max_themes)
    out = []
    for g in groups:
        members = [papers[i] for i in g]
        others = [papers[i] for i in range(len(papers)) if i not in g]
        out.append(Theme(theme_name(members, others, topic, stats), members))
    return out
