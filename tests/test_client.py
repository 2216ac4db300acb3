"""A warm CLI: `ask` and `chat` answer through a running server (assistant/client.py) when one
fits, and what the user sees is what the command shows answering in its own process.

One real server (the page and /v1, `none` backend, the bundled corpus on its own store) runs
for the module; an ASGI wrapper records the requests it serves and can die in the middle of
an answer. The CLI runs through typer's CliRunner in this process; while it must use the
server, building a PaperAssistant in the CLI fails the test.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from fastapi import FastAPI
from typer.testing import CliRunner

import assistant.cli as cli
import assistant.client as client
from assistant.api import create_router
from assistant.client import ServerError, connect
from assistant.config import load_settings
from assistant.render import answer_from_payload, answer_payload
from assistant.server import create_app
from conftest import seeded_assistant
from servers import GRADIO_WARNINGS, free_port, running_app

pytestmark = [pytest.mark.filterwarnings(w) for w in GRADIO_WARNINGS]

BACKDOOR_Q = "Which paper studies backdoor attacks in federated learning?"
BACKDOOR_AUTHOR = "Haichang Gao"
OUT_OF_CORPUS_Q = "Which paper is about quantum error correction?"
TABLE_Q = "Make a table of the papers on causal inference: method, data"
KAN_Q = "Which paper is about Kolmogorov-Arnold Networks?"
COMPLETIONS = "/v1/chat/completions"
USING = "using the running server at"


class RequestLog:
    """An ASGI app that records the path of each HTTP request. The chat completion numbered
    `doomed` (counting from the first this server served) starts its reply and then drops the
    connection, as a server killed in the middle of an answer."""

    def __init__(self, app):
        self.app, self.paths, self.doomed = app, [], None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.paths.append(scope["path"])
            if scope["path"] == COMPLETIONS and self.answers() == self.doomed:
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-type", b"text/event-stream")]})
                raise ConnectionAbortedError("killed in the middle of an answer (test)")
        await self.app(scope, receive, send)

    def answers(self) -> int:
        return self.paths.count(COMPLETIONS)


@pytest.fixture(scope="module")
def pa(tmp_path_factory):
    return seeded_assistant(tmp_path_factory.mktemp("client-store"))


@pytest.fixture(scope="module")
def served(pa):
    """(base URL, RequestLog) of the live server."""
    log = RequestLog(create_app(pa))
    with running_app(log) as url:
        yield url, log


@pytest.fixture
def store(pa) -> str:
    return str(pa.settings.store_dir)


@pytest.fixture
def runner(tmp_path, monkeypatch) -> CliRunner:
    """A CliRunner in an empty folder, without the caller's PAPER_ASSISTANT_* settings, whose
    default server address has nothing listening (a test that wants a server there sets it)."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("PAPER_ASSISTANT_"):
            monkeypatch.delenv(name)
    monkeypatch.setattr(client, "DEFAULT_URL", f"http://127.0.0.1:{free_port()}")
    return CliRunner()


class Forbidden:
    """In place of the CLI's in-process assistant (`cli.in_process`) while it must use the
    server: building one (and so a store, an engine or a language model) fails the test."""

    def __init__(self, *a, **k):
        raise AssertionError("the CLI built its own PaperAssistant instead of using the server")


def run(runner, *args, input=None):
    return runner.invoke(cli.app, [str(a) for a in args], input=input)


def ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def squash(text: str) -> str:
    return "".join(text.split())


def answers_json(stdout: str) -> list[dict]:
    """The answers `ask --json` printed, without the timings (they differ run to run)."""
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    for line in lines:
        line.pop("timings")
    return lines


# ----------------------------------------------------------------------------- the same answers

# (id, turns) of `ask --json` conversations on stdin: a question and its follow-up, a refusal
# and a literature table
CONVERSATIONS = [("first", [BACKDOOR_Q]), ("follow-up", [BACKDOOR_Q, "Who wrote it?"]),
                 ("refusal", [OUT_OF_CORPUS_Q]), ("table", [TABLE_Q])]


