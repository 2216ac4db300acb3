"""Faults (issue 11, items 1-4): a model server killed before and during an answer, a Chroma
server stopped mid-session, `serve` SIGKILLed while the Corpus tab ingests, two uploads at once,
and 16 + 4 simultaneous conversations. Real servers on loopback (llama_cpp.server with SmolLM2,
`chroma run`, `paper-assistant serve` as a subprocess); the longer runs are benchmarks/faults.py.

Chosen behaviour (documented in assistant/api/__init__.py and the README): a model that is down
gives HTTP 200 with the cited extracts and a notice (`> Note: …` at the end of the content, and
`paper_assistant.notices`); a store that is down gives 503 `backend_unavailable`.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest

from conftest import SEED_CONVERSATIONS, seed_store, start_chroma_server
from faultkit import (PageSession, run_cli, papers_file, sigkill_port, start_llm, start_serve,
                      store_consistency, v1_conversation)
from llm_server import smollm2_server_or_skip
from servers import GRADIO_WARNINGS, free_port, running_app

pytestmark = [pytest.mark.filterwarnings(w) for w in GRADIO_WARNINGS]

MCE_Q = "Which paper proposes Meta Context Engineering?"
MCE_ID = "hb5b66a4fba54"
EXTRACTS = "Extracts from the most relevant papers"
FAILED = "The language model failed"

# Sixteen two-turn conversations, each about its own paper of the seed corpus.
CONVERSATIONS = SEED_CONVERSATIONS


def _v1_plain(url: str, question: str) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", timeout=300, json={
        "model": "paper-assistant", "messages": [{"role": "user", "content": question}]})


def _v1_stream_text(url: str, question: str) -> tuple[str, dict]:
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=300)
    chunks = list(client.chat.completions.create(
        model="paper-assistant", stream=True, messages=[{"role": "user", "content": question}]))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return text, [c for c in chunks if c.choices][-1].to_dict()


# ============================================================================ 1. model server down

@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    """A SmolLM2 llama_cpp.server on a fixed port of its own (the session's shared one must not
    be killed), the seeded store, and an assistant using it through `--backend openai`."""
    model = smollm2_server_or_skip()
    from assistant.config import load_settings
    from assistant.library import PaperAssistant

    folder = tmp_path_factory.mktemp("llm-down")
    seed_store(folder / "store")
    port = free_port()
    state = {"port": port, "model": model, "stop": None}

    def up():
        state["url"], state["stop"] = start_llm(port, model)

    def down():
        sigkill_port(port)
        if state["stop"]:
            state["stop"]()  # reaps the killed process, closes its log
            state["stop"] = None

    state.update(up=up, down=down, store=folder / "store", url=f"http://127.0.0.1:{port}/v1")
    settings = load_settings(llm_backend="openai", store_dir=folder / "store",
                             llm_base_url=state["url"], llm_model="smollm2", llm_timeout=120)
    state["pa"] = PaperAssistant(settings)
    yield state
    down()


def _page_answer(pa, message: str, tmp_path: Path) -> str:
    """The page's chat handler (what the Send button runs): its final chat message."""
    from assistant.ui import build_ui  # noqa: F401 - imports the page's modules
    from assistant.ui.handlers import Page, PageHandlers

    page = Page(chatbot="chatbot", status="status", msg="msg", session="session",
                sources="sources", copy_md="copy", bib="bib", table_csv="table")
    handlers = PageHandlers(pa, page, tmp_path)
    last = None
    for update in handlers.respond(message, None, "auto", [], [], None, None, None):
        last = update
    return last["chatbot"][-1]["content"]


def _assert_extracts_with_notice(text: str, where: str) -> None:
    assert EXTRACTS in text, (where, text[:400])
    assert FAILED in text and "Note" in text, (where, text[-400:])
    assert "Meta Context Engineering" in text, (where, text[:400])


