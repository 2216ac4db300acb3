"""Themes of a summary: the relevant papers grouped by meaning, each named by its own words.

Grouping is average-linkage agglomerative clustering of the papers' embeddings (cosine),
stopped when the closest two groups are less similar than the policy's `theme_similarity`;
at most ~40 papers, so the O(n³) loop written here costs microseconds and needs no
scikit-learn or SciPy at run time. A theme is named by the terms that are frequent in its
papers, rare in the corpus, and not shared by the other themes or by the topic itself.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..stats import CorpusStats
from ..text import STOPWORDS, as_written, label, split_sentences, stem, terms
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
including include includes using uses use used within without toward towards among whether
thus yet instead rather many much several often still even given make makes made able
while whereas since where which through between against during upon
theorem theorems prove proves proved proof proofs
mathbb mathcal mathrm mathbf mathfrak operatorname frac emph
""".split())


OTHER = "Other related papers"  # a theme whose papers share no phrase


@dataclass
class Theme:
    name: str
    papers: list[Paper]


def target_groups(n: int, max_groups: int) -> int:
    """About sqrt(n/2) themes: one for a handful of papers, four for forty."""
    return max(1, min(max_groups, round(math.sqrt(n / 2))))


SMALL_SUMMARY = 5  # fewer papers than this read best as one list, without theme headings


def summary_groups(n: int, max_groups: int) -> int:
    """A summary's themes at most: about sqrt(n), so twenty papers on different subjects are
    not forced into three grab-bags (five causal-inference papers still make one theme, as
    long as they are alike: merging goes on while groups are `min_similarity` alike); one for
    a handful of papers."""
    if n < SMALL_SUMMARY:
        return 1
    return max(1, min(max_groups, math.ceil(math.sqrt(n))))


def cluster(vectors: np.ndarray, min_similarity: float, max_groups: int) -> list[list[int]]:
    """Average-linkage agglomerative clustering on cosine similarity, down to about sqrt(n)
    groups (and further while two groups are at least `min_similarity` alike); indices per
    group, groups in order of their first member."""
    groups = [[i] for i in range(len(vectors))]
    if len(vectors) < 2:
        return groups
    target = summary_groups(len(vectors), max_groups)
    unit = vectors / (np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9)
    sim = unit @ unit.T
    while len(groups) > 1:
        best, pair = -2.0, (0, 1)
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                s = float(sim[np.ix_(groups[a], groups[b])].mean())
                if s > best:
                    best, pair = s, (a, b)
        if best < min_similarity and len(groups) <= target:
            break
        a, b = pair
        groups[a] = sorted(groups[a] + groups[b])
        del groups[b]
    return sorted(groups, key=lambda g: g[0])


def phrases(paper: Paper) -> Counter:
    """Content words and two-word phrases of a paper's title and abstract, with their counts
    (the title counts twice: it says what the paper is about)."""
    out: Counter = Counter()
    for sentence in [paper.title, paper.title] + split_sentences(paper.abstract):
        words = [w for w in re.findall(r"[a-z][a-z0-9-]+", sentence.lower())
                 if w not in STOPWORDS and w not in GENERIC and len(w) > 2]
        out.update(words)
        out.update(f"{a} {b}" for a, b in zip(words, words[1:]))
    return out


def theme_name(members: list[Paper], others: list[Paper], topic: str, stats: CorpusStats,
               min_share: float = 0.5) -> str:
    """Two phrases that recur in the theme's papers (in more than `min_share` of them: a phrase
    half of four papers use does not say what the four share), are rare in the corpus and in
    the other themes, and are not the topic's own words."""
    topic_stems = {stem(t) for t in terms(topic)}
    counts = [phrases(p) for p in members]
    inside = Counter(ph for c in counts for ph in c)  # papers using the phrase
    tf = sum(counts, Counter())
    outside = Counter(ph for p in others for ph in phrases(p))
    need = 2 if len(members) == 1 else max(2, math.floor(len(members) * min_share) + 1)
    scored = []
    for phrase, n in inside.items():
        recurs = tf[phrase] if len(members) == 1 else n
        if recurs < need or any(stem(w) in topic_stems for w in phrase.split()):
            continue
        share_out = outside[phrase] / len(others) if others else 0.0
        rarity = min(stats.idf(w) for w in phrase.split()) / stats.max_idf()
        bonus = 1.3 if " " in phrase else 1.0  # "federated learning" reads better than "federated"
        scored.append(((n / len(members) - share_out) * rarity * bonus * math.log1p(tf[phrase]), phrase))
    chosen: list[str] = []
    for _, phrase in sorted(scored, reverse=True):
        if any(stem(w) in {stem(x) for x in c.split()} for c in chosen for w in phrase.split()):
            continue  # "spike, spiking" says one thing twice
        chosen.append(phrase)
        if len(chosen) == 2:
            break
    return written_name(chosen, members) if chosen else OTHER


