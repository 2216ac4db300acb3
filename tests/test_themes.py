"""Summary themes: clustering by embedding similarity and names from distinctive terms."""
from __future__ import annotations

import numpy as np

from assistant.answer.themes import cluster, theme_name, themes
from assistant.stats import CorpusStats
from assistant.types import Paper


def test_cluster_groups_similar_vectors_and_keeps_first_member_order():
    v = np.array([[1, 0, 0], [0, 1, 0], [0.95, 0.05, 0], [0.05, 0.97, 0], [0, 0, 1]], dtype=float)
    assert cluster(v, min_similarity=0.8, max_groups=6) == [[0, 2], [1, 3], [4]]


def test_cluster_merges_down_to_max_groups_even_when_dissimilar():
    v = np.eye(4)
    assert len(cluster(v, min_similarity=0.9, max_groups=2)) == 2


def _p(pid, abstract):
    return Paper(paper_id=pid, title=pid, abstract=abstract)


def test_theme_names_come_from_the_theme_not_the_topic():
    gan = [_p("g1", "Generative adversarial networks suffer mode collapse; we stabilise the discriminator."),
           _p("g2", "We train generative adversarial networks with a spectral discriminator penalty.")]
    rl = [_p("r1", "Policy gradient reinforcement learning with variance reduction for robots."),
          _p("r2", "Reinforcement learning agents with policy gradient estimators in sparse rewards.")]
    stats = CorpusStats.build(gan + rl + [_p(f"x{i}", "Unrelated text about graphs and proteins.") for i in range(6)])
    name = theme_name(gan, rl, "deep learning", stats).lower()
    assert "discriminator" in name or "generative adversarial" in name
    assert "policy" not in name
    assert "policy gradient" in theme_name(rl, gan, "deep learning", stats).lower()
    # the topic's own words never name a theme
    assert "adversarial" not in theme_name(gan, rl, "adversarial networks", stats).lower()


def test_themes_returns_every_paper_once():
    papers = [_p(str(i), f"text {i}") for i in range(5)]
    v = np.random.default_rng(0).normal(size=(5, 8))
    out = themes(papers, v, "x", CorpusStats.build(papers), 0.5, 3)
    assert sorted(p.paper_id for t in out for p in t.papers) == [str(i) for i in range(5)]
    assert len(out) <= 3
