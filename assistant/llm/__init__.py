"""Language-model backends: the packaged local GGUF (llama.cpp) or any OpenAI-compatible server.

Public API
----------
- ``make_llm(settings) -> LLM | None``: a llama-index ``LLM`` for ``settings.llm_backend``
  ("local" → :class:`~assistant.llm.local.LocalLlamaCPP`, or with ``llm_server_parallel`` > 0
  a llama-server child with that many slots (``llm/server.py``), "openai" →
  :class:`~assistant.llm.openai.OpenAICompatible`, "none" → ``None``).
- ``backend_label(settings) -> str``: a human label for the UI / logs (never contains a key).
- ``stream_chat_text(llm, messages) -> Iterator[str]``: role/content dicts in, text deltas out.
- ``stream_chat_events(llm, messages) -> Iterator[("text", str) | ("waiting", int)]``: the same,
  plus how many requests are ahead while this one waits for the model (local model, or the
  llama-server child's slots).
- ``count_tokens(llm, text) -> int``: exact for the local model, an estimate otherwise.
- ``ensure_default_model(cache_dir) -> Path``: assemble + verify the packaged Qwen2.5-Coder GGUF.

Modules: ``packaged`` (assembling and verifying the packaged GGUF), ``local`` (llama.cpp),
``openai`` (imported only for that backend), ``errors``.

Errors
------
Everything a backend can fail with at generation time is raised as :class:`BackendError`
(or a subclass): :class:`ModelUnavailable` (model file / llama.cpp / API key missing or
unloadable) and :class:`BackendTimeout` (``settings.llm_timeout`` exceeded, or the local model
stayed busy that long). Both backends translate their native errors (``openai.OpenAIError``,
llama.cpp ``ValueError``/``RuntimeError``) into these, so callers need only
``except BackendError`` to fall back to extractive answers. Streams may raise mid-way, after
some text was already yielded (``BackendTimeout.partial`` holds that text).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional, Sequence
from urllib.parse import urlsplit, urlunsplit

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM

from .errors import (INSTALL_HINT, BackendError, BackendTimeout, ModelUnavailable, openai_errors,
                     translate_openai_error)
from .local import LocalLlamaCPP, _import_llama_cpp
from .packaged import (DEFAULT_MODEL_FILENAME, DEFAULT_MODEL_SHA256, DEFAULT_MODEL_SIZE,
                       PART_PACKAGES, assemble_model, ensure_default_model, packaged_part_paths,
                       resolve_model_path)

if TYPE_CHECKING:  # pragma: no cover
    from assistant.config import Settings

__all__ = [
    "BackendError", "ModelUnavailable", "BackendTimeout",
    "DEFAULT_MODEL_FILENAME", "DEFAULT_MODEL_SIZE", "DEFAULT_MODEL_SHA256", "PART_PACKAGES",
    "INSTALL_HINT", "packaged_part_paths", "assemble_model", "ensure_default_model",
    "resolve_model_path", "LocalLlamaCPP", "make_llm", "make_local_llm", "backend_label",
    "stream_chat_text", "stream_chat_events", "to_chat_messages", "count_tokens",
]


def make_local_llm(settings: "Settings") -> LocalLlamaCPP:
    """The packaged (or configured) GGUF in-process, whatever backend answers: with
    ``reading="local"`` it reads the candidates (answer/reading.py)."""
    llm = make_llm(settings.model_copy(update={"llm_backend": "local", "llm_server_parallel": 0}))
    assert isinstance(llm, LocalLlamaCPP)
    return llm


def make_llm(settings: "Settings") -> Optional[LLM]:
    """The llama-index LLM for ``settings.llm_backend`` (``None`` for "none").

    "local": resolves the GGUF now (assembling the packaged model on first use) and checks
    llama-cpp-python is importable; the weights are loaded on first use (or ``llm.load()``).
    Raises :class:`ModelUnavailable` when the backend cannot work.
    """
    backend = settings.llm_backend
    if backend == "none":
        return None
    if backend == "openai":
        from .openai import make_openai

        return make_openai(settings)
    if backend == "local":
        if settings.llm_server_parallel:  # llama-server child, N slots (llm/server.py)
            from .server import make_server_llm

            return make_server_llm(settings, resolve_model_path(settings))
        _import_llama_cpp()
        path = resolve_model_path(settings)
        return LocalLlamaCPP(
            model_path=str(path),
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            timeout=settings.llm_timeout,
            lookup_draft=settings.lookup_draft,
        )
    raise ValueError(f"unknown llm_backend {backend!r}")


def _safe_url(url: str) -> str:
    """``url`` without credentials, query or fragment."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def backend_label(settings: "Settings") -> str:
    """E.g. "local · qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "openai · gpt-4o-mini @ URL",
    "none (extracts only)". Never contains an API key; does no I/O."""
    backend = settings.llm_backend
    if backend == "none":
        return "none (extracts only)"
    if backend == "openai":
        base = settings.resolved_llm_base_url()
        where = _safe_url(base) if base else "api.openai.com"
        return f"openai · {settings.resolved_llm_model()} @ {where}"
    name = Path(settings.model_path).name if settings.model_path else DEFAULT_MODEL_FILENAME
    if settings.llm_server_parallel:
        return f"local · {name} · llama-server, {settings.llm_server_parallel} slots"
    return f"local · {name}"


def to_chat_messages(messages: Iterable[dict[str, str]]) -> list[ChatMessage]:
    """``[{"role": "system"|"user"|"assistant", "content": str}]`` → llama-index ChatMessages."""
    out = []
    for m in messages:
        role = m.get("role", "user")
        try:
            mrole = MessageRole(role)
        except ValueError as exc:
            raise ValueError(f"unknown chat role {role!r}") from exc
        out.append(ChatMessage(role=mrole, content=m.get("content", "")))
    return out


def stream_chat_text(llm: LLM, messages: Sequence[dict[str, str]], **kwargs: Any) -> Iterator[str]:
    """Text deltas of ``llm``'s answer to ``messages`` (role/content dicts), for any backend.

    Raises :class:`BackendError` (possibly after some deltas were yielded); errors of other
    LLM classes from the openai client are translated too.
    """
    for kind, value in stream_chat_events(llm, messages, **kwargs):
        if kind == "text":
            yield value


def stream_chat_events(llm: LLM, messages: Sequence[dict[str, str]],
                       **kwargs: Any) -> Iterator[tuple[str, Any]]:
    """``("waiting", ahead)`` while the request waits for the model (``ahead`` requests are
    served first; reported at first and when it changes), then ``("text", delta)``... Errors as
    :func:`stream_chat_text`."""
    chat_messages = to_chat_messages(messages)
    timeout = float(getattr(llm, "timeout", 0) or 0)
    try:
        for response in llm.stream_chat(chat_messages, **kwargs):
            if response.delta:
                yield "text", response.delta
            elif "waiting" in (response.additional_kwargs or {}):
                yield "waiting", int(response.additional_kwargs["waiting"])
    except BackendError:
        raise
    except openai_errors() as exc:
        raise translate_openai_error(exc, timeout) from exc


def count_tokens(llm: Optional[LLM], text: str) -> int:
    """Tokens of ``text``: exact for :class:`LocalLlamaCPP`, else ~4 characters per token."""
    if isinstance(llm, LocalLlamaCPP):
        return llm.count_tokens(text)
    return max(1, (len(text) + 3) // 4) if text else 0
