"""OpenAI-compatible HTTP API over the shared PaperAssistant (mounted beside the Gradio page).

    GET  /v1/models              one model, "paper-assistant"
    POST /v1/chat/completions    plain or `stream: true` (server-sent events ending `data: [DONE]`)
    GET  /healthz                {"status": "ok", "papers": N} (no token needed)
    GET  /v1/info                which server this is and what it answers from (for our CLI)

The official `openai` SDK works unchanged with `base_url="http://HOST:PORT/v1"`:

    client = OpenAI(base_url="http://127.0.0.1:7860/v1", api_key="KEY or anything")
    r = client.chat.completions.create(model="paper-assistant",
                                       messages=[{"role": "user", "content": "Which paper ...?"}])
    r.choices[0].message.content, r.citations          # citations: a top-level extra field

The whole message list is the conversation: user/assistant messages before the last user
message become the engine's history (follow-ups like "who wrote it?" work). An assistant message
may echo the `citations` (or `paper_ids`) it came with; if it does not, the server recalls them
from its memory of its recent answers (keyed by the answer text), so a standard client echoing
only the text keeps the focus. System messages are accepted and ignored. Optional non-standard
request fields: `mode` ("auto"|"question"|"summary"|"compare"|"similar"|"table"), `filters` ({categories, authors, year_min,
year_max}), `k`, and `full_answer: true`, which adds `paper_assistant.full_answer` to the reply
(streamed: to its last chunk): the whole answer as `ask --json` prints it (retrieved papers,
query, table rows...), what `ask` and `chat` show when they answer through a running server.
`model` is required, as in OpenAI's API, and must be an id GET /v1/models lists
("paper-assistant"; no aliases): another is a 404 `model_not_found`, none a 400.

Streaming: the first chunk carries the role, a second one (empty delta) a non-standard
`retrieved` list of the papers found, then the answer's text deltas as the model writes them.
When the model first reads the closest papers to judge which answer the question, a chunk
before that carries them as `retrieved` with `paper_assistant: {"status": "reading …",
"reading": true}`.
The engine checks the finished answer (markers renumbered or removed by grounding), so the last
chunk carries the checked text as `answer` along with `citations`; when the checked text merely
continues what was streamed, the rest is sent as ordinary deltas first.

When the language model is down (its server killed before or during the answer, a timeout),
the reply is still HTTP 200: the cited extracts of the papers found, with the reason as a
notice. Notices (also "the model's answer could not be verified") end the message content as
Markdown quotes, `> Note: …`, after the answer (streamed: in a last content delta), and are listed
in the `paper_assistant.notices` field; `citations` and the `answer` field hold the answer
without them. The next request uses the model again as soon as it answers. A store that is down
(a `--chroma-url` server stopped) is a 503 `backend_unavailable` naming the server; requests
succeed again once it is back, without restarting `serve`.

Errors use OpenAI's shape {"error": {"message", "type", "param", "code"}}: 400 bad input (an
empty last user message: `empty_message`; a user message over `max_message_chars`:
`message_too_long`), 401 missing/wrong bearer token, 404 unknown model (`model_not_found`), 413 a
body over `api_max_request_bytes` or more than `api_max_messages` messages (settings), 503 store
or back end unavailable, 500 anything else (no traceback is sent).
"""
from __future__ import annotations

import hmac
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, StreamingResponse

from .. import __version__
from ..config import Settings
from ..conversation import AnswerMemory, parse_mode
from ..llm import backend_label
from ..render import (answer_meta, answer_payload, citations_json, hits_json, reading_notice,
                      waiting_notice)
from ..types import Answer, Turn
from .request import (ApiError, ChatRequest, OpenAIRoute, backend_error, parse_body,
                      parse_request, read_body, request_filters, unknown_model, usage)

log = logging.getLogger("assistant.api")

MODEL_ID = "paper-assistant"
SERVICE = "paper-assistant"  # GET /v1/info's `service`: how a client knows the server is ours
CREATED = int(time.time())


# ----------------------------------------------------------------------------- router

def bearer_check(api_key: Optional[str]) -> Callable[[Request], None]:
    """A check that raises ApiError(401) unless the request carries `Bearer api_key`
    (a no-op without a key)."""
    key = api_key.encode("utf-8") if api_key else None

    def check(request: Request) -> None:
        if key is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if not header:
            raise ApiError(401, "missing API key: send `Authorization: Bearer <key>`",
                           code="invalid_api_key")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode("utf-8"), key):
            raise ApiError(401, "incorrect API key", code="invalid_api_key")

    return check


