"""The OpenAI-compatible API, driven by the official `openai` SDK against the real server.

Answers come from the `none` backend (extracts, no model) over a temporary store holding the
bundled corpus; the API's wire format, conversation handling and errors are what is tested.
"""
from __future__ import annotations

from pathlib import Path

import httpx
import openai
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from assistant.api import MODEL_ID, create_router
from assistant.render import answer_payload
from assistant.index import StoreError
from assistant.server import create_app
from conftest import seeded_assistant
from servers import running_app

KEY = "test-key-0123456789"
BACKDOOR_Q = "Which paper studies backdoor attacks in federated learning?"
BACKDOOR_AUTHOR = "Haichang Gao"
CAUSALITY = "General Machine Learning · Causality"


@pytest.fixture(scope="module")
def pa(tmp_path_factory):
    return seeded_assistant(tmp_path_factory.mktemp("api-store"))


@pytest.fixture(scope="module")
def server(pa):
    """Base URL of the live app."""
    with running_app(create_app(pa, api_key=KEY)) as url:
        yield url


@pytest.fixture()
def client(server):
    return openai.OpenAI(base_url=server + "/v1", api_key=KEY, max_retries=0, timeout=60)


def test_models_list_and_retrieve(client):
    assert [m.id for m in client.models.list()] == [MODEL_ID]
    assert client.models.retrieve(MODEL_ID).id == MODEL_ID
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")


def test_plain_completion_has_answer_and_citations(client):
    r = client.chat.completions.create(model=MODEL_ID,
                                       messages=[{"role": "system", "content": "Be brief."},
                                                 {"role": "user", "content": BACKDOOR_Q}])
    assert r.object == "chat.completion" and r.model == MODEL_ID
    choice = r.choices[0]
    assert choice.finish_reason == "stop" and choice.message.role == "assistant"
    assert "backdoor" in choice.message.content and "[1]" in choice.message.content
    citations = r.to_dict()["citations"]
    assert citations[0]["number"] == 1
    assert citations[0]["category"] == "Social Aspects · Security"
    assert BACKDOOR_AUTHOR in citations[0]["authors"]
    assert set(citations[0]) >= {"paper_id", "title", "authors", "category", "year"}
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens > 0


def test_streamed_completion_ends_with_citations(client):
    stream = client.chat.completions.create(
        model=MODEL_ID, stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "Compare Top-W with Verbalized Sampling."}])
    chunks = list(stream)
    assert len(chunks) >= 4
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[1].to_dict().get("retrieved"), "the papers found come before the answer"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert "|" in text and "Top-W" in text  # the comparison table
    last = [c for c in chunks if c.choices][-1]
    assert last.choices[0].finish_reason == "stop"
    extra = last.to_dict()
    assert [c["number"] for c in extra["citations"]] == [1, 2]
    assert extra["answer"] == text.strip()  # extractive: what was streamed is the checked answer
    assert extra["paper_assistant"]["streamed_text_replaced"] is False
    assert chunks[-1].usage is not None and chunks[-1].choices == []


def test_stream_is_server_sent_events_ending_with_done(server):
    with httpx.stream("POST", server + "/v1/chat/completions", timeout=60,
                      headers={"Authorization": f"Bearer {KEY}"},
                      json={"model": MODEL_ID, "stream": True,
                            "messages": [{"role": "user", "content": BACKDOOR_Q}]}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines)
    assert lines[-1] == "data: [DONE]"


def _follow_up(client, first, echo_citations: bool):
    assistant = {"role": "assistant", "content": first.choices[0].message.content}
    if echo_citations:
        assistant["citations"] = first.to_dict()["citations"]
    return client.chat.completions.create(model=MODEL_ID, messages=[
        {"role": "user", "content": BACKDOOR_Q}, assistant,
        {"role": "user", "content": "Who wrote it?"}])


@pytest.mark.parametrize("echo_citations", [True, False], ids=["citations-echoed", "text-only"])
def test_multi_turn_follow_up_uses_the_history(client, echo_citations):
    first = client.chat.completions.create(model=MODEL_ID,
                                           messages=[{"role": "user", "content": BACKDOOR_Q}])
    paper = first.to_dict()["citations"][0]["paper_id"]
    second = _follow_up(client, first, echo_citations)
    assert BACKDOOR_AUTHOR in second.choices[0].message.content
    assert [c["paper_id"] for c in second.to_dict()["citations"]] == [paper]


