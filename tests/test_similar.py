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


# ---------------------------------------------------------------- "more like this" as a conversation turn
from assistant import Filters, Turn  # noqa: E402
from assistant.ui.render import more_like_message, source_card  # noqa: E402


@pytest.fixture()
def pa(seed_assistant):
    """The session's seed assistant (`none` backend), shared: these tests only ask."""
    return seed_assistant


def after(pa, question, **kw):
    answer = pa.ask(question, **kw)
    return answer, [Turn(role="user", content=question), answer.as_turn()]


def assert_lists_neighbours_of(pa, answer, source_id):
    """The source paper cited first, then its nearest papers in order, each cited on a line
    with its linking sentence (the citation's evidence)."""
    assert answer.intent == "similar" and not answer.abstained
    expected = pa.similar(source_id)
    ids = [c.paper_id for c in answer.citations]
    assert ids[0] == source_id and ids[1:] == [r.paper.paper_id for r in expected]
    lines = [line for line in answer.answer.splitlines() if line[:1].isdigit()]
    for line, r, c in zip(lines, expected, answer.citations[1:]):
        assert line.endswith(f"[{c.number}]") and r.link[:60] in line
        assert c.evidence == r.link


def test_more_like_the_second_one_after_a_summary(pa):
    summary, history = after(pa, "Summarize the papers on causal inference.")
    second = summary.citations[1].paper_id
    answer = pa.ask("more like the second one", history)
    assert_lists_neighbours_of(pa, answer, second)
    assert "[1]" in answer.answer.splitlines()[0]  # the paper it is similar to, cited as such


def test_anything_else_like_it_after_a_one_paper_answer(pa):
    first, history = after(pa, "Which paper is about Kolmogorov-Arnold Networks?")
    assert len(first.citations) == 1
    answer = pa.ask("anything else like it?", history)
    assert_lists_neighbours_of(pa, answer, first.citations[0].paper_id)


def test_more_like_a_named_paper(pa):
    answer = pa.ask("More like Top-W")
    assert answer.citations[0].title.startswith("Top-W")
    assert_lists_neighbours_of(pa, answer, answer.citations[0].paper_id)


@pytest.mark.parametrize("message", ["Show me work akin to the Top-W paper.",
                                     "papers related to Top-W?"])
def test_neighbours_asked_in_words_no_phrase_lists_of_a_named_paper(pa, message):
    # the intent model reads the request; the paper is the one the message names as its own
    answer = pa.ask(message)
    assert answer.citations and answer.citations[0].title.startswith("Top-W")
    assert_lists_neighbours_of(pa, answer, answer.citations[0].paper_id)


@pytest.mark.parametrize("message,first_author", [
    ("the paper on sycophantic behavior of large language models", "Itai Shapira"),
    ("got papers along the lines of the one on backdoor attacks in federated learning?", "zhixuan ma"),
])
def test_neighbours_of_the_paper_a_whole_message_describes(pa, message, first_author):
    # no "more like" phrase (the mode, or the intent model, says it asks for neighbours): the
    # paper is the one the message describes, chosen as a question's paper is, not a title
    # that some word of the message happens to name
    answer = pa.ask(message, mode="similar")
    assert answer.citations and answer.citations[0].authors[0] == first_author
    assert_lists_neighbours_of(pa, answer, answer.citations[0].paper_id)


def test_a_whole_message_describing_no_paper_here_asks_which(pa):
    answer = pa.ask("got papers along the lines of protein-ligand docking with diffusion?", mode="similar")
    assert answer.intent == "similar" and answer.abstained and answer.citations == []


@pytest.mark.parametrize("message", ["more like this", "anything else like that?",
                                     "more like quantum teleportation"])
def test_no_paper_to_be_similar_to_asks_which_and_cites_nothing(pa, message):
    answer = pa.ask(message)
    assert answer.intent == "similar" and answer.abstained
    assert answer.citations == [] and "[1]" not in answer.answer
    assert "which paper" in answer.answer.lower() or "found no paper" in answer.answer


def test_more_like_them_asks_which_one_and_offers_them(pa):
    summary, history = after(pa, "Summarize the papers on causal inference.")
    answer = pa.ask("more like them", history)
    assert answer.abstained and answer.citations == [] and "Which paper" in answer.answer
    assert answer.presented == [c.paper_id for c in summary.citations]  # "the first one" next


def test_more_like_a_paper_past_the_list_is_unresolved(pa):
    _, history = after(pa, "Compare Top-W with Verbalized Sampling")
    answer = pa.ask("more like the fifth one", history)
    assert answer.abstained and answer.citations == [] and "can't tell which paper" in answer.answer


def test_filters_keep_only_allowed_neighbours(pa):
    answer = pa.ask("More like Top-W", filters=Filters(categories=["General Machine Learning"]))
    assert answer.citations[1:] and all(c.category == CAUSALITY for c in answer.citations[1:])


def test_the_source_cards_more_like_this_button_asks_for_that_paper(pa):
    from assistant.types import Citation

    card = source_card(3, Citation.from_paper(1, pa.store.paper(CAUSAL_FL)))
    assert f'data-more="{more_like_message(CAUSAL_FL)}"' in card and "More like this" in card
    # a card of an earlier answer: the id, not a number, says which paper
    _, history = after(pa, "Compare Top-W with Verbalized Sampling")
    answer = pa.ask(more_like_message(CAUSAL_FL), history)
    assert_lists_neighbours_of(pa, answer, CAUSAL_FL)


def test_cli_ask_mode_similar(seed_assistant):
    store = str(seed_assistant.settings.store_dir)
    res = CliRunner().invoke(app, ["ask", "Which paper is about Kolmogorov-Arnold Networks?",
                                   "more like it", "--json", "--backend", "none", "--store", store])
    assert res.exit_code == 0, res.output
    last = json.loads(res.stdout.strip().splitlines()[-1])
    assert last["intent"] == "similar" and len(last["citations"]) == 1 + seed_assistant.settings.similar_k
