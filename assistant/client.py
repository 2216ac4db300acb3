"""The CLI's way to a running `paper-assistant serve`, so `ask` and `chat` need not load the
language model in a process of their own.

    connect(settings, url, compared)  (RemoteAssistant or None, what to tell the user)
    RemoteAssistant                   what `ask` and `chat` call on a PaperAssistant (ask,
                                      ask_stream, stats, ensure_corpus, backend_label),
                                      answered by the server through /v1
    ServerError                       a server that was to answer cannot; str() says why

Without an explicit URL, `connect` probes the address `serve` listens on by default and uses
the server found there only when its store, collection and language model (GET /v1/info,
`Settings.identity`) are those the command would use itself; else the command answers in its
own process. An explicit URL must answer, and may differ only in what the command line left
unset. Answers come from /v1/chat/completions with the `full_answer` extension: the whole
Answer, as `ask --json` prints it, so the user sees the same from either front.
"""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from typing import Iterable, Iterator, Optional, Sequence

import httpx

from .config import API_KEY_ENV, SERVE_HOST, SERVE_PORT, Settings
from .conversation import InputError, history_messages
from .render import answer_from_payload, hit_from_json
from .types import Answer, Filters, Turn

DEFAULT_URL = f"http://{SERVE_HOST}:{SERVE_PORT}"
SERVICE = "paper-assistant"  # what our server's GET /v1/info names itself
# Nothing listening on loopback is refused at once; a server busy answering gets longer to
# reply to /v1/info than to accept the connection.
PROBE_TIMEOUT = httpx.Timeout(2.0, connect=0.3)
# An answer may wait behind other users' and then for the model; these are gaps between bytes.
ANSWER_TIMEOUT = httpx.Timeout(900.0, connect=2.0)


class ServerError(RuntimeError):
    """A server that was to answer cannot (down, another store, wants a key); str() is the
    message to show."""


class NoServer(ServerError):
    """Nothing of ours answers at the address: a probe falls back to answering in-process."""


def given_fields(store=None, chroma_url=None, backend=None, preset: str = "default",
                 model_path=None) -> tuple[str, ...]:
    """The identity fields the command line set: what an explicit --server must agree with."""
    fields = []
    if store is not None or chroma_url is not None:
        fields += ["store", "collection"]
    if backend is not None or preset != "default":
        fields.append("backend")
    if model_path is not None:
        fields.append("model")
    return tuple(fields)


def connect(settings: Settings, url: Optional[str] = None,
            compared: Sequence[str] = ()) -> tuple[Optional["RemoteAssistant"], str]:
    """The server to answer through and the line saying so, or (None, why not) to answer
    in-process ("" when nothing of ours listens at the default address).

    `url`: an explicit server (ServerError when it cannot be used), compared on the `compared`
    fields of the identity only; None: the default address, compared on the whole identity."""
    explicit = bool(url)
    base = (url or DEFAULT_URL).rstrip("/")
    try:
        remote = RemoteAssistant(base, settings)
    except NoServer:
        if explicit:
            raise
        return None, ""
    except ServerError as exc:
        if explicit:
            raise
        return None, f"{exc}; answering here instead"
    differences = remote.differences(compared if explicit else tuple(settings.identity()))
    if not differences:
        return remote, f"using the running server at {base} (--no-server: answer here)"
    remote.close()
    if explicit:
        raise ServerError(f"the server at {base} answers from {differences}; without --server "
                          f"this command answers here")
    return None, f"not using the server at {base}: it answers from {differences}; answering here"