def written_name(phrases: list[str], papers: Sequence[Paper]) -> str:
    """Lower-cased phrases as a theme's name, each written as its papers write it ("LLM",
    "ReLU")."""
    texts = [f"{p.title}. {p.abstract}" for p in papers]
    return label([as_written(phrase, texts) for phrase in phrases])


def themes(papers: list[Paper], vectors: np.ndarray, topic: str, stats: CorpusStats,
           min_similarity: float, max_themes: int) -> list[Theme]:
    groups = cluster(vectors, min_similarity, max_themes)
    if len(groups) == 1:  # one theme is the topic itself: a name would only restate it
        return [Theme("", list(papers))]
    out = []
    for g in groups:
        members = [papers[i] for i in g]
        others = [papers[i] for i in range(len(papers)) if i not in g]
        out.append(Theme(theme_name(members, others, topic, stats), members))
    # the papers that share no phrase go last, under one heading
    rest = [p for t in out if t.name == OTHER for p in t.papers]
    return [t for t in out if t.name != OTHER] + ([Theme(OTHER, rest)] if rest else [])


# Spherical k-means, shared by the collection map (assistant/map.py) and overviews (plan.py)
KMEANS_FIT_MAX = 20000  # k-means centres are fitted on at most this many papers (seeded sample)
KMEANS_ITERATIONS = 40


def kmeans(vectors: np.ndarray, k: int, seed: int = 0, fit_max: int = KMEANS_FIT_MAX,
           iterations: int = KMEANS_ITERATIONS) -> np.ndarray:
    """Cluster of each row: spherical k-means (unit vectors, cosine), k-means++ seeding,
    centres fitted on a seeded sample of at most fit_max rows, then every row assigned."""
    n = len(vectors)
    if k <= 1 or n <= k:
        return np.zeros(n, dtype=np.int16) if k <= 1 else np.arange(n, dtype=np.int16)
    rng = np.random.default_rng(seed)
    fit = vectors if n <= fit_max else vectors[np.sort(rng.choice(n, fit_max, replace=False))]
    centres = [fit[rng.integers(len(fit))]]
    dist = 1.0 - fit @ centres[0]
    for _ in range(1, k):
        p = np.clip(dist, 0, None) ** 2
        p = p / p.sum() if p.sum() > 0 else np.full(len(fit), 1 / len(fit))
        centres.append(fit[rng.choice(len(fit), p=p)])
        dist = np.minimum(dist, 1.0 - fit @ centres[-1])
    c = np.stack(centres)
    labels = np.full(len(fit), -1)
    for _ in range(iterations):
        new = np.argmax(fit @ c.T, axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            members = fit[labels == j]
            if len(members):
                m = members.sum(axis=0)
                c[j] = m / (np.linalg.norm(m) or 1.0)
    out = np.concatenate([np.argmax(part @ c.T, axis=1) for part in np.array_split(
        vectors, max(1, n // 20000))])
    # themes numbered by size, largest first (stable: ties by first row)
    sizes = np.bincount(out, minlength=k)
    rank = np.empty(k, dtype=np.int64)
    rank[sorted(range(k), key=lambda j: (-sizes[j], j))] = np.arange(k)
    return rank[out].astype(np.int16)


def central(vectors: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """The n rows closest to the (cosine) centre of `rows`."""
    centre = vectors[rows].mean(axis=0)
    return rows[np.argsort(-(vectors[rows] @ centre), kind="stable")[:n]]
