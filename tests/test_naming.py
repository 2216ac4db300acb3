"""Does a phrase name a paper (assistant/answer/naming.py)."""
from types import SimpleNamespace

import pytest

from assistant.answer.naming import (dated, defines, holds_title, introduces, is_name, named_in_abstract,
                                     phrase_words, title_has_all, writes_name_of, written_as_name)
from assistant.types import Paper


def paper(pid: str, abstract: str, title: str = "A title") -> Paper:
    return Paper(paper_id=pid, title=title, authors=[], abstract=abstract)


@pytest.mark.parametrize("abstract", [
    "Low-dimensional embeddings help. Here we present GraphSAGE, a general inductive framework.",
    "We propose a new algorithm called PETS that combines ensembles with sampling.",
    "TransE models relations as translations in the embedding space.",
    "We introduce a simple, efficient method, which we call DualGraph, for agents.",
])
def test_an_abstract_that_introduces_the_name(abstract):
    name = next(w.strip(",.") for w in abstract.split() if sum(c.isupper() for c in w) >= 2)
    assert introduces(name, paper("p", abstract))


@pytest.mark.parametrize("name,abstract,presents", [
    ("VQ-VAE", "Our model, the Vector Quantised-Variational AutoEncoder (VQ-VAE), differs from VAEs.", True),
    # the name is what the work is for or built on
    ("ResNet", "Here we propose a weak learning condition and prove a boosting theory for ResNet.", False),
    ("VGG", "We apply our algorithm to train large-scale convolutional neural networks, such as VGG.", False),
    ("DQN", "Our algorithm combines DQN with a deterministic policy gradient.", False),
    # … unless it is in the name's own long form
    ("PETS", "We propose a new algorithm called probabilistic ensembles with trajectory sampling (PETS).", True),
    ("GAT", "We present graph attention networks (GATs), novel neural network architectures.", True),
    ("Gumbel-Softmax", "We show that our Gumbel-Softmax estimator outperforms gradient estimators.", True),
    # the verb after another one: what it goes beyond is not presented
    ("TrajGRU", "Specifically, we go beyond ConvLSTM and propose the Trajectory GRU (TrajGRU) model.", True),
    ("ConvLSTM", "Specifically, we go beyond ConvLSTM and propose the Trajectory GRU (TrajGRU) model.", False),
    # running or beating the name is not presenting it
    ("PPO", "This work explores reinforcement-learning methods (the A2C and PPO algorithms).", False),
    ("TRPO", "Q-Prop provides substantial gains over trust region policy optimization (TRPO).", False),
    ("TRPO", "Trust region methods, such as TRPO, are often used to stabilize policy optimization.", False),
])
def test_an_abstract_presents_the_name_as_its_own_or_only_uses_it(name, abstract, presents):
    assert introduces(name, paper("p", abstract)) is presents


@pytest.mark.parametrize("abstract", [
    "We compare against GraphSAGE and GCN baselines on three datasets.",
    "Unlike PETS, our method needs no ensemble.",
    "We present a benchmark; baselines include TransE-style models.",
])
def test_an_abstract_that_only_uses_the_name(abstract):
    assert not introduces(next(n for n in ("GraphSAGE", "PETS", "TransE") if n in abstract),
                          paper("p", abstract))


def test_a_named_side_is_the_paper_that_introduces_it_not_the_first_that_mentions_it():
    judged = [SimpleNamespace(paper=paper("uses", "We compare against GraphSAGE on Reddit.")),
              SimpleNamespace(paper=paper("other", "Graph kernels for molecules.")),
              SimpleNamespace(paper=paper("is", "Here we present GraphSAGE, an inductive framework."))]
    assert [j.paper.paper_id for j in named_in_abstract("GraphSAGE", judged)] == ["is"]
    # a paper that only uses it is not that side ("PPO vs TRPO": no paper here is either)
    assert named_in_abstract("GraphSAGE", judged[:2]) == []


def test_a_name_is_matched_as_written():
    judged = [SimpleNamespace(paper=paper("cats", "Images of pets and their owners.")),
              SimpleNamespace(paper=paper("pets", "We propose PETS, a planner with ensembles."))]
    assert [j.paper.paper_id for j in named_in_abstract("PETS", judged)] == ["pets"]


def test_descriptions_are_not_names():
    assert is_name("GraphSAGE") and is_name("EBGAN") and is_name("Top-W")
    assert not is_name("the paper that unrolls the discriminator")
    assert not is_name("graph attention")


