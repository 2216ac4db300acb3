"""What a message asks: intent, and the topic of a summary request without the request's words."""
from __future__ import annotations

import pytest

from assistant.answer.query import detect_intent, topic_of


@pytest.mark.parametrize("message,topic", [
    ("Summarize the papers on causal inference.", "causal inference"),
    ("Summarize what this collection says about causal inference", "causal inference"),
    ("What does this collection say about causal inference?", "causal inference"),
    ("What's in here on causal inference?", "causal inference"),
    ("what is there on causal inference", "causal inference"),
    ("Give me an overview of causal inference", "causal inference"),
    ("Please give me a quick overview of the work on causal inference.", "causal inference"),
    ("Can you summarise the research about causal inference in this collection?", "causal inference"),
    ("causal inference: summarize", "causal inference"),
    ("Overview of federated learning", "federated learning"),
    ("What does the corpus have on LLM agents and how they model their environment?",
     "LLM agents and how they model their environment"),
    ("Which papers are about diffusion models?", "diffusion models"),
    ("List all papers on spiking neural networks", "spiking neural networks"),
    ("What do the papers say about sycophancy", "sycophancy"),
])
def test_topic_drops_the_request_words(message, topic):
    assert topic_of(message) == topic


@pytest.mark.parametrize("message", [
    "Summarize the papers on causal inference.",
    "What does this collection say about causal inference?",
    "What's in here on causal inference?",
    "Give me an overview of GANs",
    "what do we have on world models",
    "What work is there on dropout?",
    "Which papers are about federated learning?",
])
def test_summary_requests_are_summaries(message):
    assert detect_intent(message) == "summary"


@pytest.mark.parametrize("message,intent", [
    ("Which paper studies backdoor attacks?", "question"),
    ("What is Top-W?", "question"),
    ("Compare Top-W with Verbalized Sampling", "compare"),
    ("How does DualGraph differ from Meta Context Engineering?", "compare"),
    ("Top-W vs Verbalized Sampling", "compare"),
])
def test_other_intents(message, intent):
    assert detect_intent(message) == intent


def test_a_topic_made_only_of_request_words_falls_back_to_the_message():
    assert topic_of("Summarize the papers.") == "Summarize the papers"
