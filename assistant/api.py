"""OpenAI-compatible HTTP API over the shared PaperAssistant (mounted beside the Gradio page).

    GET  /v1/models              one model, "paper-assistant"
    POST /v1/chat/completions    plain or `stream: true` (server-sent events ending `data: [DONE]`)
    GET  /healthz                {"status": "ok", "papers": N} (no token needed)

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
year_max}) and `k`. Any `model` name is accepted (clients often send their default); responses
name "paper-assistant".

Streaming: the first chunk carries the role, a second one (empty delta) a non-standard
`retrieved` list of the papers found, then the answer's text deltas as the model writes them.
The engine checks the finished answer (markers renumbered or removed by grounding), so the last
chunk carries the checked text as `answer` along with `citations`; when the checked text merely
continues what was streamed, the rest is sent as ordinary deltas first.

Errors use OpenAI's shape {"error": {"message", "type", "param", "code"}}: 400 bad input,
401 missing/wrong bearer token, 404 unknown model (GET /v1/models/{id}), 413 a body over
`api_max_request_bytes` or more than `api_max_messages` messages (settings), 503 store or back
end unavailable, 500 anything else (no traceback is sent).
"""
from __future__ import annotations

import hmac
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Literal, Optional, Union

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .config import Settings
from .conversation import (MODES, AnswerMemory, make_filters, message_text, parse_mode,
                           turns_from_messages)
from .render import answer_meta, citations_json, hits_json
from .types import Answer, Filters, Turn

log = logging.getLogger("assistant.api")

MODEL_ID = "paper-assistant"
CREATED = int(time.time())


# ----------------------------------------------------------------------------- errors

class ApiError(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error",
                 param: Optional[str] = None, code: Optional[str] = None):
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type_, param, code

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param,
                          "code": self.code}}

    def response(self) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if self.status == 401 else None
        return JSONResponse(self.body(), status_code=self.status, headers=headers)


def _backend_error(exc: BaseException) -> ApiError:
    """Engine/store failures → 503 (the back end is unavailable), anything else → 500."""
    from .index import StoreError

    if isinstance(exc, (StoreError, ConnectionError, TimeoutError, OSError)):
        return ApiError(503, f"the paper store is unavailable: {type(exc).__name__}: {exc}",
                        "server_error", code="backend_unavailable")
    try:
        from .llm import BackendError

        if isinstance(exc, BackendError):
            return ApiError(503, f"the language model is unavailable: {exc}", "server_error",
                            code="backend_unavailable")
    except ImportError:  # pragma: no cover
        pass
    return ApiError(500, f"internal error while answering ({type(exc).__name__})", "server_error",
                    code="internal_error")


