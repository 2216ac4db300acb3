"""The citation check: what counts as a claim, contrasts checked side by side, the policy's numbers."""
from __future__ import annotations

import pytest

from assistant.answer.evidence import Source, evidence_for, own_sentences
from assistant.answer.compose import aspect_sentences
from assistant.answer.cases import uncovered_figures
from assistant.answer.ground import Grounder, clauses, dropped_hedges, makes_claim
from assistant.config import CitationPolicy, load_settings
from assistant.types import Paper


def _source(n, abstract, title="A paper"):
    return Source(n, Paper(paper_id=str(n), title=title, authors=["Ada Lovelace"], abstract=abstract), [])


TOP_W = _source(1, "Top-W is a geometry-aware truncation rule for decoding. It keeps the tokens whose "
                   "embeddings lie close to the likely ones, measured by a Wasserstein distance.", "Top-W")
VS = _source(2, "Verbalized Sampling is a training-free prompting strategy. It asks the model to verbalize "
                "a probability distribution over responses, which mitigates mode collapse.", "Verbalized Sampling")
SOURCES = {1: TOP_W, 2: VS}


@pytest.mark.parametrize("sentence, parts", [
    ("Top-W truncates by geometry [1], while VS prompts for a distribution [2].",
     ["Top-W truncates by geometry [1]", "VS prompts for a distribution [2]."]),
    ("Top-W truncates; VS prompts.", ["Top-W truncates", "VS prompts."]),
    ("Top-W is fast, but VS needs no training.", ["Top-W is fast", "VS needs no training."]),
    ("[1] Whereas the first truncates, the second prompts.", ["[1] the first truncates, the second prompts."]),
    ("Top-W truncates, while [2].", ["Top-W truncates [2]."]),
    ("Top-W keeps tokens close to the likely ones [1].", ["Top-W keeps tokens close to the likely ones [1]."]),
])
def test_a_contrast_is_cut_into_its_claims(sentence, parts):
    assert clauses(sentence) == parts


@pytest.mark.parametrize("claim, says_something", [
    ("2.", False), ("[1]", False), ("3. [2]", False), ("Top-W truncates.", True), ("Yes.", True),
])
def test_a_list_number_or_a_bare_marker_is_no_claim(claim, says_something):
    assert makes_claim(claim) is says_something


def test_each_side_of_a_contrast_needs_its_own_paper(seed_assistant):
    grounder = Grounder(seed_assistant.engine.embed)
    true_both = ("Top-W is a geometry-aware truncation rule for decoding [1], while Verbalized Sampling "
                 "is a training-free prompting strategy [2].")
    v = grounder.verdict(true_both, SOURCES)
    assert v.kept and v.markers == [1, 2]
    # the true first half no longer carries an invented second half
    invented = ("Top-W is a geometry-aware truncation rule for decoding [1], while Verbalized Sampling "
                "trains a reward model on ten thousand annotated chess games [2].")
    assert grounder.verdict(invented, SOURCES).why == "unsupported"


def test_answer_framing_words_need_no_source(seed_assistant):
    # "Yes, there is work on …" restating the question: "yes" and "work" are not content
    question_words = frozenset({"decod", "method", "geometri", "token", "embed", "truncat"})
    s = Grounder(seed_assistant.engine.embed).support(
        "Yes, there is work on a decoding method that uses token embedding geometry.", TOP_W, question_words)
    assert s.content == 1.0


def test_a_figure_the_source_lacks_is_never_backed(seed_assistant):
    grounder = Grounder(seed_assistant.engine.embed)
    src = {1: _source(1, "Top-W improves accuracy by up to 33.7% over min-p sampling.")}
    assert grounder.verdict("Top-W improves accuracy by up to 33.7% [1].", src).markers == [1]
    assert grounder.verdict("Top-W improves accuracy by up to 91.2% [1].", src).why == "unsupported"


def test_a_case_the_source_does_not_treat_is_never_backed(seed_assistant):
    """A dimension, a degree or a count written in words is a figure too: the claim must state
    the source's, not the question's (arXiv math near-miss round 22 was answered "Yes, … on a
    complete four-dimensional manifold … [2]" from this paper on 3-manifolds)."""
    grounder = Grounder(seed_assistant.engine.embed)
    src = {1: _source(1, "It is shown that the integral of the scalar curvature on a geodesic ball of radius "
                         "$R$ in a three-dimensional complete manifold with nonnegative Ricci curvature is "
                         "bounded above by $8πR$ asymptotically for large $R$.",
                      "Sharp integral bound of scalar curvature on $3$-manifolds")}
    restated = ("The integral of the scalar curvature on a geodesic ball in a three-dimensional complete "
                "manifold with nonnegative Ricci curvature is bounded above asymptotically [1].")
    assert grounder.verdict(restated, src).markers == [1]
    for other in ("four-dimensional", "4-dimensional", "higher-dimensional, at least four-dimensional"):
        claim = restated.replace("three-dimensional", other)
        assert grounder.verdict(claim, src).why == "unsupported", claim