@pytest.mark.slow
def test_model_server_down_before_the_answer_then_back(llm, tmp_path):
    """Killed before the question: page, CLI and /v1 (plain and streamed) answer 200 with the cited
    extracts and a visible notice; once the server is back, the next question uses it."""
    llm["down"]()
    pa = llm["pa"]
    from assistant.server import create_app

    with running_app(create_app(pa)) as url:
        r = _v1_plain(url, MCE_Q)
        assert r.status_code == 200, r.text[:300]
        body = r.json()
        _assert_extracts_with_notice(body["choices"][0]["message"]["content"], "/v1")
        assert [c["paper_id"] for c in body["citations"]] == [MCE_ID]
        assert any(FAILED in n for n in body["paper_assistant"]["notices"])
        text, last = _v1_stream_text(url, MCE_Q)
        _assert_extracts_with_notice(text, "/v1 stream")
        assert [c["paper_id"] for c in last["citations"]] == [MCE_ID]
        assert FAILED not in last["answer"]  # the checked answer itself carries no notice
    _assert_extracts_with_notice(_page_answer(pa, MCE_Q, tmp_path), "page")

    cli = run_cli("ask", MCE_Q, "--backend", "openai", "--store", str(llm["store"]),
                  PAPER_ASSISTANT_LLM_BASE_URL=llm["url"], PAPER_ASSISTANT_LLM_MODEL="smollm2")
    assert cli.returncode == 0, cli.stderr[-2000:]
    assert EXTRACTS in cli.stdout and "Meta Context Engineering" in cli.stdout, cli.stdout[-1000:]
    assert "note:" in cli.stderr and FAILED in " ".join(cli.stderr.split()), cli.stderr[-1000:]
    assert "Traceback" not in cli.stderr

    llm["up"]()  # the same address, the same running assistant
    answer = pa.ask(MCE_Q)
    assert "first_token" in answer.timings, "the model was not asked again"
    assert not any(FAILED in n for n in answer.notices), answer.notices
    assert [c.paper_id for c in answer.citations][:1] == [MCE_ID]


@pytest.mark.slow
def test_model_server_killed_during_the_answer_then_back(llm, tmp_path, monkeypatch):
    """SIGKILLed after its first words: /v1 and the page answer with the cited extracts and the
    notice; the next question after it restarts uses it again."""
    import assistant.answer.engine as llm_module  # the engine's own name for the stream

    real = llm_module.stream_chat_events  # what the engine streams the model's answer through
    kills = []

    def kill_after_first_words(model, messages, **kwargs):
        for i, event in enumerate(real(model, messages, **kwargs)):
            if i == 2:  # the server is streaming this answer right now
                kills.append(sigkill_port(llm["port"]))
            yield event

    monkeypatch.setattr(llm_module, "stream_chat_events", kill_after_first_words)
    pa = llm["pa"]
    from assistant.server import create_app

    if llm["stop"] is None:
        llm["up"]()
    with running_app(create_app(pa)) as url:
        r = _v1_plain(url, MCE_Q)
    assert kills == [True], "the server was not killed mid-answer"
    assert r.status_code == 200, r.text[:300]
    _assert_extracts_with_notice(r.json()["choices"][0]["message"]["content"], "/v1")
    assert [c["paper_id"] for c in r.json()["citations"]] == [MCE_ID]
    llm["down"]()

    llm["up"]()
    _assert_extracts_with_notice(_page_answer(pa, MCE_Q, tmp_path), "page")
    assert kills == [True, True]
    llm["down"]()

    monkeypatch.setattr(llm_module, "stream_chat_events", real)
    llm["up"]()
    answer = pa.ask(MCE_Q)
    assert "first_token" in answer.timings and not any(FAILED in n for n in answer.notices)


def test_model_dying_after_a_checked_sentence_still_ends_with_extracts(seed_assistant, monkeypatch):
    """A model that dies mid-answer after one sentence passed the check: the fragment is kept and
    the cited extracts follow (before the fix the reply was the fragment alone, while the notice
    promised extracts). A scripted stream: a real kill cannot be timed to a sentence boundary."""
    import assistant.answer.engine as llm_module  # the engine's own name for the stream
    from assistant.library import PaperAssistant
    from assistant.llm import BackendError

    def dies_after_a_sentence(model, messages, **kwargs):
        yield "text", "Meta Context Engineering (MCE) is a bi-level framework that supersedes static "
        yield "text", "CE heuristics [1]. It also"
        raise BackendError("OpenAI-compatible backend failed: peer closed connection")

    monkeypatch.setattr(llm_module, "stream_chat_events", dies_after_a_sentence)
    settings = seed_assistant.settings.model_copy(update={
        "llm_backend": "openai", "llm_base_url": f"http://127.0.0.1:{free_port()}/v1"})
    pa = PaperAssistant(settings, store=seed_assistant.store)
    answer = pa.ask(MCE_Q)
    assert "bi-level framework" in answer.answer.split(EXTRACTS)[0], answer.answer
    assert EXTRACTS in answer.answer, answer.answer
    assert any(FAILED in n for n in answer.notices)
    assert [c.paper_id for c in answer.citations] == [MCE_ID]


# ============================================================================ 2. Chroma restarts