class OpenAIRoute(APIRoute):
    """Routes whose errors (ours and FastAPI's validation) come back in OpenAI's error shape."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except ApiError as e:
                return e.response()
            except RequestValidationError as e:
                return ApiError(400, _validation_message(e.errors())).response()

        return route


def _validation_message(errors: list) -> str:
    if not errors:
        return "invalid request"
    e = errors[0]
    loc = ".".join(str(x) for x in e.get("loc", ()) if x not in ("body",))
    return f"{loc}: {e.get('msg', 'invalid value')}" if loc else str(e.get("msg", "invalid request"))


# ----------------------------------------------------------------------------- request models

class FilterBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    categories: list[str] = Field(default_factory=list)
    authors: list[str] = Field(default_factory=list)
    year_min: Optional[int] = None
    year_max: Optional[int] = None

    @field_validator("categories", "authors", mode="before")
    @classmethod
    def _one_or_many(cls, v):
        if v is None:
            return []
        return [v] if isinstance(v, str) else v


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: Optional[str] = None


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Union[str, list[ContentPart], None] = None
    citations: Optional[list[dict[str, Any]]] = None
    paper_ids: Optional[list[str]] = None


class ChatRequest(BaseModel):
    # Sampling options (temperature, max_tokens, ...) are accepted and ignored: the engine
    # decides how answers are written.
    model_config = ConfigDict(extra="allow")
    model: Optional[str] = None
    messages: list[Message]
    stream: bool = False
    stream_options: Optional[dict[str, Any]] = None
    n: Optional[int] = None
    mode: Optional[Literal[MODES]] = None
    filters: Optional[FilterBody] = None
    k: Optional[int] = Field(default=None, ge=1, le=100)


def parse_request(data: Any, memory: Optional[AnswerMemory] = None,
                  max_messages: Optional[int] = None) -> tuple[ChatRequest, str, list[Turn]]:
    """Validate a chat request → (request, last user message, history turns); ApiError(400/413)."""
    if not isinstance(data, dict):
        raise ApiError(400, "the request body must be a JSON object")
    _check_message_count(data.get("messages"), max_messages)
    try:
        req = ChatRequest.model_validate(data)
    except ValidationError as e:
        errs = e.errors()
        param = ".".join(str(x) for x in errs[0].get("loc", ())) if errs else None
        raise ApiError(400, _validation_message(errs), param=param or None) from None
    if req.n not in (None, 1):
        raise ApiError(400, "only n=1 is supported", param="n")
    convo = [m for m in req.messages if m.role in ("user", "assistant")]
    if not req.messages:
        raise ApiError(400, "messages must contain at least one message", param="messages")
    if not convo or convo[-1].role != "user" or req.messages[-1].role not in ("user", "system",
                                                                              "developer"):
        raise ApiError(400, "the last message must come from the user", param="messages")
    message = message_text(convo[-1].model_dump()["content"]).strip()
    if not message:
        raise ApiError(400, "the last user message is empty", param="messages")
    history = turns_from_messages([m.model_dump() for m in convo[:-1]],
                                  recall=memory.recall if memory is not None else None)
    return req, message, history


def _check_message_count(messages: Any, max_messages: Optional[int]) -> None:
    # Checked before validation, so a huge list is refused without building a model per item.
    if max_messages is not None and isinstance(messages, list) and len(messages) > max_messages:
        raise ApiError(413, f"too many messages: {len(messages)} (at most {max_messages}); "
                            f"send only the recent part of the conversation",
                       param="messages", code="too_many_messages")


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it exceeds `limit` bytes (whether or not
    the client declared its length), so an oversized body is never held in memory whole."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    body, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        body.append(chunk)
    return b"".join(body)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"the request body is larger than {limit} bytes",
                    code="request_too_large")


def parse_body(body: bytes) -> Any:
    """JSON of the body; anything the decoder refuses (bad syntax, bytes that are not UTF-8,
    nesting past the recursion limit, an integer of thousands of digits) is a 400."""
    try:
        return json.loads(body or b"null")
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        reason = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise ApiError(400, f"the request body is not valid JSON: {reason}") from None


def _filters(req: ChatRequest) -> Optional[Filters]:
    return make_filters(**req.filters.model_dump()) if req.filters is not None else None


def _words(text: str) -> int:
    return len(text.split())


def usage(history: list[Turn], message: str, answer_text: str) -> dict:
    # Approximate: whitespace-separated words, not model tokens (the engine may not use a model).
    prompt = sum(_words(t.content) for t in history) + _words(message)
    completion = _words(answer_text)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


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

    def model_card() -> dict:
        return {"id": model_id, "object": "model", "created": CREATED, "owned_by": "paper-assistant"}

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
        return {"object": "list", "data": [model_card()]}

    @router.get("/v1/models/{model}")
    def get_model(model: str, request: Request):
        check_auth(request)
        if model != model_id:
            raise ApiError(404, f"The model '{model}' does not exist", param="model",
                           code="model_not_found")
        return model_card()

    @router.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        check_auth(request)
        data = parse_body(await read_body(request, limits.api_max_request_bytes))
        call = Completion(*parse_request(data, memory, limits.api_max_messages), model_id=model_id)
        return await (_stream(pa, call, memory) if call.req.stream else _complete(pa, call, memory))

    return router


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
        return dict(mode=parse_mode(self.req.mode), filters=_filters(self.req), k=self.req.k)

    def head(self, kind: str) -> dict:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model_id}

    def chunk(self, delta: dict, finish: Optional[str] = None, **extra) -> str:
        body = {**self.head("chat.completion.chunk"), "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                **extra}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


async def _complete(pa, call: Completion, memory: AnswerMemory) -> dict:
    try:
        answer: Answer = await run_in_threadpool(pa.ask, call.message, call.history,
                                                 **call.ask_args())
    except ApiError:
        raise
    except Exception as exc:  # noqa: BLE001
        log.exception("chat completion failed")
        raise _backend_error(exc) from None
    memory.remember(answer.answer, answer)
    return {
        **call.head("chat.completion"), "system_fingerprint": None,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": answer.answer, "refusal": None}}],
        "usage": usage(call.history, call.message, answer.answer),
        "citations": citations_json(answer.citations),
        "paper_assistant": answer_meta(answer),
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
        raise _backend_error(exc) from None
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
            elif kind == "token" and payload:
                streamed += payload
                yield call.chunk({"content": payload})
            elif kind == "final":
                final = payload
            event = next(events, None)
    except Exception as exc:  # noqa: BLE001 - headers are sent: report in-band, OpenAI style
        log.exception("streamed chat completion failed")
        yield from _error_event(_backend_error(exc))
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
    if memory is not None:  # the client may echo either text back
        memory.remember(text, final)
        memory.remember(delivered, final)
    yield call.chunk({}, "stop", citations=citations_json(final.citations), answer=text,
                     paper_assistant={**answer_meta(final),
                                      "streamed_text_replaced": text.strip() != delivered.strip()})
    if include_usage:
        body = {**call.head("chat.completion.chunk"), "choices": [],
                "usage": usage(call.history, call.message, text)}
        yield f"data: {json.dumps(body)}\n\n"
    yield "data: [DONE]\n\n"
