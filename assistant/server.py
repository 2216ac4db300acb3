"""One server for the page and the API: FastAPI with the OpenAI-compatible routes, and the Gradio
page mounted at `/`, over a single shared PaperAssistant.

    from assistant.server import create_app, serve
    serve()                                   # http://127.0.0.1:7860/, what `make run` ends in
    serve(host="0.0.0.0", auth="me:secret", api_key="KEY")

Exposure rules (`check_exposure`): loopback needs nothing. Any other address needs either
`auth` (page login) *and* an API key (bearer token for /v1), or an explicit `no_auth`
acknowledgement. A configured API key is always enforced, loopback included. Secrets are
never printed or logged.
"""
from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import shutil
import socket
from pathlib import Path
from typing import Optional

import gradio as gr
from fastapi import FastAPI

from .api import create_router
from .config import API_KEY_ENV, SERVE_HOST, SERVE_PORT, Settings, load_settings
from .library import PaperAssistant
from .ui import CSS, HEAD, build_ui, export_folder, make_theme

log = logging.getLogger("assistant.server")

AUTH_ENV = "PAPER_ASSISTANT_AUTH"
# Chat sessions answered at once. Retrieval runs in parallel; the local model serialises its own
# generation, so more would only queue inside the engine instead of in Gradio's visible queue.
CONCURRENCY = 8
QUEUE_MAX = 64


class ServeError(RuntimeError):
    """A refusal to start (unsafe binding, malformed --auth); str() is the message to show."""


def is_loopback(host: str) -> bool:
    host = (host or "").strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a hostname: it may resolve to any interface


def parse_auth(auth: Optional[str]) -> Optional[tuple[str, str]]:
    """"user:pass" → ("user", "pass")."""
    if auth is None or auth == "":
        return None
    user, sep, password = auth.partition(":")
    if not sep or not user or not password:
        raise ServeError("--auth must be USER:PASSWORD (both non-empty)")
    return user, password


def check_exposure(host: str, auth: Optional[tuple[str, str]], no_auth: bool,
                   api_key: Optional[str]) -> None:
    """Refuse to serve beyond loopback without protection (or an explicit --no-auth)."""
    if is_loopback(host) or no_auth:
        return
    if auth is None:
        raise ServeError(
            f"refusing to listen on {host}: beyond this machine the page needs a login. "
            f"Pass --auth USER:PASSWORD and --api-key KEY (or set {API_KEY_ENV}), or --no-auth "
            f"to serve without authentication on purpose.")
    if not api_key:
        raise ServeError(
            f"refusing to listen on {host}: the page has a login but the /v1 API would be open. "
            f"Pass --api-key KEY (or set {API_KEY_ENV}), or --no-auth to accept an open API.")


def create_app(pa: PaperAssistant, settings: Optional[Settings] = None,
               api_key: Optional[str] = None, auth: Optional[tuple[str, str]] = None,
               concurrency: int = CONCURRENCY) -> FastAPI:
    """FastAPI app: /healthz, /v1/* (bearer `api_key` if given) and the Gradio page at `/`
    (login `auth` if given)."""
    settings = settings or pa.settings
    exports = export_folder()
    # No /docs: Swagger's assets come from a CDN and the machine is offline by default.
    app = FastAPI(title="paper-assistant", docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=_removed_at_shutdown(exports))
    app.include_router(create_router(pa, api_key=api_key))
    blocks = build_ui(pa, settings, exports)
    blocks.queue(default_concurrency_limit=concurrency, max_size=QUEUE_MAX)
    gr.mount_gradio_app(
        app, blocks, path="/", auth=auth,
        auth_message="Paper Assistant: sign in to continue." if auth else None,
        css=CSS, head=HEAD, theme=make_theme(),
        footer_links=["api"], run_history=False, ssr_mode=False, show_error=True,
        max_file_size="512mb", mcp_server=False,
    )
    app.state.pa, app.state.blocks = pa, blocks
    return app


def _removed_at_shutdown(folder: Path):
    """A lifespan that removes `folder` (the page's downloads) when the server stops, however
    it is stopped gracefully: a SIGTERM'd uvicorn exits by re-raising the signal, skipping
    atexit. Gradio's own lifespan runs inside it (mount_gradio_app wraps the app's)."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        try:
            yield
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    return lifespan


def _display_url(host: str, port: int) -> str:
    shown = host
    if host in ("0.0.0.0", "::", ""):
        shown = socket.gethostname()
    elif ":" in host:
        shown = f"[{host}]"
    return f"http://{shown}:{port}/"


def _warm_up(pa: PaperAssistant) -> None:
    try:
        pa.warm_up()
    except Exception as exc:  # the first question will report the backend problem
        print(f"  note: the language model could not be loaded yet ({type(exc).__name__})", flush=True)


def serve(host: str = SERVE_HOST, port: int = SERVE_PORT, auth: Optional[str] = None,
          no_auth: bool = False, api_key: Optional[str] = None,
          settings: Optional[Settings] = None, pa: Optional[PaperAssistant] = None,
          log_level: str = "warning", progress_factory=None) -> None:
    """Index the bundled corpus if the store is empty, then serve page + API until interrupted.

    Raises ServeError (before anything is loaded or bound) when the binding is unsafe."""
    api_key = api_key or os.environ.get(API_KEY_ENV) or None
    auth = auth if auth is not None else (os.environ.get(AUTH_ENV) or None)
    credentials = parse_auth(auth)
    check_exposure(host, credentials, no_auth, api_key)

    import uvicorn

    pa = pa or PaperAssistant(settings or load_settings())
    settings = pa.settings
    reports = pa.ensure_corpus(progress_factory=progress_factory)
    if reports:
        print(f"indexed the bundled demo corpus: {sum(r.papers for r in reports)} papers", flush=True)
    papers = pa.stats()["papers"]
    app = create_app(pa, settings, api_key=api_key, auth=credentials)
    url = _display_url(host, port)
    print(f"paper-assistant: {papers} papers · answers by {pa.backend_label()}", flush=True)
    print(f"  page: {url}", flush=True)
    print(f"  API:  {url}v1  (OpenAI-compatible{'; bearer token required' if api_key else ''})",
          flush=True)
    if not is_loopback(host) and no_auth and not credentials:
        print("  warning: serving beyond this machine WITHOUT authentication (--no-auth)", flush=True)
    # Load the models while the first user reads the page, so the first answer is not the slow one.
    import threading

    threading.Thread(target=_warm_up, args=(pa,), daemon=True, name="warm-up").start()
    # access_log off: request lines are noise here, and nothing about requests needs logging.
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False,
                timeout_graceful_shutdown=settings.serve_shutdown_grace)
