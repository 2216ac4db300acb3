"""The local model served by llama.cpp's own `llama-server` as a child process, for several users
at once: `--parallel N` slots decoded together (continuous batching), used through the
OpenAI-compatible backend. Chosen with ``Settings.llm_server_parallel = N`` (N > 0) and the
local backend; 0 keeps the in-process llama-cpp-python model; unset, `serve` uses
``serve_parallel`` slots when llama-server is built and one-user commands stay in-process.

    llama_cpp_tools() -> Path | None      folder with llama-server / llama-bench, if built
    LlamaServer(binary, model, parallel=4, n_ctx=16384, threads=2)   start()/stop(), or `with`
    make_server_llm(settings, model_path) -> ServerLLM   starts (once per process) and connects
    serving_settings(settings) -> Settings   what `serve` runs with by default (N slots when built)

The binaries come from the llama.cpp sources that llama-cpp-python vendors, built by
`make run` (llama-server) or `make llama-tools` (with llama-bench) into ~/.cache/paper-assistant/llama-tools/bin (or $PAPER_ASSISTANT_LLAMA_BIN).
The child listens on 127.0.0.1 only, needs no network, and dies with us: stopped at exit, and
killed by the kernel if we die first (PR_SET_PDEATHSIG).
"""
from __future__ import annotations

import atexit
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Optional, Sequence

from ..config import Settings, default_cache_dir
from .errors import BackendTimeout, ModelUnavailable
from .turns import Turns, TurnTimeout
from .openai import OpenAICompatible

log = logging.getLogger(__name__)

LLAMA_BIN_ENV = "PAPER_ASSISTANT_LLAMA_BIN"


def llama_cpp_tools() -> Optional[Path]:
    """The folder holding `llama-server` (and `llama-bench`), or None when not built."""
    env = os.environ.get(LLAMA_BIN_ENV)
    folder = Path(env).expanduser() if env else default_cache_dir() / "llama-tools" / "bin"
    return folder if (folder / "llama-server").is_file() else None


def serving_settings(settings: Settings) -> Settings:
    """The settings `serve` runs with: an unset ``llm_server_parallel`` (None) becomes
    ``serve_parallel`` slots when the local model answers and llama-server is built, else 0
    (in-process, one answer at a time)."""
    if settings.llm_server_parallel is not None:
        return settings
    slots = settings.serve_parallel if settings.llm_backend == "local" and llama_cpp_tools() else 0
    return settings.model_copy(update={"llm_server_parallel": slots})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            # PR_SET_PDEATHSIG. SIGKILL, not SIGTERM: llama-server takes a first SIGTERM as "finish
            # the requests in progress" and, busy, went on for minutes after its parent was gone
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))
        except Exception:
            pass
    os.setsid()  # not in our terminal's process group: Ctrl-C reaches serve, which stops it


# PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process: a
# llama-server started from serve's warm-up thread or a request's worker thread was killed as
# soon as that thread finished. So every child is forked by this one thread, which lives as
# long as the process.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama-server-spawner")


def spawn_with_parent(command: Sequence[str], **popen: Any) -> subprocess.Popen:
    """`subprocess.Popen(command, **popen)` for a child that dies with this process (see
    _die_with_parent), whatever thread asks for it."""
    return _SPAWNER.submit(subprocess.Popen, list(command), preexec_fn=_die_with_parent,
                           **popen).result()


