"""The local backend: a GGUF run in-process by llama.cpp (llama-cpp-python), behind
llama-index's ``LLM`` interface. A model is loaded once per process and shared; one
generation at a time holds its lock."""
from __future__ import annotations

import atexit
import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Iterator, Optional, Sequence

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback

from ..text import common_prefix
from .choice import Choice
from .errors import INSTALL_HINT, BackendError, BackendTimeout, ModelUnavailable
from .kvcache import first_turn_end, reuse_prefix
from .lookup import Sampling
from .lookup import generate as lookup_generate
from .turns import Turns, TurnTimeout

log = logging.getLogger(__name__)


@dataclass
class _LoadedModel:
    llama: Any  # llama_cpp.Llama
    lock: Turns  # one generation at a time, the others wait in arrival order
    load_seconds: float


@dataclass(frozen=True)
class Waiting:
    """Yielded by a generation that waits for the model, instead of text: ``ahead`` requests
    will be served first. The streaming methods turn it into a ``ChatResponse`` with no delta and
    ``additional_kwargs={"waiting": ahead}`` (see ``llm.stream_chat_events``)."""

    ahead: int


def _text(deltas: Iterable[Any]) -> str:
    return "".join(d for d in deltas if isinstance(d, str))


_MODELS: dict[tuple[str, int, int], _LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ModelUnavailable(
            f"the local backend needs llama-cpp-python, which is not installed ({exc}). "
            f"Install it with: {INSTALL_HINT}; or use --preset openai / --preset extractive."
        ) from exc
    return llama_cpp


def _load_model(path: str, n_ctx: int, n_threads: int) -> _LoadedModel:
    """Load a GGUF once per process per (path, n_ctx, n_threads) and share it."""
    key = (path, n_ctx, n_threads)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is not None:
            return loaded
        llama_cpp = _import_llama_cpp()
        start = time.perf_counter()
        try:
            llama = llama_cpp.Llama(
                model_path=path,
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                n_gpu_layers=0,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelUnavailable(f"could not load the model {path}: {exc}") from exc
        if "tokenizer.chat_template" in llama.metadata:
            # Always the GGUF's own template (llama-cpp built a Jinja2 handler for it under
            # this name); its default would swap in a built-in look-alike when it "guesses".
            llama.chat_format = "chat_template.default"
        else:
            log.warning("%s has no chat template in its metadata; llama-cpp-python falls back to "
                        "its %r format, which may not suit this model", path, llama.chat_format)
        loaded = _LoadedModel(llama, Turns(1), time.perf_counter() - start)
        log.info("loaded %s in %.1fs (chat format %s)", path, loaded.load_seconds,
                 getattr(llama, "chat_format", None))
        _MODELS[key] = loaded
        return loaded



@atexit.register
def _close_models() -> None:
    """Free the loaded models at exit, before the interpreter takes llama_cpp's module apart
    (a Llama deleted after that fails noisily in its __del__). One still generating, in a
    daemon thread, is left alone."""
    if not _MODELS_LOCK.acquire(timeout=5):  # a model still loading: leave it
        return
    try:
        for loaded in _MODELS.values():
            if loaded.lock.acquire(blocking=False):
                try:
                    loaded.llama.close()
                except Exception:  # pragma: no cover - nothing to do about it at exit
                    pass
        _MODELS.clear()
    finally:
        _MODELS_LOCK.release()


def _template_tokens(llama: Any) -> tuple[str, str, str]:
    """The GGUF's chat template and its end and begin tokens, as the formatter takes them."""
    template = llama.metadata.get("tokenizer.chat_template")
    if template is None:
        raise ValueError("the model has no chat template")
    token = lambda i: llama.detokenize([i], special=True).decode("utf-8", "ignore")  # noqa: E731
    return template, token(llama.token_eos()), token(llama.token_bos())


def _chat_prompt(llama: Any, messages: Sequence[dict]) -> str:
    """The messages in the model's chat format, ending where the assistant's reply begins."""
    return _chat_formatter(*_template_tokens(llama))(messages=list(messages)).prompt


def _as_list(stop: Any) -> list[str]:
    return [] if stop is None else [stop] if isinstance(stop, str) else list(stop)


@lru_cache(maxsize=4)
def _chat_formatter(template: str, eos: str, bos: str) -> Any:
    """The GGUF's chat template compiled once (Jinja compiles it anew for every formatter, tens of
    milliseconds per reading); rendering a compiled template is safe from several threads."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    return Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos, add_generation_prompt=True)


def _opening(llama: Any, prompt: str, head: list[int], last: str) -> Optional[int]:
    """How many of the prompt's tokens run through the first line of its last message (`last`):
    what every prompt of one template shares (a reading's preamble). None when that line is the
    whole message, or its tokens are not a prefix of the prompt's."""
    line = last.split("\n", 1)[0]
    at = prompt.rfind(last)
    if at < 0 or line == last:
        return None
    tokens = llama.tokenize(prompt[: at + len(line) + 1].encode("utf-8"), add_bos=False, special=True)
    return len(tokens) if head[: len(tokens)] == tokens and len(tokens) < len(head) else None


def _span_positions(llama: Any, prompt: str, head: list[int], span: str) -> list[int]:
    """The positions in `head` (the prompt's tokens) of the tokens wholly inside the last
    occurrence of `span` in the prompt; [] when it does not occur."""
    at = prompt.rfind(span) if span else -1
    if at < 0:
        return []
    start = common_prefix(llama.tokenize(prompt[:at].encode("utf-8"), add_bos=False, special=True), head)
    end = common_prefix(llama.tokenize(prompt[: at + len(span)].encode("utf-8"), add_bos=False,
                                       special=True), head)
    return list(range(start, end))


def _read_choice(llama: Any, prompt: str, options: Sequence[str], last: str = "", span: str = "") -> Choice:
    """The probability of each option as the first token of the reply to ``prompt``, over the
    options alone (each option's first token, with and without a leading capital), and the
    log-probability of `span`'s tokens (its last occurrence in the prompt) given what precedes
    them, when a span is given. The prompt through the first line of its last message (`last`;
    the chat template's system turn and a reading's preamble) is kept in the KV cache; the rest
    is evaluated anew each time in one piece, so the probabilities do not depend on what the
    model read before (kvcache.reuse_prefix)."""
    import numpy as np

    head = llama.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
    if len(head) < 2 or len(head) > llama.n_ctx():
        raise ValueError(f"cannot read a prompt of {len(head)} tokens")
    opening = _opening(llama, prompt, head, last) if last else None
    positions = _span_positions(llama, prompt, head, span)
    span_logprobs = reuse_prefix(llama, head, opening=opening if opening is not None else first_turn_end(llama, head),
                                 scored=positions)
    llama._batch.set_batch(batch=head[-1:], n_past=llama.n_tokens, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama._requires_eval = True  # the context's logits are ours, not those of input_ids
    logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(1, llama.n_vocab()))[0]
    logits = logits.astype(np.float64)
    mass = []
    for option in options:
        ids = {llama.tokenize(form.encode("utf-8"), add_bos=False, special=False)[0]
               for form in (option, option.capitalize(), " " + option)}
        mass.append(float(np.logaddexp.reduce([logits[i] for i in ids])))
    top = max(mass)
    weights = [math.exp(m - top) for m in mass]
    probabilities = [w / sum(weights) for w in weights]
    if span_logprobs is None:
        return Choice(probabilities)
    return Choice(probabilities, sum(span_logprobs), len(span_logprobs))


def _message_dicts(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    out = []
    for m in messages:
        role = m.role.value if isinstance(m.role, MessageRole) else str(m.role)
        if role not in ("system", "user", "assistant"):
            role = "user" if role not in ("chatbot", "model") else "assistant"
        out.append({"role": role, "content": m.content or ""})
    return out


class LocalLlamaCPP(CustomLLM):
    """A GGUF run in-process by llama.cpp, behind llama-index's ``LLM`` interface.

    Chat is formatted by the chat template stored in the GGUF's own metadata
    (``tokenizer.chat_template``; ChatML for Qwen2.5), not llama-index's generic prompt format,
    and written by prompt-lookup decoding (llm/lookup.py). The model is loaded lazily (or via
    :meth:`load`) and shared per process; one generation at a time holds its lock, others queue
    in arrival order (each waits at most ``timeout`` seconds for its turn, then generates for at
    most ``timeout`` seconds).
    While a streamed call waits, its stream reports how many are ahead of it (:class:`Waiting`).
    A chat call given ``grammar=`` (GBNF text) writes only what the grammar admits.
    """

    grammars: ClassVar[bool] = True  # chat calls accept grammar= (see _constrained)

    model_path: str = Field(description="Path of the GGUF file.")
    n_ctx: int = Field(default=4096, gt=0)
    n_threads: int = Field(default=0, ge=0, description="0: os.cpu_count()")
    max_tokens: int = Field(default=320, gt=0)
    temperature: float = Field(default=0.1, ge=0.0)
    timeout: float = Field(default=120.0, gt=0, description="Wall-time limit in seconds.")
    stop: list[str] = Field(default_factory=list)
    lookup_draft: int = Field(default=3, ge=0, description="Tokens proposed per step from the "
                              "prompt (llm/lookup.py); 0: one token a step.")

    _loaded: Optional[_LoadedModel] = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "LocalLlamaCPP"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.n_ctx,
            num_output=self.max_tokens,
            is_chat_model=True,
            model_name=Path(self.model_path).name,
        )

    # -- model
    @property
    def threads(self) -> int:
        return self.n_threads or os.cpu_count() or 1

    def load(self) -> Any:
        """Load (or fetch from the process cache) the ``llama_cpp.Llama``; returns it."""
        if self._loaded is None:
            self._loaded = _load_model(str(Path(self.model_path).resolve()), self.n_ctx, self.threads)
        return self._loaded.llama

    @property
    def load_seconds(self) -> float:
        self.load()
        assert self._loaded is not None
        return self._loaded.load_seconds

    def chat_template_info(self) -> dict[str, Any]:
        """Which chat template llama-cpp-python uses: ``chat_format`` and whether it is the GGUF's."""
        llama = self.load()
        template = llama.metadata.get("tokenizer.chat_template")
        fmt = llama.chat_format
        return {
            "chat_format": fmt,
            "gguf_has_template": template is not None,
            # "chat_template.default" is the Jinja2 formatter built from the GGUF's template.
            "uses_gguf_template": template is not None and fmt == "chat_template.default"
            and llama.chat_handler is None,
            "template": template,
        }

    def count_tokens(self, text: str) -> int:
        """Exact token count of ``text`` for this model (no BOS)."""
        llama = self.load()
        return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def choice_probabilities(self, messages: Sequence[dict], options: Sequence[str]) -> list[float]:
        """The probability of each option as the reply's first word (over the options alone),
        formatted by the GGUF's chat template; holds the model's turn like a generation."""
        return self.read_choice(messages, options).probabilities

    def read_choice(self, messages: Sequence[dict], options: Sequence[str], span: str = "") -> Choice:
        """choice_probabilities, with the log-probability of `span` (a part of the last message)
        read in the same pass: the model's reading of a candidate paper (answer/reading.py)."""
        llama = self.load()
        assert self._loaded is not None
        try:
            prompt = _chat_prompt(llama, messages)  # before taking the model's turn
        except ValueError as exc:
            raise BackendError(f"local model failed to read: {exc}") from exc
        for _ in self._loaded.lock.wait(self.timeout):
            pass  # waiting in line: nothing to show for a reading
        try:
            return _read_choice(llama, prompt, options, messages[-1].get("content", "") if messages else "", span)
        except (ValueError, RuntimeError) as exc:
            raise BackendError(f"local model failed to read: {exc}") from exc
        finally:
            self._loaded.lock.release()

    # -- generation core
    def _generate(self, make_stream: Callable[[Any], Iterable[dict]],
                  extract: Callable[[dict], str]) -> Iterator[Any]:
        """Yield text deltas of one generation (and :class:`Waiting` while other requests are
        ahead of it), holding the model's turn and enforcing the timeout."""
        self.load()
        assert self._loaded is not None
        loaded = self._loaded
        try:
            for ahead in loaded.lock.wait(self.timeout):
                yield Waiting(ahead)
        except TurnTimeout:
            raise BackendTimeout(
                f"the local model stayed busy with other requests for more than {self.timeout:g}s"
            ) from None
        stream = None
        parts: list[str] = []
        try:
            start = time.monotonic()
            deadline = start + self.timeout
            try:
                stream = make_stream(loaded.llama)
                for chunk in stream:
                    # Checked between tokens: the prompt's evaluation itself can't be interrupted.
                    if time.monotonic() > deadline:
                        raise BackendTimeout(
                            f"the local model exceeded the {self.timeout:g}s time limit "
                            f"after {len(parts)} chunks", partial="".join(parts),
                        )
                    text = extract(chunk)
                    if text:
                        parts.append(text)
                        yield text
            except BackendError:
                raise
            except (ValueError, RuntimeError) as exc:  # e.g. prompt longer than n_ctx
                raise BackendError(f"local model failed: {exc}") from exc
        finally:
            if stream is not None and hasattr(stream, "close"):
                try:
                    stream.close()  # stop llama.cpp's generator before releasing the lock
                except Exception:  # pragma: no cover
                    pass
            loaded.lock.release()

    def _chat_deltas(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[Any]:
        """The reply to `messages`, formatted by the GGUF's own chat template (as
        ``create_chat_completion`` formats them) and written by prompt-lookup decoding."""
        llama = self.load()
        if "tokenizer.chat_template" not in llama.metadata:
            return self._chat_deltas_by_format(messages, **kwargs)
        try:
            formatted = _chat_formatter(*_template_tokens(llama))(messages=_message_dicts(messages))
        except ValueError as exc:
            raise BackendError(f"local model failed: {exc}") from exc
        prompt = llama.tokenize(formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special,
                                special=True)
        stop = [*(kwargs.get("stop", self.stop) or []), *_as_list(formatted.stop)]
        if kwargs.get("grammar"):
            return self._generate(lambda llama: self._constrained(llama, prompt, stop, kwargs),
                                  lambda chunk: chunk["choices"][0]["text"])
        return self._generate(lambda llama: self._lookup(llama, prompt, stop, kwargs), str)

    def _chat_deltas_by_format(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[Any]:
        """A GGUF without a chat template: llama-cpp-python's format for it, one token a step."""
        params = {"max_tokens": kwargs.get("max_tokens", self.max_tokens),
                  "temperature": kwargs.get("temperature", self.temperature),
                  "stop": kwargs.get("stop", self.stop) or None}

        def make(llama: Any) -> Iterable[dict]:
            return llama.create_chat_completion(messages=_message_dicts(messages), stream=True, **params)

        return self._generate(make, lambda c: (c["choices"][0].get("delta") or {}).get("content") or "")

    def _raw_deltas(self, prompt: str, **kwargs: Any) -> Iterator[Any]:
        """The continuation of `prompt`, already in the model's format."""
        llama = self.load()
        tokens = llama.tokenize(prompt.encode("utf-8"), special=True)
        stop = list(kwargs.get("stop", self.stop) or [])
        return self._generate(lambda llama: self._lookup(llama, tokens, stop, kwargs), str)

    def _constrained(self, llama: Any, prompt: list[int], stop: list[str], kwargs: dict) -> Iterable[dict]:
        """The reply under `kwargs["grammar"]` (GBNF): llama.cpp's grammar sampler admits only
        the tokens the grammar allows, one token a step (prompt lookup proposes tokens the
        grammar may refuse)."""
        grammar = _import_llama_cpp().LlamaGrammar.from_string(kwargs["grammar"], verbose=False)
        return llama.create_completion(prompt, grammar=grammar, stream=True, stop=stop,
                                       max_tokens=kwargs.get("max_tokens", self.max_tokens),
                                       temperature=kwargs.get("temperature", self.temperature))

    def _lookup(self, llama: Any, prompt: list[int], stop: list[str], kwargs: dict) -> Iterator[str]:
        sampling = Sampling(temperature=kwargs.get("temperature", self.temperature))
        return lookup_generate(llama, prompt, max_tokens=kwargs.get("max_tokens", self.max_tokens),
                               sampling=sampling, stop=stop, draft=self.lookup_draft)

    # -- llama-index interface
    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        text = _text(self._chat_deltas(messages, **kwargs))
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        def gen() -> ChatResponseGen:
            content = ""
            for delta in self._chat_deltas(messages, **kwargs):
                if isinstance(delta, Waiting):
                    yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=content),
                                       delta="", additional_kwargs={"waiting": delta.ahead})
                    continue
                content += delta
                yield ChatResponse(
                    message=ChatMessage(role=MessageRole.ASSISTANT, content=content), delta=delta
                )

        return gen()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """``formatted=True``: ``prompt`` is already in the model's format (raw completion);
        otherwise it is sent as one user message through the GGUF's chat template."""
        deltas = self._raw_deltas(prompt, **kwargs) if formatted else self._chat_deltas(
            [ChatMessage(role=MessageRole.USER, content=prompt)], **kwargs)
        return CompletionResponse(text=_text(deltas))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        deltas = self._raw_deltas(prompt, **kwargs) if formatted else self._chat_deltas(
            [ChatMessage(role=MessageRole.USER, content=prompt)], **kwargs)

        def gen() -> CompletionResponseGen:
            text = ""
            for delta in deltas:
                if isinstance(delta, Waiting):
                    yield CompletionResponse(text=text, delta="",
                                             additional_kwargs={"waiting": delta.ahead})
                    continue
                text += delta
                yield CompletionResponse(text=text, delta=delta)

        return gen()