def test_ask_json_through_the_server_is_what_the_command_answers_itself(runner, served, store,
                                                                        monkeypatch):
    url, log = served
    stdin = "".join(json.dumps({"id": key, "turns": turns}) + "\n" for key, turns in CONVERSATIONS)
    here = answers_json(ok(run(runner, "ask", "--json", "--no-server", "--store", store,
                               "--backend", "none", input=stdin)).stdout)
    before = log.answers()
    with monkeypatch.context() as m:
        m.setattr(cli, "in_process", Forbidden)
        batch = ok(run(runner, "ask", "--json", "--server", url, input=stdin))
        turns = ok(run(runner, "ask", "--json", "--server", url, BACKDOOR_Q, "Who wrote it?"))
    assert USING in batch.stderr and url in batch.stderr
    assert log.answers() == before + 5 + 2
    assert answers_json(batch.stdout) == here
    first, follow_up, refusal, table = here
    assert answers_json(turns.stdout) == [{k: v for k, v in a.items() if k != "id"}
                                          for a in (first, follow_up)]
    assert {"doi", "url", "evidence"} <= set(first["citations"][0])
    assert BACKDOOR_AUTHOR in follow_up["answer"]
    assert [c["paper_id"] for c in follow_up["citations"]] == [first["citations"][0]["paper_id"]]
    assert refusal["abstained"] and refusal["citations"] == []
    assert table["table"]["rows"]


def test_ask_finds_the_server_at_the_default_address_and_prints_the_same(runner, served, store,
                                                                        monkeypatch):
    url, log = served
    turns = [BACKDOOR_Q, "Who wrote it?"]
    before = log.answers()
    with monkeypatch.context() as m:
        m.setattr(client, "DEFAULT_URL", url)
        m.setattr(cli, "in_process", Forbidden)
        remote = ok(run(runner, "ask", "--store", store, "--backend", "none", *turns))
    assert USING in remote.stderr and log.answers() == before + 2
    here = ok(run(runner, "ask", "--store", store, "--backend", "none", *turns))  # nothing listens
    assert USING not in here.stderr
    assert remote.stdout == here.stdout  # streamed, then the checked text and the references
    assert "References" in here.stdout and BACKDOOR_AUTHOR in here.stdout


def test_chat_through_the_server_is_the_same_conversation(runner, served, store, monkeypatch):
    url, log = served
    typed = f"{KAN_Q}\nWho wrote it?\n\n"
    here = ok(run(runner, "chat", "--no-server", "--store", store, "--backend", "none",
                  input=typed))
    before = log.answers()
    with monkeypatch.context() as m:
        m.setattr(cli, "in_process", Forbidden)
        remote = ok(run(runner, "chat", "--server", url, input=typed))
    assert USING in remote.stderr and log.answers() == before + 2
    assert remote.stdout == here.stdout
    assert "Marius Kloft" in remote.stdout and remote.stdout.count("References") == 2


def test_the_answer_survives_the_trip_through_the_server(pa):
    """render.answer_from_payload is the inverse of answer_payload (what ask --json prints)."""
    for question in (BACKDOOR_Q, TABLE_Q):
        payload = answer_payload(pa.ask(question))
        assert answer_payload(answer_from_payload(payload)) == payload


# ----------------------------------------------------------------------------- answering here

def test_no_server_answers_here_even_when_one_runs(runner, served, store, monkeypatch):
    url, log = served
    monkeypatch.setattr(client, "DEFAULT_URL", url)
    before = list(log.paths)
    result = ok(run(runner, "ask", "--json", "--no-server", "--store", store, "--backend", "none",
                    BACKDOOR_Q))
    assert log.paths == before  # not even probed
    assert USING not in result.stderr
    assert answers_json(result.stdout)[0]["citations"][0]["authors"][0] == "zhixuan ma"


def test_with_nothing_listening_the_command_answers_here_at_once(runner, tmp_path):
    empty = tmp_path / "empty"  # answered at once: the point is who answers
    t0 = time.monotonic()
    assert connect(load_settings(store_dir=empty, llm_backend="none")) == (None, "")
    assert time.monotonic() - t0 < 1.0  # a refused connection: no waiting for a timeout
    result = ok(run(runner, "ask", "--json", "--store", empty, "--backend", "none", BACKDOOR_Q))
    assert result.stderr == ""  # nothing to say: no server, no note
    [answer] = answers_json(result.stdout)
    assert answer["backend"] == "none" and "The collection is empty" in answer["answer"]