class LlamaServer:
    """`llama-server` on a free loopback port, with `parallel` slots sharing `n_ctx` tokens."""

    def __init__(self, binary: Path, model: Path, *, parallel: int = 4, n_ctx: int = 16384,
                 threads: int = 0, startup_timeout: float = 180.0,
                 extra_args: Sequence[str] = ()):
        self.binary, self.model = Path(binary), Path(model)
        self.parallel, self.n_ctx = max(1, parallel), n_ctx
        self.threads = threads or os.cpu_count() or 1
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args)
        self.port = 0
        self.proc: Optional[subprocess.Popen] = None
        self.start_seconds = 0.0
        self.turns = Turns(self.parallel)  # requests beyond the slots wait here, visibly
        self._log = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [str(self.binary), "-m", str(self.model), "--host", "127.0.0.1",
                "--port", str(self.port), "--parallel", str(self.parallel),
                "--ctx-size", str(self.n_ctx), "--threads", str(self.threads),
                "--threads-batch", str(self.threads), "--cont-batching", "--no-webui",
                "--n-gpu-layers", "0", "--jinja", *self.extra_args]

    def log_tail(self, chars: int = 4000) -> str:
        if self._log is None or self._log.closed:
            return ""
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode("utf-8", "replace")[-chars:]

    def start(self) -> "LlamaServer":
        if not self.binary.is_file():
            raise ModelUnavailable(f"llama-server not found at {self.binary} (build it: make llama-tools)")
        self.port = _free_port()
        self._log = tempfile.TemporaryFile(mode="w+b")
        t0 = time.monotonic()
        self.proc = spawn_with_parent(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        atexit.register(self.stop)
        deadline = t0 + self.startup_timeout
        while True:
            if self.proc.poll() is not None:
                text = self.log_tail()
                self.stop()
                raise ModelUnavailable(f"llama-server exited with code {self.proc.returncode}: "
                                       f"{text[-600:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise ModelUnavailable(f"llama-server did not answer within {self.startup_timeout:g}s")
            time.sleep(0.2)
        self.start_seconds = time.monotonic() - t0
        log.info("llama-server (%d slots) ready on port %d in %.1fs", self.parallel, self.port,
                 self.start_seconds)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        if self._log is not None and not self._log.closed:
            self._log.close()

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


# ----------------------------------------------------------------- the backend over the child
def lookup_args(draft: int) -> list[str]:
    """llama-server's own prompt-lookup decoding, as the in-process model does it (llm/lookup.py):
    `draft` tokens proposed after a matching 3-gram of the prompt or the reply so far."""
    if draft <= 0:
        return []
    return ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3",
            "--spec-ngram-simple-size-m", str(draft)]


_SERVERS: dict[tuple, LlamaServer] = {}
_SERVERS_LOCK = threading.Lock()


def _server_for(settings: Settings, model_path: Path) -> LlamaServer:
    tools = llama_cpp_tools()
    if tools is None:
        raise ModelUnavailable(
            "llm_server_parallel is set but llama-server is not built (make llama-tools, or set "
            f"{LLAMA_BIN_ENV} to the folder holding it); or set llm_server_parallel=0")
    n = settings.llm_server_parallel
    key = (str(model_path), n, settings.llm_server_slot_ctx, settings.n_threads, str(tools),
           settings.lookup_draft)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None or not server.alive():
            server = LlamaServer(tools / "llama-server", model_path, parallel=n,
                                 n_ctx=settings.llm_server_slot_ctx * n, threads=settings.n_threads,
                                 extra_args=lookup_args(settings.lookup_draft)).start()
            _SERVERS[key] = server
        return server


def make_server_llm(settings: Settings, model_path: Path):
    """The local model through a llama-server child with ``settings.llm_server_parallel``
    slots (started on first use, once per process), as an OpenAI-compatible LLM whose requests
    beyond the slots wait in a visible queue."""
    from llama_index.core.bridge.pydantic import PrivateAttr

    server = _server_for(settings, model_path)
    turns = server.turns

    class ServerLLM(OpenAICompatible):
        """OpenAI-compatible, gated by the server's slots (``Turns``): a request beyond them
        waits here, and its stream says how many are ahead."""

        _llama_server: Any = PrivateAttr(default=None)
        grammars: ClassVar[bool] = True  # llama-server takes a GBNF "grammar" in the request body

        @classmethod
        def class_name(cls) -> str:
            return "LlamaServerLLM"

        def _turn(self):
            try:
                for ahead in turns.wait(self.timeout):
                    yield ahead
            except TurnTimeout:
                raise BackendTimeout(f"the local model's {turns.capacity} slots stayed busy for "
                                     f"more than {self.timeout:g}s") from None

        def stream_chat(self, messages, **kwargs):
            from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole

            if kwargs.get("grammar"):  # llama-server's own field, beside the OpenAI ones
                kwargs["extra_body"] = {**kwargs.get("extra_body", {}), "grammar": kwargs.pop("grammar")}

            def gen():
                for ahead in self._turn():
                    yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=""),
                                       delta="", additional_kwargs={"waiting": ahead})
                try:
                    yield from OpenAICompatible.stream_chat(self, messages, **kwargs)
                finally:
                    turns.release()

            return gen()

        def chat(self, messages, **kwargs):
            for _ in self._turn():
                pass
            try:
                return OpenAICompatible.chat(self, messages, **kwargs)
            finally:
                turns.release()

        def choice_probabilities(self, messages, options):
            for _ in self._turn():
                pass
            try:
                return OpenAICompatible.choice_probabilities(self, messages, options)
            finally:
                turns.release()

    llm = ServerLLM(
        model=model_path.name, api_base=server.base_url, api_key="sk-no-key",
        is_chat_model=True, is_function_calling_model=False, context_window=settings.llm_server_slot_ctx,
        max_tokens=settings.max_tokens, temperature=settings.temperature,
        timeout=settings.llm_timeout, max_retries=0,
    )
    llm._llama_server = server  # for tests and benchmarks
    return llm