def test_follow_up_with_echoed_citations_of_an_edited_answer(client):
    """A client that rewrote the answer text still keeps the focus through `citations`."""
    first = client.chat.completions.create(model=MODEL_ID,
                                           messages=[{"role": "user", "content": BACKDOOR_Q}])
    r = client.chat.completions.create(model=MODEL_ID, messages=[
        {"role": "user", "content": BACKDOOR_Q},
        {"role": "assistant", "content": "(edited by the client)",
         "citations": first.to_dict()["citations"]},
        {"role": "user", "content": "Who wrote it?"}])
    assert BACKDOOR_AUTHOR in r.choices[0].message.content


def test_filters_mode_and_k_extensions(client):
    r = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "Which paper uses federated learning?"}],
        extra_body={"filters": {"categories": [CAUSALITY]}})
    cites = r.to_dict()["citations"]
    assert cites and all(c["category"] == CAUSALITY for c in cites)
    r = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "causal inference"}],
        extra_body={"mode": "summary", "k": 3})
    assert r.to_dict()["paper_assistant"]["intent"] == "summary"


def _error(exc_info) -> dict:
    body = exc_info.value.response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


@pytest.mark.parametrize("messages, extra", [
    ([], {}),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], {}),
    ([{"role": "user", "content": "   "}], {}),
    ([{"role": "wizard", "content": "hi"}], {}),
    ([{"role": "user", "content": 42}], {}),
    ([{"role": "user", "content": "hi"}], {"k": "many"}),
    ([{"role": "user", "content": "hi"}], {"mode": "poem"}),
    ([{"role": "user", "content": "hi"}], {"filters": {"year_min": "last year"}}),
], ids=["no-messages", "last-not-user", "empty", "bad-role", "bad-content", "bad-k", "bad-mode",
        "bad-filter"])
def test_bad_requests_are_400_in_openai_shape(client, messages, extra):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=messages, extra_body=extra)
    assert e.value.status_code == 400
    err = _error(e)
    assert err["type"] == "invalid_request_error" and err["message"]


def test_unknown_model_is_404_model_not_found(client):
    """Only the ids GET /v1/models lists are served; another is OpenAI's 404, streamed or not."""
    served = [m.id for m in client.models.list()]
    for stream in (False, True):
        with pytest.raises(openai.NotFoundError) as e:
            client.chat.completions.create(model="gpt-4o", stream=stream,
                                           messages=[{"role": "user", "content": BACKDOOR_Q}])
        err = _error(e)
        assert (err["type"], err["param"], err["code"]) == ("invalid_request_error", "model",
                                                              "model_not_found")
        assert err["message"].startswith("The model `gpt-4o` does not exist")
        assert all(f"`{m}`" in err["message"] for m in served)  # says what to send instead
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("gpt-4o")
    assert _error(e)["code"] == "model_not_found"


def test_a_request_without_model_is_400_naming_the_parameter(server):
    """`model` is required, as in OpenAI's API (the SDK always sends it: this is a bare request)."""
    r = httpx.post(server + "/v1/chat/completions", timeout=30,
                   headers={"Authorization": f"Bearer {KEY}"},
                   json={"messages": [{"role": "user", "content": BACKDOOR_Q}]})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["param"] == "model" and f"`{MODEL_ID}`" in err["message"]


def test_a_message_over_the_limit_is_400_naming_the_setting(client, pa):
    limit = pa.settings.max_message_chars
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID,
                                       messages=[{"role": "user", "content": "graph " * limit}])
    err = _error(e)
    assert (err["param"], err["code"]) == ("messages", "message_too_long")
    assert (f"messages[0]: message is {len(('graph ' * limit).strip())} characters; the limit is "
            f"{limit} characters (setting `max_message_chars`") in err["message"]
    # an earlier user message is held to the same limit, and named
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=[
            {"role": "user", "content": "x" * (limit + 1)}, {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "Who wrote it?"}])
    assert _error(e)["message"].startswith("messages[0]: message is")
    # at the limit it is answered
    r = client.chat.completions.create(model=MODEL_ID, messages=[
        {"role": "user", "content": (BACKDOOR_Q + " " + "x" * limit)[:limit]}])
    assert r.choices[0].message.content


@pytest.mark.parametrize("content", ["", "  \n\t "], ids=["empty", "whitespace"])
def test_an_empty_question_is_400_empty_message(client, content):
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model=MODEL_ID, stream=stream,
                                           messages=[{"role": "user", "content": content}])
        err = _error(e)
        assert (err["type"], err["param"], err["code"]) == ("invalid_request_error", "messages",
                                                              "empty_message")
        assert "the message is empty" in err["message"]