def test_a_server_on_another_store_is_not_used(runner, served, tmp_path, monkeypatch):
    url, log = served
    monkeypatch.setattr(client, "DEFAULT_URL", url)
    other = tmp_path / "other"
    before = log.answers()
    result = ok(run(runner, "ask", "--json", "--store", other, "--backend", "none", BACKDOOR_Q))
    assert log.answers() == before
    note = squash(result.stderr)
    assert squash(f"note: not using the server at {url}") in note and str(other) in note
    assert answers_json(result.stdout)[0]["citations"] == []  # the empty store answered
    # an explicit --server with another --store is an error naming both
    bad = run(runner, "ask", "--server", url, "--store", other, BACKDOOR_Q)
    assert bad.exit_code == 2 and isinstance(bad.exception, SystemExit)
    assert squash(str(other)) in squash(bad.stderr) and "Traceback" not in bad.output
    assert log.answers() == before


# ----------------------------------------------------------------------------- errors

def test_a_server_dying_mid_conversation_is_a_clean_error(runner, served, monkeypatch):
    url, log = served
    for args in (["--json"], []):  # whole answers, and streamed ones
        monkeypatch.setattr(log, "doomed", log.answers() + 2)  # the server dies in turn 2
        result = run(runner, "ask", "--server", url, *args, BACKDOOR_Q, "Who wrote it?")
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
        assert squash(f"error: the server at {url} stopped answering") in squash(result.stderr)
        assert "Traceback" not in result.output
        assert "zhixuan ma" in result.stdout  # the first turn's answer, shown before


def test_a_server_gone_is_a_clean_error(runner, pa, store):
    """An explicit server that is not there; a server that stops between two turns."""
    nowhere = f"http://127.0.0.1:{free_port()}"
    result = run(runner, "ask", "--server", nowhere, BACKDOOR_Q)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert squash(f"no paper-assistant server answers at {nowhere}") in squash(result.stderr)
    app = FastAPI()
    app.include_router(create_router(pa))
    with running_app(app) as url:
        remote, _ = connect(load_settings(store_dir=store, llm_backend="none"), url)
        first = remote.ask(BACKDOOR_Q)
    with pytest.raises(ServerError, match="stopped answering"):
        remote.ask("Who wrote it?", [first.as_turn()])
    with pytest.raises(ServerError, match="stopped answering"):
        list(remote.ask_stream("Who wrote it?"))


def test_an_empty_question_exits_2_and_asks_nothing(runner, served):
    url, log = served
    before = list(log.paths)
    result = run(runner, "ask", "--server", url, BACKDOOR_Q, "  ")
    assert result.exit_code == 2 and "the message is empty" in result.stderr
    assert result.stdout == "" and log.paths == before


def test_a_server_wanting_a_key_gets_it_from_the_environment(runner, pa, store, monkeypatch):
    app = FastAPI()
    app.include_router(create_router(pa, api_key="client-key-42"))
    with running_app(app) as url:
        keyless = run(runner, "ask", "--json", "--server", url, BACKDOOR_Q)
        assert keyless.exit_code == 2 and "Traceback" not in keyless.output
        assert squash(f"error: the server at {url} wants its API key: set "
                      f"PAPER_ASSISTANT_API_KEY") in squash(keyless.stderr)
        monkeypatch.setattr(client, "DEFAULT_URL", url)
        monkeypatch.setattr(cli, "in_process", Forbidden)
        monkeypatch.setenv("PAPER_ASSISTANT_API_KEY", "client-key-42")
        keyed = ok(run(runner, "ask", "--json", "--store", store, "--backend", "none", BACKDOOR_Q))
    assert USING in keyed.stderr
    assert answers_json(keyed.stdout)[0]["citations"][0]["authors"][0] == "zhixuan ma"


def test_the_command_loads_no_index_or_model_code_until_it_answers_in_process():
    """`ask` through a running server needs neither the index nor llama-index: importing the
    command loads neither (a second of every shell question's start otherwise)."""
    script = ("import sys, assistant.cli\n"
              "print(sorted(m for m in ('llama_index.core', 'chromadb', 'assistant.library', 'assistant.index')"
              " if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
