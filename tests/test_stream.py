"""Checked streaming: sentences are released only once complete and checked, renumbered as shown."""
from __future__ import annotations

import numpy as np
import pytest

from assistant.answer.evidence import Source
from assistant.answer.ground import Grounder
from assistant.answer.stream import CheckedProse, Numbering


@pytest.fixture()
def pa(seed_assistant):
    return seed_assistant


def _sources(pa, *first_authors):
    by_author = {p.authors[0]: p for p in pa.store.papers().values()}
    return [Source(i + 1, by_author[a], []) for i, a in enumerate(first_authors)]


def test_numbering_follows_first_appearance_and_drops_unknown_numbers():
    numbering = Numbering([Source(1, None, []), Source(2, None, []), Source(3, None, [])])
    assert numbering.apply("B is shown [3]. A too [1, 3]. Ghost [9].") == "B is shown [1]. A too [2][1]. Ghost ."
    assert numbering.order == [3, 1]


def test_checked_prose_releases_a_sentence_only_after_the_next_begins(pa):
    grounder = Grounder(pa.engine.embed)
    prose = CheckedProse(grounder, _sources(pa, "Arash Gholamidavoodi", "Jiayi Zhang"))
    deltas = ["Top-W is a geometry-aware truncation ", "rule based on Wasserstein distance.",
              " [1] The moon is made of cheese [2].", " Verbalized Sampling is a training-free"]
    released = [prose.feed(d) for d in deltas]
    assert released[0] == [] and released[1] == []  # the marker may still follow the full stop
    assert released[2] == ["Top-W is a geometry-aware truncation rule based on Wasserstein distance [1]."]
    assert released[3] == []  # the cheese sentence failed the check
    assert prose.close() == []  # cut off mid-sentence: never shown
    assert [why for _, why in prose.result.dropped] == ["unsupported", "unfinished"]
    assert prose.result.text == released[2][0] and prose.result.used == [1]


def test_a_name_in_the_question_must_be_in_the_paper_cited_for_it(pa):
    # the question's words are free, its names are not: a sentence citing Top-W may not say
    # what Verbalized Sampling does just because the question named it
    from assistant.answer.query import question_allowance

    grounder = Grounder(pa.engine.embed)
    sources = _sources(pa, "Arash Gholamidavoodi", "Jiayi Zhang")
    allowed = question_allowance("Compare Top-W with Verbalized Sampling.")
    claim = "Verbalized Sampling asks the model for a distribution of responses with probabilities [1]."
    v = grounder.verdict(claim, {s.n: s for s in sources}, True, allowed)
    assert v.markers != [1]  # not kept on Top-W: re-pointed to Verbalized Sampling or dropped
    assert "compar" in allowed and "verbal" not in allowed


def test_sentence_cache_smaller_than_one_call_still_answers_it(pa):
    # a large corpus evicts while a call is in flight: the call must still get every vector
    from assistant.answer.evidence import SentenceEmbeddings

    embed = SentenceEmbeddings(pa.store.embedder, capacity=3)
    first = embed(["alpha beta", "gamma delta"])
    texts = ["alpha beta", "one", "two", "three", "four", "gamma delta"]
    vectors = embed(texts)
    assert vectors.shape[0] == len(texts) and len(embed._cache) == 3
    assert np.allclose(vectors[0], first[0]) and np.allclose(vectors[-1], first[1])
