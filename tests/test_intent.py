"""What a message asks for, read by meaning (answer/intent.py) and combined with the phrase
rules (Settings.intent): the shipped model, and what each way of reading does on the seed corpus."""
from __future__ import annotations

import json

import numpy as np
import pytest

from assistant import PaperAssistant
from assistant.answer.intent import IntentModel, default_model, message_vectors, read_intent
from assistant.answer.query import detect_intent, parse
from conftest import talk

# messages the phrase rules leave at their default (question) and the model reads surely
BY_MEANING = [
    ("I am new to causal inference, where do the papers here stand?", "summary"),
    ("Grid of the causal papers with method and data columns", "table"),
    ("Top-W or Verbalized Sampling, which one is better for creative writing?", "compare"),
]


def test_the_shipped_model_reads_five_intents_with_its_provenance():
    model = default_model()
    assert sorted(model.labels) == ["compare", "question", "similar", "summary", "table"]
    assert model.words is not None  # the vector, then the words' TF-IDF
    assert model.coef.shape == (5, 384 + len(model.words.idf))
    assert 0 < model.provenance["confidence"] < 1 and model.provenance["training_messages"] >= 300
    p = model.proba(np.zeros((1, 384)), ["more like this"])
    assert p.shape == (1, 5) and p.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="messages"):
        model.proba(np.zeros((1, 384)))  # words it cannot see would read every message as wordless


def test_word_features_are_scikit_learns_tfidf():
    from sklearn.feature_extraction.text import TfidfVectorizer

    from assistant.answer.intent import WordFeatures
    from assistant.text import tokens

    fitted_on = ["papers akin to the KAN paper", "work akin to Top-W", "more like the second one",
                 "more like this one please", "what's similar to the KAN paper?"]
    tf = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, tokenizer=tokens,
                         token_pattern=None, lowercase=False).fit(fitted_on)
    words = WordFeatures({g: int(i) for g, i in tf.vocabulary_.items()}, tf.idf_, 2.0)
    messages = ["Work akin to the KAN paper, more like it", "nothing known here", "more more like like"]
    assert np.allclose(words.of(messages), 2.0 * tf.transform(messages).toarray())


# Asks for neighbours in words no phrase rule lists: the word features carry it
@pytest.mark.parametrize("message", ["Show me work akin to the Top-W paper.",
                                     "anything that resembles the KAN paper?"])
def test_neighbours_asked_in_other_words_are_read_as_similar(message):
    assert detect_intent(message) == "question"
    read, p = read_intent(message)
    assert read == "similar" and p >= default_model().provenance["confidence"]


@pytest.mark.parametrize("message,intent", BY_MEANING)
def test_the_model_reads_what_the_rules_miss(message, intent):
    assert detect_intent(message) == "question"
    read, p = read_intent(message)
    assert read == intent and p >= default_model().provenance["confidence"]


def test_parse_takes_the_intent_read_and_falls_back_to_the_rules():
    message = "Grid of the causal papers with method and data columns"
    assert parse(message, [], read_intent=lambda m, rules: "table").intent == "table"
    assert parse(message, [], read_intent=lambda m, rules: None).intent == "question"
    seen = []
    parse(message, [], read_intent=lambda m, rules: seen.append((m, rules)))
    assert seen == [(message, "question")]  # the model is told what the rules read
    # an explicit mode wins over both
    assert parse(message, [], mode="summary", read_intent=lambda m, rules: "table").intent == "summary"


def test_the_stores_minilm_serves_the_intent_model(seed_assistant):
    store_minilm = seed_assistant.store.embedder
    assert np.allclose(message_vectors(["Which paper is about KANs?"], store_minilm),
                       message_vectors(["Which paper is about KANs?"]), atol=1e-5)


def test_a_model_file_round_trips(tmp_path):
    model = IntentModel(["a", "b"], np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0.0, 0.5]), {"x": 1})
    path = tmp_path / "m.json"
    path.write_text(json.dumps(model.to_json()))
    back = IntentModel.load(path)
    assert back.labels == ["a", "b"] and np.allclose(back.proba(np.array([[2.0, 0.0]])),
                                                     model.proba(np.array([[2.0, 0.0]])))


@pytest.fixture(scope="module")
def by_rules(seed_assistant) -> PaperAssistant:
    """The session's seed store (read-only), read by the phrase rules alone."""
    return PaperAssistant(seed_assistant.settings.model_copy(update={"intent": "rules"}))


def test_the_default_reads_a_summary_request_the_rules_took_for_a_question(seed_assistant, by_rules):
    message = "I am new to causal inference, where do the papers here stand?"
    assert seed_assistant.settings.intent == "rules_then_model"
    assert seed_assistant.ask(message).intent == "summary"
    assert by_rules.ask(message).intent == "question"