@pytest.mark.parametrize("side,title,names", [
    ("Bayesian MAML", "Bayesian Model-Agnostic Meta-Learning", True),
    ("probabilistic MAML (both NeurIPS 2018)", "Probabilistic Model-Agnostic Meta-Learning", True),
    ("NAS with RL", "Neural Architecture Search with Reinforcement Learning", True),
    ("Deep GPs", "Deep Gaussian Processes", True),
    # the title head has words the side lacks, or the side words the head lacks
    ("Bayesian MAML", "Bayesian Model-Agnostic Meta-Learning for Few-Shot Tasks Everywhere", False),
    ("deep RL", "Deep Reinforcement Learning that Matters", False),
    ("Bayesian MAML", "Probabilistic Model-Agnostic Meta-Learning", False),
])
def test_a_side_written_with_acronyms_names_the_title_it_spells(side, title, names):
    from assistant.answer.naming import title_names
    from assistant.types import Paper

    assert title_names(side, Paper(paper_id="p", title=title, abstract="")) is names


def test_a_side_that_writes_the_whole_title_with_a_remark_names_it():
    pate = Paper(paper_id="p", title="Scalable Private Learning with PATE", abstract="")
    assert holds_title("the 'Scalable Private Learning with PATE' follow-up", pate)
    assert not holds_title("Private Learning", pate)  # part of a title is not the title
    short = Paper(paper_id="s", title="Deep Sets", abstract="")
    assert not holds_title("deep sets of features", short)  # a title this short is too common a phrase


@pytest.mark.parametrize("words,title,holds", [
    (["deep", "generative", "replay"], "Continual Learning with Deep Generative Replay", True),
    (["semi", "supervised", "graph", "convolutional", "networks"],
     "Semi-Supervised Classification with Graph Convolutional Networks", True),
    (["semi", "supervised", "graph", "convolutional", "networks"],
     "Stochastic Training of Graph Convolutional Networks", False),
    (["replay"], "Continual Learning with Deep Generative Replay", False),  # one word is a topic
])
def test_a_title_that_holds_every_word_of_a_side(words, title, holds):
    assert title_has_all(words, Paper(paper_id="p", title=title, abstract="")) is holds


@pytest.mark.parametrize("side,as_name", [
    ("Deep Generative Replay", True), ("semi-supervised GCN", True), ("ENAS", True),
    ("the paper on deep generative replay", False), ("generative replay for continual learning", False),
])
def test_a_side_written_as_a_name(side, as_name):
    assert written_as_name(side) is as_name


def test_a_year_or_venue_in_a_side_dates_the_paper():
    old = Paper(paper_id="a", title="Equality of Opportunity in Supervised Learning", abstract="", year=2016,
                venue="NeurIPS")
    new = Paper(paper_id="b", title="Equality of Opportunity in Classification", abstract="", year=2018,
                venue="ICLR")
    side = "Equality of opportunity (the 2016 post-processing criterion paper)"
    assert dated(side, old) and not dated(side, new)
    assert dated("the ICLR one", new) and not dated("the ICLR one", old)
    assert not dated("Equality of opportunity", old)


def test_of_the_papers_that_present_a_name_the_one_that_spells_it_out_is_told_apart():
    # both present the name, in the judge's order; `defines` tells the one that spells it out,
    # which the planner's `_named` takes before the others
    uses = paper("uses", "Here we present our ENAS controller, searching cells for language tasks.")
    spells = paper("spells", "We propose Efficient Neural Architecture Search (ENAS), a faster approach.")
    judged = [SimpleNamespace(paper=uses), SimpleNamespace(paper=spells)]
    assert defines("ENAS", spells) and not defines("ENAS", uses)
    assert [j.paper.paper_id for j in named_in_abstract("ENAS", judged)] == ["uses", "spells"]
    # spelling an acronym out to compare with it is not presenting it
    compares = paper("c", "Q-Prop provides substantial gains over trust region policy optimization (TRPO).")
    assert defines("TRPO", compares) and named_in_abstract("TRPO", [SimpleNamespace(paper=compares)]) == []


@pytest.mark.parametrize("message,title,writes", [
    # a title's head, as a run of the message's words, in any case
    ("what does glow add on top of real nvp?", "Glow: Generative Flow with Invertible 1x1 Convolutions", True),
    ("does the 'train longer, generalize better' paper agree?",
     "Train longer, generalize better: closing the generalization gap", True),
    # every content word of a short title, plurals aside
    ("is the matrix capsules EM routing paper just the capsule net?", "Matrix capsules with EM routing", True),
    ("is it the dynamic-routing capsule net with EM?", "Dynamic Routing Between Capsules", True),
    # a one-word head that many abstracts write is the field's word, not the paper's name
    ("does attention help here?", "Attention: a survey of mechanisms", False),
    # a long title, or a head the message does not write whole
    ("what does glow do?", "Glowing embers: a study of heat", False),
    ("semi-supervised classification with graphs",
     "Semi-Supervised Classification with Graph Convolutional Networks", False),
])
def test_a_message_writes_the_name_of_a_paper(message, title, writes):
    rare = lambda word: word != "attention"  # noqa: E731 - "attention": written in many abstracts
    assert writes_name_of(phrase_words(message), paper("p", "An abstract.", title=title), rare) is writes
