"""Servers for tests, on a free loopback port.

    free_port()                                   a free TCP port on 127.0.0.1
    start_process_server(cmd, ready_url, timeout, name) -> stop
                                                  a subprocess server, polled until ready
    with running_app(app) as base_url: ...        an ASGI app under uvicorn in a thread
    CHROMIUM, CHROMIUM_ARGS, GRADIO_WARNINGS      for the browser tests and the Gradio app's

Used by conftest.py (Chroma), llm_server.py (llama_cpp.server) and the tests of the app
(test_api, test_server, test_ui).
"""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Callable, Iterator, Mapping, Sequence

HOST = "127.0.0.1"
# Debian's Chromium (`make browser`) for the browser tests; Playwright never downloads a browser.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# For the tests of the Gradio app: its queue uses pandas options that pandas 3 deprecates.
GRADIO_WARNINGS = ["ignore:.*no_silent_downcasting.*", "ignore:The copy keyword is deprecated.*"]


BOT_MESSAGES = "#pa-chat [data-testid='bot']"


def open_page(pg, url: str, timeout: float = 60.0) -> None:
    """Load the page and wait until its load events (the collection's facets and stats, the kept
    conversation) have answered: their one queue stream ends, finished or closed by the page.
    A test that acted earlier could see their late update replace the author box's choices."""
    ended = []
    on_end = lambda r: ended.append(r) if "/gradio_api/queue/data" in r.url else None  # noqa: E731
    pg.on("requestfinished", on_end)
    pg.on("requestfailed", on_end)
    pg.goto(url)
    pg.wait_for_selector("#pa-input textarea")
    deadline = time.monotonic() + timeout
    while not ended and time.monotonic() < deadline:
        pg.wait_for_timeout(50)  # lets Playwright deliver the request events
    pg.remove_listener("requestfinished", on_end)
    pg.remove_listener("requestfailed", on_end)
    assert ended, f"the page's load events did not answer within {timeout:.0f} s"


def wait_for_reply(page, n_before: int) -> None:
    """Wait until the page's chat shows a bot message beyond the first `n_before`."""
    page.wait_for_function(
        "n => document.querySelectorAll('#pa-chat [data-testid=\"bot\"]').length > n", arg=n_before)


def chat_on_page(page, text: str) -> str:
    """Send `text` from the page's chat box, wait until the answer is done; its text."""
    n_before = page.locator(BOT_MESSAGES).count()
    page.fill("#pa-input textarea", text)
    page.press("#pa-input textarea", "Enter")
    wait_for_reply(page, n_before)
    page.wait_for_selector("#pa-status:has-text('done in')")
    return page.locator(BOT_MESSAGES).last.inner_text()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start_process_server(cmd: Sequence[str], ready_url: str, timeout: float, name: str, *,
                         env: Mapping[str, str] | None = None,
                         stop_timeout: float = 15.0) -> Callable[[], None]:
    """Run `cmd` (stdout and stderr to a log) and wait until GET `ready_url` answers 200.

    `env` is added to os.environ. If the process exits, or does not answer within `timeout`
    seconds, it is stopped and RuntimeError is raised with the end of its log, naming it `name`.
    Returns `stop()`, which terminates it (killing it after `stop_timeout` s); idempotent.
    """
    log = tempfile.TemporaryFile(mode="w+b")
    proc = subprocess.Popen([str(part) for part in cmd], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})

    def read_log() -> str:
        log.flush()
        log.seek(0)
        return log.read().decode("utf-8", "replace")[-8000:]

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=stop_timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=stop_timeout)
        if not log.closed:
            log.close()

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            text = read_log()
            stop()
            raise RuntimeError(f"{name} exited with code {proc.returncode}:\n{text}")
        try:
            with urllib.request.urlopen(ready_url, timeout=2) as resp:
                if resp.status == 200:
                    return stop
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        if time.monotonic() > deadline:
            text = read_log()
            stop()
            raise RuntimeError(f"{name} did not answer within {timeout:g}s:\n{text}")
        time.sleep(0.25)


@contextlib.contextmanager
def running_app(app, *, startup_timeout: float = 60.0) -> Iterator[str]:
    """Serve the ASGI `app` with uvicorn in a daemon thread; yield "http://127.0.0.1:PORT".

    Raises RuntimeError if the server has not started within `startup_timeout` seconds.
    """
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning",
                                           access_log=False, timeout_graceful_shutdown=1))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + startup_timeout
        while not server.started:
            if time.time() > deadline or not thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.05)
        yield f"http://{HOST}:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