@pytest.mark.slow
def test_chroma_server_stopped_mid_session_then_restarted(tmp_path):
    """`serve --chroma-url`: while Chroma is down, /v1 is a 503 naming the server, the page's
    /chat and `search` say so; after it restarts on the same folder, the same `serve` answers."""
    from gradio_client import Client

    port = free_port()
    url, stop = start_chroma_server(tmp_path / "chroma", port=port)
    serve = start_serve(tmp_path / "store", chroma_url=url)
    try:
        first = _v1_plain(serve.url, MCE_Q)
        assert first.status_code == 200 and first.json()["citations"][0]["paper_id"] == MCE_ID
        page = Client(serve.url + "/", verbose=False)
        stop()

        down = _v1_plain(serve.url, MCE_Q)
        assert down.status_code == 503, down.text[:300]
        error = down.json()["error"]
        assert error["code"] == "backend_unavailable" and url in error["message"], error
        assert "not answering" in error["message"]
        streamed = httpx.post(serve.url + "/v1/chat/completions", timeout=60, json={
            "model": "paper-assistant", "stream": True,
            "messages": [{"role": "user", "content": MCE_Q}]})
        assert streamed.status_code == 503, streamed.text[:300]
        assert httpx.get(serve.url + "/healthz", timeout=30).status_code == 503
        with pytest.raises(Exception) as e:
            page.predict(MCE_Q, api_name="/chat")
        assert "Chroma server" in str(e.value), str(e.value)[:500]
        cli = run_cli("search", "context engineering", "--chroma-url", url,
                      "--store", str(tmp_path / "cli-store"), timeout=120)
        assert cli.returncode == 2, (cli.returncode, cli.stderr[-1500:])
        assert "error:" in cli.stderr and "Chroma server" in cli.stderr and "Traceback" not in cli.stderr

        url2, stop = start_chroma_server(tmp_path / "chroma", port=port)
        assert url2 == url
        again = _v1_plain(serve.url, MCE_Q)
        assert again.status_code == 200, again.text[:300]
        assert again.json()["citations"][0]["paper_id"] == MCE_ID
        assert MCE_ID in [c["paper_id"] for c in page.predict(MCE_Q, api_name="/chat")["citations"]]
        assert httpx.get(serve.url + "/healthz", timeout=30).json()["papers"] == 20
        cli = run_cli("search", "context engineering", "--chroma-url", url,
                      "--store", str(tmp_path / "cli-store"), "--json", timeout=120)
        assert cli.returncode == 0 and MCE_ID in cli.stdout, cli.stderr[-1500:]
        page.close()
    finally:
        serve.stop()
        stop()


# ============================================================================ 3. interrupted upload

UPLOAD_PAPERS = 48
KILL_AFTER = 16  # papers written (one batch: `ingest_batch_papers`) before the SIGKILL


@pytest.fixture(scope="module")
def killed_upload(tmp_path_factory):
    """Upload UPLOAD_PAPERS real abstracts through the Corpus tab and SIGKILL `serve` once the
    progress bar passes KILL_AFTER; then restart it on the same store."""
    from assistant.config import load_settings

    folder = tmp_path_factory.mktemp("killed-upload")
    papers = papers_file(folder / "arxiv.jsonl", UPLOAD_PAPERS)
    batches = {"PAPER_ASSISTANT_INGEST_BATCH_PAPERS": str(KILL_AFTER)}
    serve = start_serve(seed_store(folder / "store"), env=batches)
    seen: list[tuple[int, int]] = []

    def progress(done, total):
        seen.append((done, total))
        if done >= KILL_AFTER:
            serve.kill()

    page = PageSession(serve.url)
    try:
        with pytest.raises((httpx.HTTPError, RuntimeError)):  # the connection dies with the server
            page.upload(papers, progress)
    finally:
        page.close()
        serve.stop()  # killed above; if the upload went otherwise, no server is left behind
    assert serve.proc.returncode == -9 and seen and seen[-1][0] < UPLOAD_PAPERS, seen
    settings = load_settings(llm_backend="none", store_dir=folder / "store")
    after_kill = store_consistency(settings)
    serve = start_serve(folder / "store", env=batches)
    yield {"folder": folder, "papers": papers, "serve": serve, "after_kill": after_kill,
           "settings": settings}
    serve.stop()


