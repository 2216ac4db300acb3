"""End to end with the real models: the packaged local LLM, and the OpenAI backend against a
real OpenAI-compatible server (llama-cpp-python's, serving a packaged GGUF) on loopback.

Few and focused: each local-model answer costs seconds to tens of seconds on 2 cores.
"""
from __future__ import annotations

import os
import re

import pytest

from assistant import PaperAssistant, Turn
from assistant.text import terms

pytestmark = pytest.mark.slow


def _local_model_ready() -> str | None:
    try:
        import llama_cpp  # noqa: F401

        from assistant.llm import packaged_part_paths

        packaged_part_paths()
    except Exception as exc:  # a machine without `make install`'s [local] extra
        return f"local model not installed: {exc}"
    return None


@pytest.fixture(scope="module")
def local_pa(seed_assistant):
    reason = _local_model_ready()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the real local model: {reason}")
        pytest.skip(reason)
    settings = seed_assistant.settings.model_copy(update={"llm_backend": "local", "llm_timeout": 300})
    pa = PaperAssistant(settings, store=seed_assistant.store)
    return pa


def _cited_first_authors(answer) -> set[str]:
    return {c.authors[0] for c in answer.citations}


def _assert_grounded(answer):
    numbers = {int(n) for n in re.findall(r"\[(\d+)\]", answer.answer)}
    assert numbers == {c.number for c in answer.citations}
    assert {c.paper_id for c in answer.citations} <= {h.paper.paper_id for h in answer.retrieved}


def test_local_model_streams_a_cited_answer(local_pa):
    events = list(local_pa.ask_stream("Which paper studies backdoor attacks in federated learning?"))
    kinds = [k for k, _ in events]
    assert kinds[0] == "retrieved"  # the gate is sure enough (reading_sure): nothing to read
    answer = events[-1][1]
    # the lead naming the paper comes first, then checked prose sentence by sentence
    tokens = [payload for kind, payload in events[1:-1] if kind == "token"]
    assert tokens[0].startswith("From ") and "[1]" in tokens[0] and len(tokens) >= 2
    assert "Extracts from" not in answer.answer  # the model's prose passed the check
    assert not any("failed" in n or "unavailable" in n for n in answer.notices), answer.notices
    assert _cited_first_authors(answer) == {"zhixuan ma"}
    assert "first_token" in answer.timings
    _assert_grounded(answer)


SYCOPHANCY_QUESTION = "Which paper explains why preference tuning makes models agree with users too much?"


def test_local_model_reads_the_paper_that_answers_as_more_likely_yes(local_pa):
    from assistant.answer.reading import Reader

    llm = local_pa.engine._get_llm([])
    reader = Reader(llm.choice_probabilities, local_pa.engine.embed, local_pa.settings.relevance)
    papers = {p.authors[0]: p for p in local_pa.store.papers().values()}
    right = reader.yes(SYCOPHANCY_QUESTION, papers["Itai Shapira"])
    far = reader.yes(SYCOPHANCY_QUESTION, papers["Rémi Khellaf"])  # federated causal inference
    assert right > 0.5 and right > far + 0.2
    # the same reading after another one that shared its opening lines: exactly the same (it was
    # 0.016 apart when the cache kept everything two prompts share; llm/kvcache.reuse_prefix)
    assert reader.yes(SYCOPHANCY_QUESTION, papers["Itai Shapira"]) == right


# Reworded the way new users asked them (issue 21): the gate alone refuses or doubts each; the
# model reads the candidates and the right paper is cited, with the model's prose.
REWORDED = [
    ("I need a paper about models that agree with users too much after RLHF.", {"Itai Shapira"}),
    # Top-W (coherence) and Verbalized Sampling (stories) both answer it
    ("Which paper makes language models write more varied stories without hurting coherence?",
     {"Arash Gholamidavoodi", "Jiayi Zhang"}),
    ("Anything about estimating treatment effects when hospitals can't share patient rows?",
     {"Rémi Khellaf"}),
    ("Is there work on keeping a poisoned model update effective after the server averages "
     "everyone's weights?", {"zhixuan ma"}),
    (SYCOPHANCY_QUESTION, {"Itai Shapira"}),
]


@pytest.mark.parametrize("question,authors", REWORDED)
def test_local_model_reads_reworded_questions_and_never_denies_their_paper(local_pa, question, authors):
    # cited, with the model's prose, or (when the combined judgement is not sure enough to cite)
    # offered first as a paper the model's reading says may answer it: never "does not answer"
    answer = local_pa.ask(question)
    _assert_grounded(answer)
    if answer.abstained:
        first = local_pa.store.paper(answer.presented[0])
        assert first.authors[0] in authors
        assert "may answer it" in answer.answer.split("\n2.")[0], answer.answer
    else:
        assert _cited_first_authors(answer) & authors
        assert "Extracts from" not in answer.answer  # the model's prose passed the check


