"""The server as a whole: many users at once, each with their own conversation; what it takes to
listen beyond loopback; login and bearer token; `serve()` on a fresh store.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest
from fastapi.testclient import TestClient

from assistant import PaperAssistant, load_settings
from assistant.server import (API_KEY_ENV, AUTH_ENV, CONCURRENCY, ServeError, check_exposure,
                              create_app, is_loopback, parse_auth, serve)
from conftest import SEED_CONVERSATIONS, seeded_assistant
from servers import CHROMIUM, CHROMIUM_ARGS, GRADIO_WARNINGS, chat_on_page, free_port, running_app

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.filterwarnings(w) for w in GRADIO_WARNINGS]

KEY = "server-test-key-987"

# Eight conversations, each about its own paper: (question, an author of the paper it must find).
CONVERSATIONS = SEED_CONVERSATIONS[:8]


class SlowAssistant(PaperAssistant):
    """The real assistant, but every answer takes at least `delay` seconds (a slow model)."""

    delay = 0.0

    def ask(self, *a, **k):
        time.sleep(self.delay)
        return super().ask(*a, **k)

    def ask_stream(self, *a, **k):
        time.sleep(self.delay)
        yield from super().ask_stream(*a, **k)


@pytest.fixture(scope="module")
def pa(tmp_path_factory):
    return seeded_assistant(tmp_path_factory.mktemp("server-store"), SlowAssistant)


@pytest.fixture(scope="module")
def app(pa):
    return create_app(pa)


@pytest.fixture(scope="module")
def server(app):
    """Base URL of the live app."""
    with running_app(app) as url:
        yield url


@pytest.fixture()
def slow(pa):
    pa.delay = 1.0
    yield pa
    pa.delay = 0.0


def _conversation_via_openai(url: str, question: str, start: threading.Barrier):
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
    start.wait()
    first = client.chat.completions.create(model="paper-assistant",
                                           messages=[{"role": "user", "content": question}])
    second = client.chat.completions.create(model="paper-assistant", messages=[
        {"role": "user", "content": question},
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": "Who wrote it?"}])
    return first, second


def test_eight_simultaneous_api_conversations_each_keep_their_own_paper(server, pa):
    start = threading.Barrier(len(CONVERSATIONS))
    with ThreadPoolExecutor(len(CONVERSATIONS)) as pool:
        futures = [pool.submit(_conversation_via_openai, server, q, start)
                   for q, _ in CONVERSATIONS]
        results = [f.result(timeout=300) for f in futures]
    papers = pa.store.papers()
    seen = set()
    for (question, author), (first, second) in zip(CONVERSATIONS, results):
        cited = [c["paper_id"] for c in first.to_dict()["citations"]]
        assert cited and author in papers[cited[0]].authors, (question, cited)
        # the follow-up resolves to this conversation's own paper, not another user's
        assert author in second.choices[0].message.content, (question, second.choices[0].message.content)
        assert [c["paper_id"] for c in second.to_dict()["citations"]] == cited[:1]
        seen.add(cited[0])
    assert len(seen) == len(CONVERSATIONS)


def test_eight_gradio_chats_run_concurrently_not_one_after_another(server, slow):
    """Each answer takes >= 1 s; eight at once must finish in far less than 8 s."""
    from gradio_client import Client

    clients = [Client(server + "/", verbose=False) for _ in CONVERSATIONS]
    start = threading.Barrier(len(CONVERSATIONS))

    def chat(i):
        question, _ = CONVERSATIONS[i]
        start.wait()
        first = clients[i].predict(question, api_name="/chat")
        return first, time.perf_counter()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(len(CONVERSATIONS)) as pool:
        results = list(pool.map(chat, range(len(CONVERSATIONS))))
    elapsed = max(t for _, t in results) - t0
    with ThreadPoolExecutor(len(clients)) as pool:  # each close waits up to 1 s for its heartbeat
        list(pool.map(lambda c: c.close(), clients))
    assert elapsed < 5.0, f"8 chats of >= 1 s each took {elapsed:.1f} s: they were serialised"
    for (question, author), (first, _) in zip(CONVERSATIONS, results):
        assert any(author in c["authors"] for c in first["citations"]), question


def test_eight_streamed_api_calls_overlap(server, slow):
    def stream(q):
        client = openai.OpenAI(base_url=server + "/v1", api_key="unused", max_retries=0)
        chunks = list(client.chat.completions.create(
            model="paper-assistant", stream=True, messages=[{"role": "user", "content": q}]))
        return chunks[-1].to_dict()["citations"]

    t0 = time.perf_counter()
    with ThreadPoolExecutor(len(CONVERSATIONS)) as pool:
        cites = list(pool.map(stream, [q for q, _ in CONVERSATIONS]))
    assert time.perf_counter() - t0 < 5.0
    assert all(cites)


def test_queue_concurrency_is_set_deliberately(app, server):
    app_blocks = app.state.blocks  # the Blocks mounted by create_app
    assert app_blocks._queue.default_concurrency_limit == CONCURRENCY >= 8


@pytest.mark.browser
def test_two_browser_sessions_have_separate_conversations(server):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (`make browser`)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            pages = []
            for _ in range(2):
                pg = browser.new_context().new_page()
                pg.set_default_timeout(30_000)
                pg.goto(server + "/")
                pg.wait_for_selector("#pa-input textarea")
                pages.append(pg)
            (q_a, author_a), (q_b, author_b) = CONVERSATIONS[0], CONVERSATIONS[1]
            chat_on_page(pages[0], q_a)
            chat_on_page(pages[1], q_b)
            assert author_a in chat_on_page(pages[0], "Who wrote it?")
            assert author_b in chat_on_page(pages[1], "Who wrote it?")
        finally:
            browser.close()


# ----------------------------------------------------------------------------- exposure rules

def test_loopback_detection():
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.5", "10.0.0.1", "example.com", ""):
        assert not is_loopback(host), host


def test_exposure_rules():
    check_exposure("127.0.0.1", None, False, None)  # loopback: nothing needed
    check_exposure("0.0.0.0", None, True, None)  # explicit --no-auth
    check_exposure("0.0.0.0", ("u", "p"), False, "key")  # login + API key
    with pytest.raises(ServeError, match="--auth"):
        check_exposure("0.0.0.0", None, False, None)
    with pytest.raises(ServeError, match="--auth"):
        check_exposure("0.0.0.0", None, False, "key")  # a key alone leaves the page open
    with pytest.raises(ServeError, match="--api-key"):
        check_exposure("192.168.1.5", ("u", "p"), False, None)
    assert parse_auth("me:se:cret") == ("me", "se:cret")
    for bad in ("nopassword", ":p", "u:"):
        with pytest.raises(ServeError):
            parse_auth(bad)


@pytest.fixture()
def no_uvicorn(monkeypatch):
    """serve() up to the point of listening; the app it would run is captured, not served."""
    import uvicorn

    calls = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: calls.append((app, kw)))
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    monkeypatch.delenv(AUTH_ENV, raising=False)
    return calls


def test_serve_refuses_beyond_loopback_without_auth(no_uvicorn, tmp_path):
    settings = load_settings(llm_backend="none", store_dir=tmp_path / "store")
    with pytest.raises(ServeError, match="refusing to listen on 0.0.0.0"):
        serve(host="0.0.0.0", port=free_port(), settings=settings)
    with pytest.raises(ServeError, match="API would be open"):
        serve(host="0.0.0.0", port=free_port(), auth="user:pw", settings=settings)
    assert no_uvicorn == []
    assert not (tmp_path / "store").exists()  # refused before anything was loaded


def test_serve_beyond_loopback_requires_the_token_and_hides_secrets(no_uvicorn, pa, monkeypatch,
                                                                    capsys):
    monkeypatch.setenv(API_KEY_ENV, KEY)
    serve(host="0.0.0.0", port=7999, auth="alice:wonderland-pw", pa=pa)
    (app, kw), = no_uvicorn
    assert kw["host"] == "0.0.0.0" and kw["port"] == 7999
    out = capsys.readouterr()
    assert ":7999/" in out.out
    assert KEY not in out.out + out.err and "wonderland-pw" not in out.out + out.err
    with TestClient(app) as tc:
        assert tc.get("/v1/models").status_code == 401
        assert tc.get("/v1/models", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
        assert tc.get("/config").status_code == 401  # the page needs the login
        assert tc.post("/login", data={"username": "alice", "password": "nope"}).status_code == 400
        assert tc.post("/login", data={"username": "alice",
                                       "password": "wonderland-pw"}).status_code == 200
        page = tc.get("/").text + tc.get("/config").text
        assert KEY not in page and "wonderland-pw" not in page
        assert tc.get("/healthz").json()["status"] == "ok"


def test_serve_no_auth_beyond_loopback_warns(no_uvicorn, pa, capsys):
    serve(host="0.0.0.0", port=7998, no_auth=True, pa=pa)
    assert len(no_uvicorn) == 1
    assert "WITHOUT authentication" in capsys.readouterr().out


def test_login_and_token_on_a_live_server(pa):
    from gradio_client import Client

    app = create_app(pa, api_key=KEY, auth=("bob", "builder-pw"))
    with running_app(app) as url:
        r = httpx.get(url + "/v1/models", timeout=30)
        assert r.status_code == 401
        client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
        assert [m.id for m in client.models.list()] == ["paper-assistant"]
        with pytest.raises(Exception):
            Client(url + "/", verbose=False)  # no login
        gc = Client(url + "/", auth=("bob", "builder-pw"), verbose=False)
        answer = gc.predict(CONVERSATIONS[0][0], api_name="/chat")
        assert answer["citations"]
        gc.close()


def test_serve_indexes_a_fresh_store_and_prints_the_url(tmp_path):
    """What `make run` does on a fresh clone, in a subprocess on a free loopback port. Stopped
    as a service manager stops it (SIGTERM), it leaves no temporary folder behind."""
    port = free_port()
    code = ("import sys; from assistant.config import load_settings; "
            "from assistant.server import serve; "
            f"serve(port={port}, settings=load_settings(llm_backend='none', "
            f"store_dir=sys.argv[1]))")
    temp = tmp_path / "tmp"  # the server's temporary files, watched
    temp.mkdir()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(temp)}
    env.pop(API_KEY_ENV, None)
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "fresh")], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 120
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                if r.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.time() < deadline, "server did not come up"
            time.sleep(0.3)
        assert r.json() == {"status": "ok", "papers": 20}
        assert "Paper Assistant" in httpx.get(f"http://127.0.0.1:{port}/", timeout=10).text
        assert list(temp.glob("paper-assistant-bib-*")), "the page's downloads folder"
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert f"http://127.0.0.1:{port}/" in out
    assert "indexed the bundled demo corpus: 20 papers" in out
    assert not list(temp.glob("paper-assistant-bib-*")), "removed at shutdown"


def test_gradio_skips_rewriting_its_own_stubs_but_writes_a_custom_components(tmp_path):
    """`import assistant` first (as every front does): Gradio's import builds no `.pyi` stub of
    its own components (assistant/gradio_stubs.py; it parsed each one's source, ~1 s a start),
    and a custom component still gets its stub."""
    (tmp_path / "mybox.py").write_text(
        "import gradio as gr\n\n\nclass MyBox(gr.Textbox):\n    \"\"\"A custom component.\"\"\"\n\n"
        "    def __init__(self, value=None, **kwargs):\n        super().__init__(value=value, **kwargs)\n")
    script = (
        "import cProfile, pstats, sys\n"
        "import assistant\n"
        "def stubs_built(code):\n"
        "    profile = cProfile.Profile(); profile.runctx(code, globals(), globals())\n"
        "    return sum(calls for (_, _, name), (_, calls, *_) in pstats.Stats(profile).stats.items()\n"
        "               if name == 'create_pyi')\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "print(stubs_built('import gradio'), stubs_built('import mybox'))\n")
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["0", "1"]
    assert "class MyBox" in (tmp_path / "mybox.pyi").read_text()