class RemoteAssistant:
    """The answering part of PaperAssistant, done by a running server. `settings` are the
    command's own (message limit); the server answers with its own."""

    def __init__(self, url: str, settings: Settings, api_key: Optional[str] = None):
        self.url, self.settings = url, settings
        key = api_key or os.environ.get(API_KEY_ENV)
        # trust_env off: the server is normally on this machine, where a proxy only gets in the way
        self._http = httpx.Client(base_url=url, trust_env=False, timeout=ANSWER_TIMEOUT,
                                  headers={"Authorization": f"Bearer {key}"} if key else None)
        try:
            self.info = self._get_info()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._http.close()

    # -- what the CLI calls
    def stats(self) -> dict:
        return {"papers": self.info["papers"], "store": self.info["store"]}

    def ensure_corpus(self, progress_factory=None) -> None:
        return None  # `serve` indexed the bundled corpus before it listened

    def backend_label(self) -> str:
        return self.info["answers_by"]

    def ask(self, message: str, history: Sequence[Turn] = (), mode: Optional[str] = None,
            filters: Optional[Filters] = None, k: Optional[int] = None) -> Answer:
        body = self._body(message, history, mode, filters, k, stream=False)
        with self._errors():
            response = self._http.post("/v1/chat/completions", json=body)
            reply = self._json(response)
        return answer_from_payload(reply["paper_assistant"]["full_answer"])

    def ask_stream(self, message: str, history: Sequence[Turn] = (), mode: Optional[str] = None,
                   filters: Optional[Filters] = None, k: Optional[int] = None) -> Iterator:
        """The events of PaperAssistant.ask_stream: ("reading", [Hit]), ("retrieved", [Hit]),
        ("waiting", ahead), ("token", str)..., ("final", Answer)."""
        body = self._body(message, history, mode, filters, k, stream=True)
        answered = False
        with self._errors(), self._http.stream("POST", "/v1/chat/completions", json=body) as r:
            if r.status_code != 200:
                r.read()
                self._json(r)  # raises the server's error
            for chunk in _sse_chunks(r.iter_lines(), self.url):
                for kind, payload in self._events(chunk):
                    answered = answered or kind == "final"
                    yield kind, payload
        if not answered:
            raise ServerError(f"the server at {self.url} ended the answer early")

    # -- comparing
    def differences(self, fields: Iterable[str]) -> str:
        """"" when the server's identity agrees on `fields`, else what differs, in words."""
        ours = self.settings.identity()
        return "; ".join(f"{f} {self.info.get(f)!r} (this command: {ours[f]!r})"
                         for f in fields if self.info.get(f) != ours[f])

    # -- HTTP
    def _get_info(self) -> dict:
        try:
            response = self._http.get("/v1/info", timeout=PROBE_TIMEOUT)
        except httpx.HTTPError as exc:
            raise NoServer(f"no paper-assistant server answers at {self.url} "
                           f"({type(exc).__name__})") from None
        if response.status_code == 404 or not _is_json(response):
            raise NoServer(f"what answers at {self.url} is not a paper-assistant server")
        info = self._json(response)
        if info.get("service") != SERVICE:
            raise NoServer(f"what answers at {self.url} is not a paper-assistant server")
        return info

    def _body(self, message, history, mode, filters, k, stream: bool) -> dict:
        """A chat request as /v1 clients send it: the earlier turns with the papers each answer
        showed (what a follow-up refers to), then the question."""
        messages = [*history_messages(history), {"role": "user", "content": message}]
        body = {"model": self.info["model_id"], "messages": messages, "stream": stream,
                "full_answer": True, "mode": mode, "k": k,
                "filters": filters.model_dump() if filters is not None else None}
        return {key: value for key, value in body.items() if value is not None}

    def _events(self, chunk: dict) -> Iterator[tuple]:
        if "error" in chunk:  # failed after the answer began: in-band, OpenAI style
            raise self._error(200, chunk)
        extra = chunk.get("paper_assistant") or {}
        if chunk.get("retrieved") is not None:
            yield ("reading" if extra.get("reading") else "retrieved",
                   [hit_from_json(h) for h in chunk["retrieved"]])
        if extra.get("waiting"):
            yield "waiting", int(extra.get("ahead", 0))
        for choice in chunk.get("choices") or []:
            text = (choice.get("delta") or {}).get("content")
            if text:
                yield "token", text
        if "full_answer" in extra:
            yield "final", answer_from_payload(extra["full_answer"])

    def _json(self, response: httpx.Response) -> dict:
        """The body of a 200; the server's error as InputError (bad question) or ServerError."""
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code != 200:
            raise self._error(response.status_code, data)
        if not isinstance(data, dict):
            raise ServerError(f"the server at {self.url} sent a broken answer")
        return data

    def _error(self, status: int, data) -> Exception:
        error = data.get("error") if isinstance(data, dict) else None
        message = (error or {}).get("message") or f"HTTP {status}"
        if status == 400:
            return InputError(message, (error or {}).get("code"))
        if status == 401:
            return ServerError(f"the server at {self.url} wants its API key: set {API_KEY_ENV}")
        return ServerError(f"the server at {self.url} could not answer: {message}")

    @contextmanager
    def _errors(self):
        """A server that stops answering (gone, killed mid-answer, silent past the timeout) is a
        ServerError saying so, never a traceback."""
        try:
            yield
        except httpx.HTTPError as exc:
            raise ServerError(f"the server at {self.url} stopped answering "
                              f"({type(exc).__name__}); --no-server answers here") from None


def _sse_chunks(lines: Iterable[str], url: str) -> Iterator[dict]:
    """The JSON of each server-sent `data:` line, up to `data: [DONE]`."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[len("data:"):].strip()
        if data == "[DONE]":
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ServerError(f"the server at {url} sent a broken answer") from None
        yield chunk


def _is_json(response: httpx.Response) -> bool:
    return response.headers.get("content-type", "").startswith("application/json")