def create_router(pa, api_key: Optional[str] = None, model_id: str = MODEL_ID) -> APIRouter:
    """The API routes over `pa`. With `api_key`, every /v1 route needs `Authorization: Bearer KEY`.
    Request limits come from `pa.settings` (defaults when `pa` has none, as in test doubles)."""
    router = APIRouter(route_class=OpenAIRoute)
    limits = getattr(pa, "settings", None) or Settings()
    check_auth = bearer_check(api_key)
    memory = AnswerMemory()
    served = (model_id,)  # what GET /v1/models lists, and the only `model` a completion may name

    def model_card(model: str) -> dict:
        return {"id": model, "object": "model", "created": CREATED, "owned_by": "paper-assistant"}

    @router.get("/healthz")
    def healthz():
        try:
            papers = pa.stats()["papers"]
        except Exception as exc:  # noqa: BLE001 - any store failure means "not healthy"
            log.warning("healthz: store unavailable: %s", type(exc).__name__)
            return JSONResponse({"status": "unavailable", "error": type(exc).__name__},
                                status_code=503)
        return {"status": "ok", "papers": papers}

    @router.get("/v1/models")
    def list_models(request: Request):
        check_auth(request)
        return {"object": "list", "data": [model_card(m) for m in served]}

    @router.get("/v1/models/{model}")
    def get_model(model: str, request: Request):
        check_auth(request)
        if model not in served:
            raise unknown_model(model, served)
        return model_card(model)

    @router.get("/v1/info")
    def info(request: Request):
        """An extension: which server this is, how many papers it has, and what its answers
        depend on (`Settings.identity`: store, collection, language model), so `ask` and `chat`
        use a running server only when it answers from what they would use themselves."""
        check_auth(request)
        try:
            papers = pa.stats()["papers"]
        except Exception as exc:  # noqa: BLE001 - a store that is down is a 503, as for answers
            raise backend_error(exc) from None
        return {"object": "server", "service": SERVICE, "version": __version__,
                "model_id": model_id, "papers": papers, "answers_by": _answers_by(pa, limits),
                **limits.identity()}

    @router.get("/v1/map")
    def collection_map(request: Request, points: bool = False):
        """An extension: the map of the collection (assistant/map.py), its labelled themes, and
        with ?points=true the points the page draws (at most map_max_points, a per-theme sample)."""
        check_auth(request)
        cmap = pa.collection_map()
        out = {"object": "map", **cmap.to_json()}
        if points:
            view = cmap.view(pa.store.papers(), pa.settings.map_max_points)
            out["sampled"] = view.sampled
            out["points"] = [{"paper_id": p.paper_id, "x": round(p.x, 4), "y": round(p.y, 4),
                              "cluster": p.cluster, "title": p.title, "authors": p.authors}
                             for p in view.points]
        return out

    @router.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        check_auth(request)
        data = parse_body(await read_body(request, limits.api_max_request_bytes))
        call = Completion(*parse_request(data, memory, limits.api_max_messages, models=served,
                                         max_chars=limits.max_message_chars), model_id=model_id)
        return await (_stream(pa, call, memory) if call.req.stream else _complete(pa, call, memory))

    return router


def _answers_by(pa, settings: Settings) -> str:
    """The back end's label, as `chat` and the page's header show it."""
    label = getattr(pa, "backend_label", None)
    if callable(label):
        return label()
    return backend_label(settings)


