"""More like this: `PaperAssistant.similar` and `paper-assistant similar` on the seed corpus."""
from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from assistant.cli import app
from assistant.similar import UnknownPaper
from assistant.text import split_sentences

CAUSAL_FL = "ha4c1a52c7a80"  # causal inference without centralised individual-level data
CAUSALITY = "General Machine Learning · Causality"


@pytest.fixture(scope="module")
def results(seed_assistant):
    return seed_assistant.similar(CAUSAL_FL, k=5)


def test_nearest_paper_of_the_causal_paper_is_a_causal_paper(results):
    assert results[0].paper.category == CAUSALITY
    assert sum(r.paper.category == CAUSALITY for r in results[:3]) >= 2


def test_k_papers_best_first_without_the_source(results):
    ids = [r.paper.paper_id for r in results]
    assert len(ids) == 5 == len(set(ids)) and CAUSAL_FL not in ids
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True) and -1.0 <= scores[-1] <= scores[0] <= 1.0


def test_link_is_the_neighbour_sentence_closest_to_the_source_abstract(seed_assistant, results):
    embed = seed_assistant.engine.embed
    source = embed([seed_assistant.store.paper(CAUSAL_FL).abstract])[0]
    for r in results:
        sentences = split_sentences(r.paper.abstract)
        sims = embed(sentences) @ source
        assert r.link == sentences[int(np.argmax(sims))]
        assert r.link_score == pytest.approx(float(sims.max()), abs=1e-5)


def test_only_the_source_and_the_neighbours_sentences_are_embedded(seed_assistant):
    """The neighbours come from the stored vectors, not from re-embedding the corpus."""
    embedded: list[str] = []
    real = seed_assistant.engine.embed

    def counting(texts):
        embedded.extend(texts)
        return real(texts)

    from assistant.similar import find_similar

    found = find_similar(seed_assistant.store, counting, CAUSAL_FL, 2, 50)
    expected = 1 + sum(len(split_sentences(r.paper.abstract)) for r in found)
    assert len(embedded) == expected


def test_unknown_paper_is_a_clear_error(seed_assistant):
    with pytest.raises(UnknownPaper, match="no paper with id 'nope'"):
        seed_assistant.similar("nope")


def test_cli_similar_json_and_text(seed_assistant):
    store = str(seed_assistant.settings.store_dir)
    runner = CliRunner()
    res = runner.invoke(app, ["similar", CAUSAL_FL, "--k", "3", "--json", "--store", store])
    assert res.exit_code == 0, res.output
    payload = json.loads(res.stdout)
    assert payload["paper_id"] == CAUSAL_FL and len(payload["results"]) == 3
    assert set(payload["results"][0]) == {"paper_id", "title", "authors", "category", "year",
                                          "score", "link", "link_score"}
    assert payload["results"][0]["category"] == CAUSALITY
    text = runner.invoke(app, ["similar", CAUSAL_FL, "--store", store])
    assert text.exit_code == 0 and text.stdout.startswith("1. ")
    missing = runner.invoke(app, ["similar", "nope", "--store", store])
    assert missing.exit_code == 2