def test_local_model_rewrites_a_question_as_one_line_of_terms(local_pa):
    # `rewrite` (off by default) asks the real model for a search query; which words it writes
    # varies with the CPU's instruction sets and the cache, so what is asserted is the form the
    # planner relies on (tests/test_answer.py checks what the planner does with it)
    rewritten = local_pa.engine._rewrite(SYCOPHANCY_QUESTION)
    assert rewritten and "\n" not in rewritten and not rewritten.startswith('"')
    assert len(rewritten.split()) <= 30 and set(terms(rewritten)) & set(terms(SYCOPHANCY_QUESTION)), rewritten


def test_local_model_follow_up_and_comparison(local_pa):
    q1 = "What is Top-W?"
    a1 = local_pa.ask(q1)
    assert _cited_first_authors(a1) == {"Arash Gholamidavoodi"}
    history = [Turn(role="user", content=q1), a1.as_turn()]
    a2 = local_pa.ask("Compare it with Verbalized Sampling.", history)
    assert a2.intent == "compare"
    assert _cited_first_authors(a2) == {"Arash Gholamidavoodi", "Jiayi Zhang"}
    assert "|---|" in a2.answer
    _assert_grounded(a2)


def test_local_model_abstains_out_of_corpus(local_pa):
    answer = local_pa.ask("Which paper proposes a new method for protein-ligand docking?")
    assert answer.abstained and answer.citations == []


def test_openai_backend_against_a_live_server(seed_assistant, openai_server):
    # the answer's path through the server; the test server's 135M model is no reader (its
    # reading is tested below), so an answer the gate is sure of stands unread here
    relevance = seed_assistant.settings.relevance.model_copy(update={"reading_sure": None})
    settings = seed_assistant.settings.model_copy(update={
        "llm_backend": "openai", "llm_base_url": openai_server, "llm_model": "smollm2",
        "llm_api_key": None, "llm_timeout": 120, "relevance": relevance})
    pa = PaperAssistant(settings, store=seed_assistant.store)
    events = list(pa.ask_stream("What is Top-W?"))
    answer = events[-1][1]
    assert answer.backend == "openai"
    # the server answered: no failure notice (SmolLM2's prose may be dropped by grounding,
    # in which case the answer falls back to cited extracts — still grounded)
    assert not any("failed" in n or "unavailable" in n for n in answer.notices), answer.notices
    assert any(k == "token" for k, _ in events[1:-1])
    assert _cited_first_authors(answer) == {"Arash Gholamidavoodi"}
    _assert_grounded(answer)


def test_openai_backend_reads_a_candidate_through_logprobs(seed_assistant, openai_server):
    # the reading through an OpenAI-compatible server: one token, its top log-probabilities
    settings = seed_assistant.settings.model_copy(update={
        "llm_backend": "openai", "llm_base_url": openai_server, "llm_model": "smollm2",
        "llm_api_key": None, "llm_timeout": 120})
    pa = PaperAssistant(settings, store=seed_assistant.store)
    reader = pa.engine._reader()
    assert reader is not None  # reading "auto" reads with the answering backend
    paper = next(p for p in pa.store.papers().values() if p.authors[0] == "Arash Gholamidavoodi")
    yes = reader.yes("Which paper proposes the Top-W sampling rule?", paper)
    assert 0.0 < yes < 1.0  # a probability from the server's logprobs, not a written word's 0 or 1
    judged = pa.engine.judge.judge("sampling rule for decoding", pa.search("sampling rule for decoding", k=5))
    read = reader.read("sampling rule for decoding", judged)
    assert read is not None and len(read.read) == settings.relevance.reading_papers
    assert all("yes" in j.features for j in read.read)


def test_openai_backend_down_falls_back_to_extracts(seed_assistant):
    settings = seed_assistant.settings.model_copy(update={
        "llm_backend": "openai", "llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "x",
        "llm_timeout": 5})
    pa = PaperAssistant(settings, store=seed_assistant.store)
    answer = pa.ask("What is Top-W?")
    assert any("failed" in n or "unavailable" in n for n in answer.notices)
    assert _cited_first_authors(answer) == {"Arash Gholamidavoodi"}
    assert "Extracts" in answer.answer