@pytest.mark.slow
def test_upload_killed_mid_ingest_leaves_a_consistent_store_and_resumes(killed_upload):
    after = killed_upload["after_kill"]
    assert after["consistent"], after
    assert 20 + KILL_AFTER <= after["whole"] < 20 + UPLOAD_PAPERS, after
    assert after["partial"] == [] and after["duplicate_ids"] == 0
    serve = killed_upload["serve"]
    assert httpx.get(serve.url + "/healthz").json()["papers"] == after["whole"]

    page = PageSession(serve.url)
    result = page.upload(killed_upload["papers"])
    page.close()
    assert result["ok"], result["status"]
    written_before = after["whole"] - 20
    assert (f"{UPLOAD_PAPERS} papers ({UPLOAD_PAPERS - written_before} new, 0 updated, "
            f"{written_before} unchanged)") in result["status"], result["status"]
    assert f'data-papers="{20 + UPLOAD_PAPERS}"' in result["status"]
    now = store_consistency(killed_upload["settings"])
    assert now["consistent"] and now["whole"] == 20 + UPLOAD_PAPERS and now["duplicate_ids"] == 0, now


@pytest.mark.slow
def test_two_uploads_at_once_from_two_sessions_both_land(killed_upload):
    """One writer at a time: the second upload waits in the "corpus" queue (concurrency 1) until
    the first is written, then lands; no paper is lost."""
    serve, folder = killed_upload["serve"], killed_upload["folder"]
    files = [papers_file(folder / "a.jsonl", 30, offset=1000),
             papers_file(folder / "b.jsonl", 30, offset=2000)]
    before = httpx.get(serve.url + "/healthz").json()["papers"]
    sessions = [PageSession(serve.url), PageSession(serve.url)]
    events: list[list[tuple[str, float, dict]]] = [[], []]
    start = threading.Barrier(2)

    def upload(i):
        with files[i].open("rb") as fh:
            stored = sessions[i].http.post(serve.url + "/gradio_api/upload",
                                           files={"files": (files[i].name, fh)}).json()[0]
        value = {"path": stored, "orig_name": files[i].name, "meta": {"_type": "gradio.FileData"}}
        start.wait()
        return sessions[i].run_event("pa-upload-btn", [value],
                                     lambda m: events[i].append((m.get("msg"), time.monotonic(), m)))

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(upload, range(2)))
    for s in sessions:
        s.close()
    statuses = [str(d["output"]["data"]) for d in done]
    assert all(d["success"] for d in done) and all("✓ Added" in s for s in statuses), statuses
    spans = sorted((next(t for m, t, _ in ev if m == "process_starts"),
                    next(t for m, t, _ in ev if m == "process_completed")) for ev in events)
    assert spans[1][0] >= spans[0][1] - 0.5, f"two writers ran at once: {spans}"
    now = store_consistency(killed_upload["settings"])
    assert now["consistent"] and now["whole"] == before + 60, now


# ============================================================================ 4. load

PAGE_CONVERSATIONS = 2  # benchmarks/faults.py runs 4 (and the local model)


@pytest.mark.slow
def test_sixteen_v1_and_page_conversations_at_once(tmp_path):
    """16 two-turn /v1 conversations and 2 two-turn page conversations at the same time, backend
    `none`: every request answered (no 5xx, none dropped), each follow-up about its own paper."""
    serve = start_serve(seed_store(tmp_path / "store"))
    try:
        start = threading.Barrier(len(CONVERSATIONS) + PAGE_CONVERSATIONS)

        def v1(i):
            question, author = CONVERSATIONS[i]
            start.wait()
            return v1_conversation(serve.url, question)

        def page(i):
            question, author = CONVERSATIONS[i]
            session = PageSession(serve.url)
            start.wait()
            first = session.chat(question)
            second = session.chat("Who wrote it?", first["history"])
            session.close()
            return first, second

        t0 = time.monotonic()
        with ThreadPoolExecutor(len(CONVERSATIONS) + PAGE_CONVERSATIONS) as pool:
            v1_futures = [pool.submit(v1, i) for i in range(len(CONVERSATIONS))]
            page_futures = [pool.submit(page, i) for i in range(PAGE_CONVERSATIONS)]
            v1_results = [f.result(timeout=600) for f in v1_futures]
            page_results = [f.result(timeout=600) for f in page_futures]
        wall = time.monotonic() - t0
        papers = {}
        for (question, author), (first, second) in zip(CONVERSATIONS, v1_results):
            cited = [c["paper_id"] for c in first["citations"]]
            assert cited, question
            assert author in second["choices"][0]["message"]["content"], (question, second)
            assert [c["paper_id"] for c in second["citations"]] == cited[:1], question
            papers[question] = cited[0]
        assert len(set(papers.values())) == len(CONVERSATIONS)
        for (question, author), (first, second) in zip(CONVERSATIONS, page_results):
            assert first["citations"][0]["paper_id"] == papers[question], question
            assert author in second["answer"], (question, second["answer"][:300])
            assert [c["paper_id"] for c in second["citations"]] == [papers[question]]
        assert serve.proc.poll() is None
        # on a cold serve: 174-212 s here before concurrent questions shared their sentence
        # embeddings (SentenceEmbeddings), ~20 s after; the bound leaves room for a busy machine
        assert wall < 120, f"{len(CONVERSATIONS)} conversations took {wall:.0f} s"
    finally:
        serve.stop()


