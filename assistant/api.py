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
request fields: `mode` ("auto"|"question"|"summary"|"compare"), `filters` ({categories, authors, year_min,
year_max}) and `k`. Any `model` name is accepted (clients often send their default); responses
name "paper-assistant".

Streaming: the first chunk carries the role, a second one (empty delta) a non-standard
`retrieved` list of the papers found, then the answer's text deltas as the model writes them.
The engine checks the finished answer (markers renumbered or removed by grounding), so the last
chunk carries the checked text as `answer` along with `citations`; when the checked text merely
continues what was streamed, the rest is sent as ordinary deltas first.

Errors use OpenAI's shape {"error": {"message", "type", "param", "code"}}: 400 bad input,
401 missing/wrong bearer token, 404 unknown model (GET /v1/models/{id}), 503 store or back end
unavailable, 500 anything else (no traceback is sent).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Callable, Iterator, Literal, Optional, Union

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .types import Answer, Citation, Filters, Turn

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

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text or "" for p in self.content if p.type in ("text", "input_text"))


class ChatRequest(BaseModel):
    # Sampling options (temperature, max_tokens, ...) are accepted and ignored: the engine
    # decides how answers are written.
    model_config = ConfigDict(extra="allow")
    model: Optional[str] = None
    messages: list[Message]
    stream: bool = False
    stream_options: Optional[dict[str, Any]] = None
    n: Optional[int] = None
    mode: Optional[Literal["auto", "question", "summary", "compare"]] = None
    filters: Optional[FilterBody] = None
    k: Optional[int] = Field(default=None, ge=1, le=100)


def parse_request(data: Any, memory: Optional[AnswerMemory] = None) -> tuple[ChatRequest, str, list[Turn]]:
    """Validate a chat request → (request, last user message, history turns); ApiError(400)."""
    if not isinstance(data, dict):
        raise ApiError(400, "the request body must be a JSON object")
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
    message = convo[-1].text().strip()
    if not message:
        raise ApiError(400, "the last user message is empty", param="messages")
    history = []
    for m in convo[:-1]:
        ids = list(m.paper_ids or [])
        if not ids and m.citations:
            ids = [str(c["paper_id"]) for c in m.citations if isinstance(c, dict) and c.get("paper_id")]
        if not ids and m.role == "assistant" and memory is not None:
            ids = memory.recall(m.text())
        history.append(Turn(role=m.role, content=m.text(), paper_ids=ids if m.role == "assistant" else []))
    return req, message, history


def _filters(req: ChatRequest) -> Optional[Filters]:
    if req.filters is None:
        return None
    f = Filters(**req.filters.model_dump())
    return None if f.is_empty() else f


def _mode(req: ChatRequest) -> Optional[str]:
    return None if req.mode in (None, "auto") else req.mode


def citation_json(c: Citation) -> dict:
    return {**c.to_json(), "evidence": c.evidence, "title_is_derived": c.title_is_derived}


def _words(text: str) -> int:
    return len(text.split())


def usage(history: list[Turn], message: str, answer_text: str) -> dict:
    # Approximate: whitespace-separated words, not model tokens (the engine may not use a model).
    prompt = sum(_words(t.content) for t in history) + _words(message)
    completion = _words(answer_text)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


# ----------------------------------------------------------------------------- answer memory

class AnswerMemory:
    """Which papers this server's recent answers cited, keyed by the answer text.

    Standard OpenAI clients send the conversation back without our `citations` field; when an
    assistant message is one of our own answers (as streamed or as finally checked), its papers
    are recovered here so follow-ups ("who wrote it?") keep their focus. Bounded LRU, in memory.
    """

    def __init__(self, size: int = 4096):
        self.size = size
        self._items: "OrderedDict[str, list[str]]" = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()

    def remember(self, text: str, paper_ids: list[str]) -> None:
        if not text.strip() or not paper_ids:
            return
        with self._lock:
            key = self._key(text)
            self._items[key] = list(paper_ids)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def recall(self, text: str) -> list[str]:
        with self._lock:
            return list(self._items.get(self._key(text), []))


# ----------------------------------------------------------------------------- router

