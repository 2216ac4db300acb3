"""The OpenAI backend: OpenAI itself or any OpenAI-compatible server (vLLM, Ollama, llama.cpp's).

Imported only when that backend is chosen: importing llama_index.llms.openai costs ~1 s.
"""
from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseGen,
)
from llama_index.llms.openai_like import OpenAILike

from .choice import Choice
from .errors import BackendError, BackendTimeout, ModelUnavailable, openai_errors, translate_openai_error

if TYPE_CHECKING:  # pragma: no cover
    from assistant.config import Settings

NO_KEY_PLACEHOLDER = "sk-no-key"


class OpenAICompatible(OpenAILike):
    """``OpenAILike`` whose errors are :class:`BackendError` s and whose streams obey
    ``timeout`` as a wall-time limit (the client's own timeout is per read)."""

    @classmethod
    def class_name(cls) -> str:
        return "OpenAICompatible"

    def _guard(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except BackendError:
            raise
        except openai_errors() as exc:
            raise translate_openai_error(exc, self.timeout) from exc

    def _guard_stream(self, make: Callable[[], Iterator[Any]]) -> Iterator[Any]:
        deadline = time.monotonic() + self.timeout
        stream = self._guard(make)
        partial = ""
        try:
            while True:
                try:
                    item = next(stream)
                except StopIteration:
                    return
                except BackendError:
                    raise
                except openai_errors() as exc:
                    raise translate_openai_error(exc, self.timeout) from exc
                if time.monotonic() > deadline:
                    raise BackendTimeout(
                        f"the OpenAI-compatible server exceeded the {self.timeout:g}s time limit",
                        partial=partial,
                    )
                partial += getattr(item, "delta", None) or ""
                yield item
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    def _get_model_kwargs(self, **kwargs: Any) -> dict[str, Any]:
        """llama-index's request fields, except that a call's own max_tokens wins: llama-index
        puts the model's default last, so a 48-token copy of a comparison's sides or an answer's
        own limit would be sent as the setting's max_tokens."""
        fields = super()._get_model_kwargs(**kwargs)
        if kwargs.get("max_tokens") is not None:
            fields["max_tokens"] = kwargs["max_tokens"]
        return fields

    def choice_probabilities(self, messages: Sequence[dict], options: Sequence[str]) -> list[float]:
        """The probability of each option as the reply's first word, over the options alone: from
        the server's top log-probabilities of one generated token (OpenAI's ``logprobs``), or, from
        a server that returns none, 1 for the option it wrote."""
        response = self._guard(lambda: self._get_client().chat.completions.create(
            model=self.model, messages=list(messages), max_tokens=1, temperature=0,
            logprobs=True, top_logprobs=10))
        choice = response.choices[0]
        tops = choice.logprobs.content[0].top_logprobs if choice.logprobs and choice.logprobs.content else []
        mass = [0.0] * len(options)
        for top in tops:
            word = top.token.strip().lower()
            for i, option in enumerate(options):
                if word and option.startswith(word):
                    mass[i] += math.exp(top.logprob)
        if not any(mass):
            written = (choice.message.content or "").strip().lower()
            mass = [1.0 if written.startswith(o) else 0.0 for o in options]
        total = sum(mass)
        return [m / total for m in mass] if total else [1.0 / len(options)] * len(options)

    def read_choice(self, messages: Sequence[dict], options: Sequence[str], span: str = "") -> Choice:
        """choice_probabilities; a chat completion reports no log-probabilities of the prompt,
        so the span's is unknown."""
        return Choice(self.choice_probabilities(messages, options))

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._guard(lambda: super(OpenAICompatible, self).chat(messages, **kwargs))

    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        return self._guard_stream(lambda: super(OpenAICompatible, self).stream_chat(messages, **kwargs))

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return self._guard(lambda: super(OpenAICompatible, self).complete(prompt, formatted, **kwargs))

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        return self._guard_stream(
            lambda: super(OpenAICompatible, self).stream_complete(prompt, formatted, **kwargs))


def make_openai(settings: "Settings") -> OpenAICompatible:
    """The backend for ``settings``; :class:`ModelUnavailable` without a key or a server URL."""
    base_url = settings.resolved_llm_base_url()
    api_key = settings.resolved_llm_api_key()
    if not api_key:
        if not base_url:
            raise ModelUnavailable(
                "the openai backend needs an API key (PAPER_ASSISTANT_LLM_API_KEY or "
                "OPENAI_API_KEY) or a base URL of a compatible server (PAPER_ASSISTANT_LLM_BASE_URL)"
            )
        api_key = NO_KEY_PLACEHOLDER  # local servers (llama.cpp, vLLM, Ollama) don't check it
    return OpenAICompatible(
        model=settings.resolved_llm_model(),
        api_base=base_url,  # None → OPENAI_API_BASE or https://api.openai.com/v1
        api_key=api_key,
        is_chat_model=True,
        is_function_calling_model=False,
        context_window=max(settings.n_ctx, 4096),
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        timeout=settings.llm_timeout,
        max_retries=1,
    )
