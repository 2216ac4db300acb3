"""The citation check: what counts as a claim, contrasts checked side by side, the policy's numbers."""
from __future__ import annotations

import pytest

from assistant.answer.evidence import Source
from assistant.answer.ground import Grounder, clauses, makes_claim
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