def create_router(pa, api_key: Optional[str] = None, model_id: str = MODEL_ID) -> APIRouter:
    """The API routes over `pa`. With `api_key`, every /v1 route needs `Authorization: Bearer KEY`."""
    router = APIRouter(route_class=OpenAIRoute)
    key = api_key.encode("utf-8") if api_key else None
    memory = AnswerMemory()

    def check_auth(request: Request) -> None:
        if key is None:
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if not header:
            raise ApiError(401, "missing API key: send `Authorization: Bearer <key>`",
                           code="invalid_api_key")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode("utf-8"), key):
            raise ApiError(401, "incorrect API key", code="invalid_api_key")

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
        try:
            data = json.loads(await request.body() or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ApiError(400, f"the request body is not valid JSON: {e}") from None
        req, message, history = parse_request(data, memory)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        kwargs = dict(mode=_mode(req), filters=_filters(req), k=req.k)
        if not req.stream:
            try:
                answer: Answer = await run_in_threadpool(pa.ask, message, history, **kwargs)
            except ApiError:
                raise
            except Exception as exc:  # noqa: BLE001
                log.exception("chat completion failed")
                raise _backend_error(exc) from None
            memory.remember(answer.answer, [c.paper_id for c in answer.citations])
            return {
                "id": completion_id, "object": "chat.completion", "created": created,
                "model": model_id, "system_fingerprint": None,
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": answer.answer,
                                         "refusal": None}}],
                "usage": usage(history, message, answer.answer),
                "citations": [citation_json(c) for c in answer.citations],
                "paper_assistant": {"intent": answer.intent, "abstained": answer.abstained,
                                    "notices": answer.notices, "backend": answer.backend},
            }

        # Streamed: pull the first event before answering 200, so a store that is down is a 503.
        def start():
            events = iter(pa.ask_stream(message, history, **kwargs))
            return events, next(events, None)

        try:
            events, first = await run_in_threadpool(start)
        except Exception as exc:  # noqa: BLE001
            log.exception("chat completion failed")
            raise _backend_error(exc) from None
        include_usage = bool((req.stream_options or {}).get("include_usage"))
        return StreamingResponse(
            _sse(events, first, completion_id, created, model_id, history, message, include_usage,
                 memory),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return router


def _sse(events: Iterator, first, completion_id: str, created: int, model_id: str,
         history: list[Turn], message: str, include_usage: bool,
         memory: Optional[AnswerMemory] = None) -> Iterator[str]:
    """OpenAI chat.completion.chunk events (sync generator: Starlette runs it in a thread)."""

    def chunk(delta: dict, finish: Optional[str] = None, **extra) -> str:
        body = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                "model": model_id, "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
                **extra}
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    streamed = ""
    final: Optional[Answer] = None
    try:
        event = first
        while event is not None:
            kind, payload = event
            if kind == "retrieved":
                yield chunk({}, retrieved=[h.to_json() for h in payload])
            elif kind == "token" and payload:
                streamed += payload
                yield chunk({"content": payload})
            elif kind == "final":
                final = payload
            event = next(events, None)
    except Exception as exc:  # noqa: BLE001 - headers are sent: report in-band, OpenAI style
        log.exception("streamed chat completion failed")
        err = _backend_error(exc)
        yield f"data: {json.dumps(err.body())}\n\n"
        yield "data: [DONE]\n\n"
        return
    if final is None:
        err = ApiError(500, "the engine ended without an answer", "server_error", code="internal_error")
        yield f"data: {json.dumps(err.body())}\n\n"
        yield "data: [DONE]\n\n"
        return
    text = final.answer
    delivered = streamed
    if text.startswith(streamed) and len(text) > len(streamed):
        yield chunk({"content": text[len(streamed):]})  # extractive answers arrive here whole
        delivered = text
    if memory is not None:  # the client may echo either text back
        ids = [c.paper_id for c in final.citations]
        memory.remember(text, ids)
        memory.remember(delivered, ids)
    yield chunk({}, "stop", citations=[citation_json(c) for c in final.citations], answer=text,
                paper_assistant={"intent": final.intent, "abstained": final.abstained,
                                 "notices": final.notices, "backend": final.backend,
                                 "streamed_text_replaced": text.strip() != delivered.strip()})
    if include_usage:
        body = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                "model": model_id, "choices": [], "usage": usage(history, message, text)}
        yield f"data: {json.dumps(body)}\n\n"
    yield "data: [DONE]\n\n"