@pytest.mark.parametrize("claim, source, uncovered", [
    ("It treats 3-folds.", "A bound on three-dimensional manifolds.", []),
    ("It treats 4-folds.", "A bound on three-dimensional manifolds.", ["dimension"]),
    ("It holds in dimension 4.", "We prove it in every dimension d ≥ 3.", []),
    ("It holds in every dimension d ≥ 4.", "We prove it in dimension 4.", ["dimension"]),
    ("Sextic hypersurfaces are factorial.", "Nodal hypersurfaces of degree 6 are factorial.", []),
    ("Septic hypersurfaces are factorial.", "Nodal hypersurfaces of degree 6 are factorial.", ["degree"]),
    ("A game with three players.", "A game between players.", ["players"]),
    ("Top-W improves accuracy.", "Top-W improves accuracy by 33.7%.", []),
])
def test_the_figures_a_claim_states_must_be_its_sources(claim, source, uncovered):
    assert uncovered_figures(claim, source) == uncovered


def test_the_policy_numbers_are_settings(monkeypatch, seed_assistant):
    monkeypatch.setenv("PAPER_ASSISTANT_CITATION__MIN_CONTENT", "1.0")
    settings = load_settings()
    assert settings.citation.min_content == 1.0
    strict = Grounder(seed_assistant.engine.embed, settings.citation)
    loose = Grounder(seed_assistant.engine.embed, CitationPolicy(min_content=0.0))
    claim = "Top-W keeps tokens near the likely ones, a decoding idea inspired by optimal transport [1]."
    assert loose.verdict(claim, SOURCES).kept and not strict.verdict(claim, SOURCES).kept


def test_a_claim_is_checked_against_the_sentences_the_model_was_given(seed_assistant):
    """A claim from a sentence the model was never shown is not backed by the paper: it can
    only have come from elsewhere (another paper, or the model itself)."""
    grounder = Grounder(seed_assistant.engine.embed)
    first, second = TOP_W.paper.abstract.split(". ", 1)
    claim = "Top-W keeps the tokens whose embeddings lie close to the likely ones [1]."
    whole = grounder.check(claim, [TOP_W])
    given_other = grounder.check(claim, [Source(1, TOP_W.paper, [first + "."])])
    given_it = grounder.check(claim, [Source(1, TOP_W.paper, [second])])
    assert "[1]" in whole.text and "[1]" in given_it.text
    assert given_other.text == "" and given_other.unsupported == 1
    assert given_it.kept[0].evidence[1] == second  # what the claim restates


def test_a_claim_stitched_from_several_sentences_needs_them_all_within_its_best_few(seed_assistant):
    abstract = ("We study graphical models of gene expression. Our estimator is consistent. "
                "Experiments cover three cancer types. Training from scratch is avoided by "
                "continual training.")
    src = _source(1, abstract)
    stitched = "The paper studies graphical models of gene expression with continual training from scratch [1]."
    strict = Grounder(seed_assistant.engine.embed, CitationPolicy(content_sentences=1)).check(stitched, [src])
    loose = Grounder(seed_assistant.engine.embed, CitationPolicy(content_sentences=0)).check(stitched, [src])
    assert strict.text == "" and "[1]" in loose.text


def test_a_causal_link_the_lines_do_not_state_is_not_backed(seed_assistant):
    """Two true lines joined by "because" make a third claim, the link, which neither states."""
    lines = ["We argue for world models as an intermediary between agents and the real world.",
             "Reinforcement learning agents reach superhuman performance in games."]
    src = {1: Source(1, Paper(paper_id="1", title="World models", abstract=" ".join(lines)), lines)}
    grounder = Grounder(seed_assistant.engine.embed)
    joined = ("We argue for world models as an intermediary between agents and the real world because "
              "reinforcement learning agents reach superhuman performance in games [1].")
    assert grounder.verdict(joined, src).why == "unsupported"
    assert grounder.verdict("Reinforcement learning agents reach superhuman performance in games [1].", src).kept
    stated = {1: Source(1, src[1].paper, ["Noisy labels lead to overconfident models."])}
    assert grounder.verdict("Noisy labels lead to overconfident models [1].", stated).kept


def test_the_prompts_own_labels_copied_back_are_no_claim(seed_assistant):
    grounder = Grounder(seed_assistant.engine.embed)
    echo = "Title: Top-W Record: Ada Lovelace [1]."
    assert grounder.verdict(echo, SOURCES).why == "filler"
    assert grounder.verdict("Top-W is a geometry-aware truncation rule for decoding [1].", SOURCES).kept


def test_a_claim_that_drops_its_lines_hedge_is_not_backed(seed_assistant):
    """"… which can explain why …" restated as "… which explains why …" claims more than the line."""
    line = ("These sub-networks are uncorrelated, which can explain why a neural network is "
            "resistant to overfitting.")
    src = {1: Source(1, Paper(paper_id="1", title="Small data", abstract=line), [line])}
    grounder = Grounder(seed_assistant.engine.embed)
    sure = "The sub-networks are uncorrelated, which explains why a neural network is resistant to overfitting [1]."
    hedged = "The sub-networks are uncorrelated, which can explain why a neural network resists overfitting [1]."
    assert grounder.verdict(sure, src).why == "unsupported"
    assert grounder.verdict(hedged, src).kept
    # a hedge on a word the claim does not restate limits nothing the claim says
    other = "The sub-networks are uncorrelated [1]."
    assert grounder.verdict(other, src).kept


