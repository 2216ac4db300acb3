"""Requests to the OpenAI-compatible API: OpenAI-shaped errors, the request models, parsing and
limits (body size, message count, message length, the model ids served), and the approximate
usage figures."""
from __future__ import annotations

import json
import sys
from typing import Any, Callable, Literal, Optional, Sequence, Union

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..conversation import (MODES, AnswerMemory, InputError, check_message, make_filters,
                            message_text, turns_from_messages)
from ..types import Filters, Turn
from ..index import StoreError
from ..llm import BackendError


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


def backend_error(exc: BaseException) -> ApiError:
    """Engine/store failures → 503 (the back end is unavailable), anything else → 500."""
    if isinstance(exc, (StoreError, ConnectionError, TimeoutError, OSError)):
        return ApiError(503, f"the paper store is unavailable: {type(exc).__name__}: {exc}",
                        "server_error", code="backend_unavailable")
    if isinstance(exc, BackendError):
        return ApiError(503, f"the language model is unavailable: {exc}", "server_error",
                        code="backend_unavailable")
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


def unknown_model(model: str, served: Sequence[str]) -> ApiError:
    """404 in OpenAI's words, naming the ids this server answers to."""
    return ApiError(404, f"The model `{model}` does not exist or you do not have access to it; "
                         f"this server serves {', '.join(f'`{m}`' for m in served)} (GET /v1/models)",
                    param="model", code="model_not_found")


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
    # our CLI's extension: the reply's `paper_assistant.full_answer` is the whole answer as
    # `ask --json` prints it, so the CLI shows the same through a server as in its own process
    full_answer: bool = False


def parse_request(data: Any, memory: Optional[AnswerMemory] = None,
                  max_messages: Optional[int] = None, *, models: Optional[Sequence[str]] = None,
                  max_chars: Optional[int] = None) -> tuple[ChatRequest, str, list[Turn]]:
    """Validate a chat request → (request, last user message, history turns); ApiError(400/404/413).

    `models`: the ids the request's `model` must be one of (None: any); `max_chars`: the longest
    user message (the `max_message_chars` setting; None: no limit)."""
    if not isinstance(data, dict):
        raise ApiError(400, "the request body must be a JSON object")
    _check_message_count(data.get("messages"), max_messages)
    try:
        req = ChatRequest.model_validate(data)
    except ValidationError as e:
        errs = e.errors()
        param = ".".join(str(x) for x in errs[0].get("loc", ())) if errs else None
        raise ApiError(400, _validation_message(errs), param=param or None) from None
    _check_model(req.model, models)
    if req.n not in (None, 1):
        raise ApiError(400, "only n=1 is supported", param="n")
    convo = [m for m in req.messages if m.role in ("user", "assistant")]
    if not req.messages:
        raise ApiError(400, "messages must contain at least one message", param="messages")
    if not convo or convo[-1].role != "user" or req.messages[-1].role not in ("user", "system",
                                                                              "developer"):
        raise ApiError(400, "the last message must come from the user", param="messages")
    message = _question(req.messages, max_chars)
    history = turns_from_messages([m.model_dump() for m in convo[:-1]],
                                  recall=memory.recall if memory is not None else None)
    return req, message, history


def _check_model(model: Optional[str], models: Optional[Sequence[str]]) -> None:
    # Required, as in OpenAI's API; only the ids GET /v1/models lists are served.
    if models is None:
        return
    if not model:
        raise ApiError(400, f"you must provide a model parameter: one of "
                            f"{', '.join(f'`{m}`' for m in models)} (GET /v1/models)", param="model")
    if model not in models:
        raise unknown_model(model, models)


def _question(messages: list[Message], max_chars: Optional[int]) -> str:
    """The last user message, checked as every front checks a question (not empty, at most
    `max_chars` characters); an earlier user message may not be longer either."""
    limit = max_chars if max_chars is not None else sys.maxsize
    users = [(i, message_text(m.model_dump()["content"])) for i, m in enumerate(messages)
             if m.role == "user"]
    question = ""
    for n, (i, text) in enumerate(users, 1):
        if n < len(users) and not text.strip():
            continue  # an empty earlier message is only history
        try:
            question = check_message(text, limit)
        except InputError as e:
            raise ApiError(400, f"messages[{i}]: {e}", param="messages", code=e.code) from None
    return question


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


def request_filters(req: ChatRequest) -> Optional[Filters]:
    return make_filters(**req.filters.model_dump()) if req.filters is not None else None


def _words(text: str) -> int:
    return len(text.split())


def usage(history: list[Turn], message: str, answer_text: str) -> dict:
    # Approximate: whitespace-separated words, not model tokens (the engine may not use a model).
    prompt = sum(_words(t.content) for t in history) + _words(message)
    completion = _words(answer_text)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}