def test_concurrent_questions_embed_each_sentence_once(seed_assistant):
    """Threads asking about the same papers at once wait for the sentences another thread is
    embedding instead of embedding them again (the cold-start pile-up of the load test)."""
    from assistant.answer.evidence import SentenceEmbeddings
    from assistant.embed import embed_texts

    embedded: list[str] = []
    lock = threading.Lock()

    class Counting:
        def embed_texts(self, texts, batch_size=32):
            with lock:
                embedded.extend(texts)
            time.sleep(0.2)  # long enough for every thread to arrive while it runs
            return embed_texts(seed_assistant.store.embedder, texts, batch_size)

    sentences = [s for p in seed_assistant.store.papers().values()
                 for s in p.abstract.split(". ")][:120]
    embed = SentenceEmbeddings(Counting())
    start = threading.Barrier(8)

    def ask(i):
        start.wait()
        return embed([f"question {i}"] + sentences)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, range(8)))
    assert sorted(embedded) == sorted(set(sentences) | {f"question {i}" for i in range(8)})
    for r in results[1:]:
        assert (abs(r[1:] - results[0][1:]) < 1e-6).all()


# ============================================================================ 5. serve restarted

BACKDOOR_Q = "Which paper studies backdoor attacks in federated learning?"


@pytest.mark.browser
def test_serve_restarted_under_an_open_page_keeps_the_conversation(tmp_path):
    """Ask on the page; `serve` stops and starts again on the same port and store (nothing of
    the conversation is left in the server). The open page's next follow-up still means the
    first answer's paper (the session continues from the browser's copy), and a reload brings
    the whole conversation back. Before the page's key was kept in the store, the restarted
    server could not read what the browser kept."""
    import os

    from servers import BOT_MESSAGES, CHROMIUM, CHROMIUM_ARGS, chat_on_page

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (`make browser`)")
    from playwright.sync_api import sync_playwright

    store = seed_store(tmp_path / "store")
    port = free_port()
    serve = start_serve(store, port=port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1400, "height": 1050}).new_page()
            page.set_default_timeout(60_000)
            page.goto(serve.url + "/")
            page.wait_for_selector("#pa-input textarea")
            chat_on_page(page, BACKDOOR_Q)
            cited = page.locator("#pa-sources .latest .src-card").first.get_attribute("data-paper-id")
            page.wait_for_function("(localStorage.getItem('paper-assistant-conversation') || '').length > 200")
            # SIGTERM (a service manager, or Ctrl-C) with the page open: its event stream never
            # ends by itself, so serve stops after `serve_shutdown_grace` instead of waiting
            started = time.monotonic()
            serve.proc.terminate()
            serve.proc.wait(timeout=30)
            assert time.monotonic() - started < 15
            serve.stop()
            serve = start_serve(store, port=port)
            # the page stayed open: its next follow-up continues the kept conversation
            kept = page.evaluate("localStorage.getItem('paper-assistant-conversation')")
            assert "Haichang Gao" in chat_on_page(page, "Who wrote it?")
            latest = page.locator("#pa-sources .latest .src-card")
            assert [latest.nth(i).get_attribute("data-paper-id") for i in range(latest.count())] == [cited]
            page.wait_for_function("v => localStorage.getItem('paper-assistant-conversation') !== v",
                                   arg=kept)  # the browser's copy now holds both answers
            # a reload: both answers come back from the browser
            page.reload()
            page.wait_for_selector("#pa-status:has-text('Conversation restored from this browser: 2 answers')")
            users = page.locator("#pa-chat [data-testid='user']")
            assert BACKDOOR_Q in users.first.inner_text() and "Who wrote it?" in users.last.inner_text()
            assert page.locator(BOT_MESSAGES).count() == 2
            browser.close()
    finally:
        serve.stop()
    assert ((store / "page-secret").stat().st_mode & 0o777) == 0o600
