"""Summary themes: clustering by embedding similarity and names from distinctive terms."""
from __future__ import annotations

import numpy as np

from assistant.answer.themes import summary_groups, cluster, target_groups, theme_name, themes
from assistant.stats import CorpusStats
from assistant.types import Paper


def _blobs(sizes, dim=12, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.eye(dim)[: len(sizes)]
    rows, labels = [], []
    for k, n in enumerate(sizes):
        rows += [centres[k] + 0.05 * rng.normal(size=dim) for _ in range(n)]
        labels += [k] * n
    order = rng.permutation(len(rows))
    return np.array(rows)[order], [labels[i] for i in order]


def test_cluster_finds_the_groups_and_keeps_first_member_order():
    v, labels = _blobs([6, 6, 6])
    groups = cluster(v, min_similarity=0.9, max_groups=6)
    assert sorted(sorted(labels[i] for i in g) for g in groups) == [[0] * 6, [1] * 6, [2] * 6]
    assert [g[0] for g in groups] == sorted(g[0] for g in groups)


def test_cluster_a_handful_of_papers_is_one_theme_unless_they_differ_a_lot():
    assert len(cluster(np.eye(4), min_similarity=0.9, max_groups=6)) == 1  # a handful: one list
    assert len(cluster(np.eye(9), min_similarity=0.9, max_groups=6)) == 3  # ceil(sqrt(9))
    alike = np.eye(9) * 0.2 + 1.0  # nine nearly parallel vectors
    assert len(cluster(alike, min_similarity=0.9, max_groups=6)) == 1
    assert summary_groups(20, 6) == 5 and summary_groups(2, 6) == 1 and summary_groups(400, 6) == 6
    assert target_groups(40, 6) == 4 and target_groups(3, 6) == 1 and target_groups(400, 6) == 6


def test_twenty_papers_on_different_subjects_are_not_forced_into_three_themes(seed_assistant):
    """The bundled corpus: its four causal-inference papers make a theme of their own."""
    papers = list(seed_assistant.store.papers().values())
    vectors = seed_assistant.store.paper_vectors([p.paper_id for p in papers])
    groups = cluster(vectors, min_similarity=0.45, max_groups=6)
    causal = {i for i, p in enumerate(papers) if "causal" in (p.title + p.abstract[:300]).lower()}
    assert len(groups) >= 5
    assert any(set(g) <= causal and len(g) >= 3 for g in groups)


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


def test_a_theme_name_writes_its_words_as_the_papers_do():
    from assistant.text import as_written, label

    texts = ["LLM agents plan with tools.", "Agents built on an LLM forget.", "Causal Inference With LLM judges"]
    assert as_written("llm", texts) == "LLM"
    assert as_written("causal", texts + ["causal graphs and causal effects"]) == "causal"  # a title's capital is no name's
    assert as_written("relu", ["ReLU units", "the ReLU", "relu"]) == "ReLU"
    assert as_written("unseen", texts) == "unseen"
    assert label(["agent", "LLM"]) == "Agent, LLM" and label(["pca", "matrix"]) == "Pca, matrix"


def test_papers_that_share_no_phrase_are_other_related_papers_last():
    """Four papers of which each phrase names two (a grab-bag the clustering had to make: the
    seed overview once called one "Built, scalable") are named as what they are, and go last."""
    from assistant.answer.themes import OTHER

    bag = [_p("b1", "A dataset built with a renderer for relighting faces."),
           _p("b2", "A scalable filtering algorithm built on flow models."),
           _p("b3", "Scalable tessellations inside probabilistic circuits."),
           _p("b4", "Spatial gene expression of cells from tissue images.")]
    causal = [_p(f"c{i}", f"Causal effects estimated from confounded observational data, study {i}.")
              for i in range(4)]
    stats = CorpusStats.build(bag + causal)
    assert theme_name(bag, causal, "", stats) == OTHER
    assert "causal" in theme_name(causal, bag, "", stats).lower()
    v = np.zeros((8, 4))
    v[:4, 0], v[4:, 1] = 1.0, 1.0  # the bag first in the papers' order
    out = themes(bag + causal, v, "", stats, 0.5, 2)
    assert [t.name == OTHER for t in out] == [False, True] and len(out[1].papers) == 4