def test_malformed_json_and_wrong_body_type_are_400(server):
    for content in (b"{not json", b"[1, 2]", b""):
        r = httpx.post(server + "/v1/chat/completions", content=content, timeout=30,
                       headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
        assert r.status_code == 400, content
        assert r.json()["error"]["type"] == "invalid_request_error"


def test_missing_or_wrong_token_is_401(server):
    wrong = openai.OpenAI(base_url=server + "/v1", api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as e:
        wrong.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": "hi"}])
    assert _error(e)["code"] == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    r = httpx.get(server + "/v1/models", timeout=30)
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    assert r.headers["www-authenticate"] == "Bearer"
    r = httpx.get(server + "/v1/models", headers={"Authorization": f"Basic {KEY}"}, timeout=30)
    assert r.status_code == 401
    assert KEY not in r.text


def test_healthz_needs_no_token(server, pa):
    r = httpx.get(server + "/healthz", timeout=30)
    assert r.status_code == 200 and r.json() == {"status": "ok", "papers": pa.stats()["papers"]}
    assert r.json()["papers"] == 20


def test_info_names_the_server_and_what_it_answers_from(server, pa):
    assert httpx.get(server + "/v1/info", timeout=30).status_code == 401  # a /v1 route
    r = httpx.get(server + "/v1/info", headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    info = r.json()
    assert r.status_code == 200 and info["object"] == "server"
    assert info["service"] == "paper-assistant" and info["model_id"] == MODEL_ID
    assert info["papers"] == 20 and info["answers_by"] == "none (extracts only)"
    assert {k: info[k] for k in ("store", "collection", "backend", "model")} == pa.settings.identity()
    assert info["store"] == str(Path(pa.settings.store_dir).resolve()) and info["backend"] == "none"


def without_timings(payload: dict) -> dict:
    return {k: v for k, v in payload.items() if k != "timings"}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_full_answer_is_the_answer_ask_json_prints(client, pa, stream):
    messages = [{"role": "user", "content": BACKDOOR_Q}]
    expected = without_timings(answer_payload(pa.ask(BACKDOOR_Q)))
    r = client.chat.completions.create(model=MODEL_ID, messages=messages, stream=stream,
                                       extra_body={"full_answer": True})
    last = [c for c in r][-1] if stream else r
    assert without_timings(last.to_dict()["paper_assistant"]["full_answer"]) == expected
    assert expected["retrieved"] and expected["citations"][0]["evidence"]
    # without the extension, the reply is as before
    plain = client.chat.completions.create(model=MODEL_ID, messages=messages)
    assert "full_answer" not in plain.to_dict()["paper_assistant"]


class BrokenStore:
    """A PaperAssistant whose store is down."""

    def stats(self):
        raise StoreError("chroma server unreachable")

    def ask(self, *a, **k):
        raise StoreError("chroma server unreachable")

    def ask_stream(self, *a, **k):
        raise StoreError("chroma server unreachable")


def test_backend_down_is_503():
    app = FastAPI()
    app.include_router(create_router(BrokenStore()))
    with TestClient(app) as tc:
        body = {"model": MODEL_ID, "messages": [{"role": "user", "content": "hi"}]}
        for stream in (False, True):
            r = tc.post("/v1/chat/completions", json={**body, "stream": stream})
            assert r.status_code == 503, stream
            assert r.json()["error"]["type"] == "server_error"
            assert r.json()["error"]["code"] == "backend_unavailable"
        assert tc.get("/healthz").status_code == 503


def test_no_key_configured_means_open_api_on_loopback(pa):
    app = FastAPI()
    app.include_router(create_router(pa))
    with TestClient(app) as tc:
        assert tc.get("/v1/models").status_code == 200


def test_v1_table_mode_and_more_like_a_cited_paper(client):
    r = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "causal inference: method, data"}],
        extra_body={"mode": "table"})
    content, data = r.choices[0].message.content, r.to_dict()
    assert "| Paper | Method | Data |" in content and "[1]" in content
    assert all(c["category"] == CAUSALITY for c in data["citations"])
    # a follow-up "more like the second one" resolves against the table's rows
    r2 = client.chat.completions.create(model=MODEL_ID, messages=[
        {"role": "user", "content": "causal inference: method, data"},
        {"role": "assistant", "content": content, "citations": data["citations"]},
        {"role": "user", "content": "more like the second one"}])
    cites = r2.to_dict()["citations"]
    assert cites[0]["paper_id"] == data["citations"][1]["paper_id"] and len(cites) > 1
    assert "Papers closest in meaning" in r2.choices[0].message.content