@dataclass
class Completion:
    """One chat completion being answered."""

    req: ChatRequest
    message: str
    history: list[Turn]
    model_id: str = MODEL_ID
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex[:24]}")
    created: int = field(default_factory=lambda: int(time.time()))

    def ask_args(self) -> dict:
        return dict(mode=parse_mode(self.req.mode), filters=request_filters(self.req), k=self.req.k)

    def meta(self, answer: Answer, **extra) -> dict:
        """The reply's `paper_assistant` field; with `full_answer` requested, the whole answer."""
        full = {"full_answer": answer_payload(answer)} if self.req.full_answer else {}
        return {**answer_meta(answer), **extra, **full}

    def head(self, kind: str) -> dict:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model_id}

    def chunk(self, delta: dict, finish: Optional[str] = None, **extra) -> str:
        body = {**self.head("chat.completion.chunk"), "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                **extra}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


def notice_text(answer: Answer) -> str:
    """The answer's notices as Markdown quotes after its text ("" without notices), so a plain
    OpenAI client shows that, e.g., the model was down and these are extracts."""
    return "".join(f"\n\n> Note: {n}" for n in answer.notices)


async def _complete(pa, call: Completion, memory: AnswerMemory) -> dict:
    try:
        answer: Answer = await run_in_threadpool(pa.ask, call.message, call.history,
                                                 **call.ask_args())
    except ApiError:
        raise
    except Exception as exc:  # noqa: BLE001
        log.exception("chat completion failed")
        raise backend_error(exc) from None
    content = answer.answer + notice_text(answer)
    memory.remember(answer.answer, answer)
    memory.remember(content, answer)  # what a client echoes back
    return {
        **call.head("chat.completion"), "system_fingerprint": None,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": content, "refusal": None}}],
        "usage": usage(call.history, call.message, content),
        "citations": citations_json(answer.citations),
        "paper_assistant": call.meta(answer),
    }


async def _stream(pa, call: Completion, memory: AnswerMemory) -> StreamingResponse:
    # Pull the first event before answering 200, so a store that is down is a 503.
    def start():
        events = iter(pa.ask_stream(call.message, call.history, **call.ask_args()))
        return events, next(events, None)

    try:
        events, first = await run_in_threadpool(start)
    except Exception as exc:  # noqa: BLE001
        log.exception("chat completion failed")
        raise backend_error(exc) from None
    include_usage = bool((call.req.stream_options or {}).get("include_usage"))
    return StreamingResponse(_sse(events, first, call, include_usage, memory),
                             media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def _error_event(err: ApiError) -> Iterator[str]:
    yield f"data: {json.dumps(err.body())}\n\n"
    yield "data: [DONE]\n\n"


def _sse(events: Iterator, first, call: Completion, include_usage: bool,
         memory: Optional[AnswerMemory] = None) -> Iterator[str]:
    """OpenAI chat.completion.chunk events (sync generator: Starlette runs it in a thread)."""
    yield call.chunk({"role": "assistant", "content": ""})
    streamed = ""
    final: Optional[Answer] = None
    try:
        event = first
        while event is not None:
            kind, payload = event
            if kind == "retrieved":
                yield call.chunk({}, retrieved=hits_json(payload))
            elif kind == "reading":  # the candidates, while the model reads them: a status
                yield call.chunk({}, retrieved=hits_json(payload),
                                 paper_assistant={"status": reading_notice(len(payload)), "reading": True})
            elif kind == "waiting":  # no text: a status OpenAI clients ignore, ours can show
                yield call.chunk({}, paper_assistant={"status": waiting_notice(int(payload)),
                                                      "waiting": True, "ahead": int(payload)})
            elif kind == "token" and payload:
                streamed += payload
                yield call.chunk({"content": payload})
            elif kind == "final":
                final = payload
            event = next(events, None)
    except Exception as exc:  # noqa: BLE001 - headers are sent: report in-band, OpenAI style
        log.exception("streamed chat completion failed")
        yield from _error_event(backend_error(exc))
        return
    if final is None:
        yield from _error_event(ApiError(500, "the engine ended without an answer", "server_error",
                                         code="internal_error"))
        return
    yield from _sse_end(final, streamed, call, include_usage, memory)


def _sse_end(final: Answer, streamed: str, call: Completion, include_usage: bool,
             memory: Optional[AnswerMemory]) -> Iterator[str]:
    """The rest of the checked text (when it continues the stream), the citations, usage."""
    text = final.answer
    delivered = streamed
    if text.startswith(streamed) and len(text) > len(streamed):
        yield call.chunk({"content": text[len(streamed):]})  # extractive answers arrive here whole
        delivered = text
    replaced = text.strip() != delivered.strip()
    notes = notice_text(final)
    if notes:  # after the answer, as the page shows them
        yield call.chunk({"content": notes})
    if memory is not None:  # the client may echo either text back, with or without the notes
        for shown in {text, delivered, text + notes, delivered + notes}:
            memory.remember(shown, final)
    yield call.chunk({}, "stop", citations=citations_json(final.citations), answer=text,
                     paper_assistant=call.meta(final, streamed_text_replaced=replaced))
    if include_usage:
        body = {**call.head("chat.completion.chunk"), "choices": [],
                "usage": usage(call.history, call.message, text)}
        yield f"data: {json.dumps(body)}\n\n"
    yield "data: [DONE]\n\n"