@pytest.mark.parametrize("claim, line, dropped", [
    ("The strategy in a subgame depends on other subgames.",
     "The optimal strategy in a subgame may depend on the strategy in other subgames.", ["depend"]),
    ("Language models exhibit sycophancy after post-training.",
     "Large language models often exhibit increased sycophancy after post-training.", ["exhibit"]),
    ("Language models often exhibit sycophancy.", "Large language models often exhibit sycophancy.", []),
    ("The results suggest the method scales.", "The method could scale to large graphs.", []),
    ("The method is fast.", "The method is fast and may generalise.", []),
])
def test_dropped_hedges(claim, line, dropped):
    assert dropped_hedges(claim, line) == dropped


SOFT_SHARING = [
    "The success of deep learning created the desire to run networks on mobile devices.",
    "Recent work by Han et al. (2016) propose a pipeline of retraining, pruning and quantization.",
    "In this paper, we show that competitive compression rates can be achieved by using a version of "
    "soft weight-sharing (Nowlan & Hinton, 1991).",
    "Our method achieves both quantization and pruning in one simple retraining procedure.",
    "Earlier pipelines (Han et al., 2016) needed three stages.",
    "This point of view also exposes the relation between compression and the MDL principle.",
]


def test_a_papers_own_lines_leave_out_its_field_and_earlier_work():
    """The opening lines set out the field; a line citing others without "we" is their work."""
    assert own_sentences(SOFT_SHARING) == [2, 3, 5]
    # an abstract never in the authors' voice is all its own
    third_person = ["Graph networks are popular.", "A pooling layer is described and evaluated."]
    assert own_sentences(third_person) == [0, 1]
    assert own_sentences(["Dropout is studied.", "A new schedule is proposed."]) == [1]
    # lines a later line answers ("To mitigate, we …") state the problem: the method that fails
    # is the earlier one, though the abstract opened in the authors' voice
    spectral = ["We address causal effect estimation with instruments.",
                "An established approach uses learned spectral features.",
                "Consequently, the method can fail when the causal function is poorly represented.",
                "To mitigate, we introduce Augmented Spectral Feature Learning.",
                "It learns features outcome-aware.",
                "To further speed it up, we use a low-rank solver."]
    assert own_sentences(spectral) == [0, 3, 4, 5]


def test_a_summarys_evidence_is_from_the_papers_own_lines(seed_assistant):
    paper = Paper(paper_id="s", title="Soft weight-sharing", abstract=" ".join(SOFT_SHARING))
    embed = seed_assistant.engine.embed
    question = "a pipeline of retraining, pruning and quantization for compression"
    assert "Han et al." in " ".join(evidence_for(paper, [question], embed, 1))
    own = evidence_for(paper, [question], embed, 1, own=True)
    assert len(own) == 1 and own[0] in SOFT_SHARING[2:4]


def test_a_claim_under_another_papers_marker_than_the_one_it_names_is_dropped(seed_assistant):
    """"Verbalized Sampling is a truncation rule [1]": the check would re-point the line to Top-W's
    marker, and the sentence would still say it of Verbalized Sampling."""
    grounder = Grounder(seed_assistant.engine.embed)
    swapped = "Verbalized Sampling is a geometry-aware truncation rule for decoding [2]."
    assert grounder.verdict(swapped, SOURCES).why == "names another paper"
    assert grounder.verdict("Top-W is a geometry-aware truncation rule for decoding [1].", SOURCES).kept
    assert grounder.verdict("It is a geometry-aware truncation rule for decoding [1].", SOURCES).kept


DAISI_LIKE = [
    "Data assimilation is a cornerstone of scientific applications.",
    "Classical methods, such as the ensemble Kalman filter, rely on Gaussian approximations that break for complex dynamics.",
    "To address this limitation, we introduce DAISI, a filtering algorithm built on generative models.",
    "Experiments on challenging nonlinear systems show that DAISI achieves accurate filtering.",
]


def test_a_papers_approach_is_its_own_line_and_the_problem_the_line_before():
    # "To address this limitation, we introduce …" is what the paper does, though it also names a
    # limitation; the problem row then takes the line before it, and no row says what the paper
    # does with a line on earlier work (the listing's gist was "Classical methods … rely on …")
    paper = Paper(paper_id="d", title="DAISI", abstract=" ".join(DAISI_LIKE))
    aspects = aspect_sentences(paper)
    assert aspects["Approach"] == DAISI_LIKE[2]
    assert aspects["Problem"] == DAISI_LIKE[1]
    assert DAISI_LIKE[3] in (aspects["Evidence"], aspects["Key result"])
    assert DAISI_LIKE[0] not in aspects.values() and DAISI_LIKE[1] != aspects["Evidence"]