def test_where_the_rules_name_an_intent_they_decide(seed_assistant):
    # the rules say compare; whatever the model reads, rules_then_model keeps it
    answer = seed_assistant.ask("Compare Top-W with Verbalized Sampling")
    assert answer.intent == "compare"


# follow-ups about the paper in focus that the phrase rules read as content (asked_by_rules)
ASKED_BY_MEANING = [("is this a one-person effort?", "authors_count"),
                    ("whose paper is this?", "authors"),
                    ("which baselines do they beat?", "content")]


@pytest.mark.parametrize("message,asked", ASKED_BY_MEANING)
def test_the_asks_model_reads_what_a_follow_up_asks_about_its_paper(message, asked):
    from assistant.answer.intent import asks_model, read_asks
    from assistant.answer.query import asked_by_rules

    model = asks_model()
    assert sorted(model.labels) == ["authors", "authors_count", "content", "date"]
    assert model.provenance["test_accuracy"]["confident"] > model.provenance["test_accuracy"]["rules"]
    assert asked_by_rules(message) == "content"
    read, p = read_asks(message)
    assert read == asked and p >= model.provenance["confidence"]


def test_a_follow_up_the_rules_miss_gets_its_author_count_on_the_seed_corpus(seed_assistant, by_rules):
    from assistant.types import Turn

    first = seed_assistant.ask("Which paper is about Kolmogorov-Arnold Networks?")
    assert len(first.citations) == 1
    history = [Turn(role="user", content="Which paper is about Kolmogorov-Arnold Networks?"), first.as_turn()]
    n = len(first.citations[0].authors)
    answer = seed_assistant.ask("is this a one-person effort?", history)
    assert f"That is {n} authors." in answer.answer and [c.paper_id for c in answer.citations] == \
        [first.citations[0].paper_id]
    assert f"That is {n} authors." not in by_rules.ask("is this a one-person effort?", history).answer


# Whether a message that points at no paper, or only by a pronoun or a noun, asks about the paper
# in focus or something new (benchmarks/fit_focus.py; these messages are not in its training):
# a follow-up reaches the fitted threshold, a new request does not.
FOCUS_OR_NEW = [("how big is the training data?", "focus"),
                ("benchmarks + headline number?", "focus"),
                ("which benchmarks does the method use?", "focus"),
                ("find me the study showing preference-based post-training makes the model agree "
                 "with users more", "new"),
                ("ok and what about the one on automatically evolving the context given to an LLM "
                 "instead of handcrafting it?", "new")]


@pytest.mark.parametrize("message,reading", FOCUS_OR_NEW)
def test_the_focus_model_reads_a_follow_up_apart_from_a_new_request(message, reading):
    from assistant.answer.intent import best, focus_model

    model = focus_model()
    assert sorted(model.labels) == ["focus", "new"]
    test = model.provenance["test"]
    assert test["new_read_as_focus"] <= 0.02 * test["new"] and test["focus_read"] >= 0.9 * test["focus"]
    label, p = best(model, message_vectors([message])[0], message)
    p_focus = p if label == "focus" else 1 - p
    assert (p_focus >= model.provenance["threshold"]) == (reading == "focus")


def test_a_detail_question_that_points_at_nothing_keeps_the_paper_in_focus(seed_assistant, by_rules):
    # no model reads here (`none` backend): the focus model alone tells the follow-up
    asked = ("Which paper fuses cell morphology, gene expression and spatial context in one model?",
             "how big is the training data?")
    answer = talk(seed_assistant, *asked)
    assert not answer.abstained and [c.authors[0] for c in answer.citations] == ["Zhenglun Kong"]
    assert "million" in answer.answer  # its sentence about the dataset it assembled
    assert talk(by_rules, *asked).abstained


def test_a_new_paper_described_with_the_noun_or_a_pronoun_is_not_the_paper_in_focus(seed_assistant):
    # "the model" and "it" belong to the description, not to Top-W shown before
    new = talk(seed_assistant, "What is Top-W?", "find me the study showing preference-based "
               "post-training makes the model agree with users more")
    assert [c.authors[0] for c in new.citations] == ["Itai Shapira"]
    other = talk(seed_assistant, "What is Top-W?", "ok and what about the one on automatically "
                 "evolving the context given to an LLM instead of handcrafting it?")
    assert "Arash Gholamidavoodi" not in [c.authors[0] for c in other.citations]
    # a follow-up that says "the method" still means the paper in focus
    same = talk(seed_assistant, "What is Top-W?", "which benchmarks does the method use?")
    assert [c.authors[0] for c in same.citations] == ["Arash Gholamidavoodi"]
