"""Shared fixtures: a seeded store (read-only, one per session) and a real Chroma server.

    seed_settings    Settings on a temporary store folder, llm_backend="none"
    seed_assistant   PaperAssistant on seed_settings with the bundled seed corpus ingested once
    seeded_assistant(store_dir, cls)  the same on a store of its own (for tests that write)
    seed_store(dst)  a store of its own with the bundled corpus, unopened (for `serve`)
    answered_by(pa, llm, backend)     an assistant on pa's store whose answers `llm` writes
    talk(pa, *messages)               the last answer of a conversation of these messages
    chroma_server    "http://127.0.0.1:PORT" of a real `chroma run` server (session-scoped)
    openai_server    re-exported from tests/llm_server.py when it defines it

Tests that write must use their own store (tmp_path, see `make_settings` / `write_jsonl`), never
the seeded one: it is shared by every test of the session.
"""
from __future__ import annotations

import contextlib
import functools
import getpass
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# `make test` runs pytest-xdist workers, one more than the cores. Each worker, and every server it
# starts, runs the language model, the embedder and the map on its share of the cores (at least
# one thread): a worker whose llama.cpp threads outnumber its cores waits on threads another
# worker has descheduled (answers took four times as long; docs/benchmarks.md, "The test suite
# on two workers").
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))
    for _name in ("PAPER_ASSISTANT_N_THREADS", "PAPER_ASSISTANT_EMBED_THREADS", "PAPER_ASSISTANT_MAP_THREADS"):
        os.environ.setdefault(_name, _share)

# Gradio keeps files under $GRADIO_TEMP_DIR (else /tmp/gradio, left behind): the tests, and the
# servers they start, use a folder of their own, removed when the session ends.
GRADIO_TMP = tempfile.mkdtemp(prefix="paper-assistant-tests-gradio-")
os.environ.setdefault("GRADIO_TEMP_DIR", GRADIO_TMP)


@pytest.hookimpl(trylast=True)  # after pytest has removed this session's tmp_path folders
def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(GRADIO_TMP, ignore_errors=True)
    if _seed_template.cache_info().currsize:  # built by this process
        shutil.rmtree(_seed_template().parent, ignore_errors=True)
    # pytest keeps its tmp_path root (/tmp/pytest-of-USER) even when it removed everything in
    # it: removed when empty (a failed test's folder, or another run's, keeps it)
    with contextlib.suppress(OSError):
        (Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}").rmdir()


def pytest_collection_modifyitems(config, items):
    """Files whose tests run the model, start servers or drive the browser first (most such
    tests first), the rest after, each file's own order kept: `make test` hands whole files to
    its workers in this order (`--no-loadscope-reorder`), so the longest files start at once
    and the short ones fill in around them instead of one long file starting last."""
    def file_of(item) -> str:
        return item.nodeid.split("::")[0]

    heavy: dict[str, int] = {}
    for item in items:
        marked = any(item.get_closest_marker(m) is not None for m in ("slow", "browser"))
        heavy[file_of(item)] = heavy.get(file_of(item), 0) + marked
    files = sorted(heavy, key=lambda f: -heavy[f])  # stable: pytest's order among equals
    rank = {f: i for i, f in enumerate(files)}
    items.sort(key=lambda item: rank[file_of(item)])

from assistant.config import Settings  # noqa: E402
from servers import free_port, start_process_server  # noqa: E402

try:  # owned by another file; shared here when it exists
    from llm_server import openai_server  # noqa: F401,E402
except ImportError:  # pragma: no cover - llm_server.py missing or without the fixture
    pass

# Conversations each about its own paper of the seed corpus: (question, an author of the paper
# it must find), for tests that run several at once.
SEED_CONVERSATIONS = [
    ("Which paper studies backdoor attacks in federated learning?", "Haichang Gao"),
    ("Which paper analyzes gradient descent for training Kolmogorov-Arnold networks?", "Puyu Wang"),
    ("Which paper brings Voronoi tessellations into probabilistic circuits?", "Sahil Sidheekh"),
    ("Which paper applies zeroth-order optimization to spiking neural networks?", "Mingyue Qin"),
    ("Which paper introduces a dataset for face fill-light enhancement?", "Jue Gong"),
    ("Which paper proposes DualGraph memory for open-ended deep research agents?", "Zhuofan Shi"),
    ("Which paper introduces the BEAR benchmark for embodied multimodal models?", "Yu Qi"),
    ("Which paper proposes Meta Context Engineering?", "Haoran Ye"),
    ("Which paper studies sycophantic behavior of large language models?", "Itai Shapira"),
    ("Which paper introduces Persistent Semantic Entities?", "Zhaohui Wang"),
    ("Which paper proposes the Proteus lookup-free TCQ framework?", "Zhengwu Yang"),
    ("Which paper proposes the Top-W truncation rule?", "Arash Gholamidavoodi"),
    ("Which paper introduces Verbalized Sampling?", "Jiayi Zhang"),
    ("Which paper proposes the DAISI filtering algorithm with flow-based generative models?", "Martin Andrae"),
    ("Which paper presents SPATIA, a multi-level generative and predictive model?", "Zhenglun Kong"),
    ("Which paper proposes multi-view causal discovery for linear structural equation models?",
     "Ambroise Heurtebise"),
]

VENV_BIN = Path(sys.executable).parent
CHROMA_BIN = VENV_BIN / "chroma"


# ----------------------------------------------------------------------------- helpers

def make_settings(store_dir: Path, **overrides) -> Settings:
    """Settings for a private test store: no LLM, nothing read from a preset."""
    return Settings(store_dir=Path(store_dir), llm_backend="none", **overrides)


@functools.cache
def _seed_template() -> Path:
    """A store with the bundled corpus, indexed once per test process (1.5-5 s); the tests
    get copies of it (`seed_store`), which open in milliseconds."""
    from assistant.config import load_settings
    from assistant.library import PaperAssistant

    store = Path(tempfile.mkdtemp(prefix="paper-assistant-tests-seed-")) / "store"
    template = PaperAssistant(load_settings(llm_backend="none", store_dir=store))
    assert template.ensure_corpus()[0].papers == 20
    return store


def seed_store(dst: Path) -> Path:
    """`dst`, a store of its own holding the bundled corpus (a copy of the indexed template, its
    map's cache included): for `serve` and the tests that write."""
    shutil.copytree(_seed_template(), dst, dirs_exist_ok=True)
    return dst


def seeded_assistant(store_dir: Path, cls=None):
    """A PaperAssistant (no LLM) with the bundled corpus on its own store, for the tests that
    serve it (the page, /v1): they may write to it (`seed_store`)."""
    from assistant.config import load_settings
    from assistant.library import PaperAssistant

    settings = load_settings(llm_backend="none", store_dir=seed_store(store_dir))
    assistant = (cls or PaperAssistant)(settings)
    assert assistant.ensure_corpus() is None  # the copy holds the corpus already
    return assistant


def answered_by(pa, llm, backend: str = "local"):
    """A PaperAssistant on `pa`'s store and settings whose answers `llm` writes (a real small
    model or a scripted stand-in), passed in through the constructor under `backend` (any but
    "none", which answers without a model). `pa` is left as it was: it may be shared."""
    from assistant.library import PaperAssistant

    settings = pa.settings.model_copy(update={"llm_backend": backend})
    return PaperAssistant(settings, store=pa.store, llm=llm)


def talk(pa, *messages: str):
    """Ask `messages` in turn as one conversation; the last answer."""
    from assistant.types import Turn

    history, answer = [], None
    for m in messages:
        answer = pa.ask(m, history)
        history += [Turn(role="user", content=m), answer.as_turn()]
    return answer


def write_jsonl(path: Path, records: Iterable[dict]) -> Path:
    path = Path(path)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


def start_chroma_server(path: os.PathLike | str, *, port: int | None = None,
                        startup_timeout: float = 60.0) -> tuple[str, Callable[[], None]]:
    """Start `chroma run --path PATH --host 127.0.0.1 --port PORT`; return (url, stop).

    Waits until GET /api/v2/heartbeat answers; on exit or timeout raises RuntimeError with the
    server's log. `stop()` terminates it (idempotent).
    """
    if not CHROMA_BIN.exists():
        raise RuntimeError(f"the chroma console script is missing: {CHROMA_BIN}")
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    stop = start_process_server(
        [str(CHROMA_BIN), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        f"{url}/api/v2/heartbeat", startup_timeout, "chroma run",
        env={"ANONYMIZED_TELEMETRY": "False"}, stop_timeout=15,
    )
    return url, stop


@contextlib.contextmanager
def chroma_server_running(path: os.PathLike | str, **kwargs) -> Iterator[str]:
    """Context manager form of `start_chroma_server`; yields the URL."""
    url, stop = start_chroma_server(path, **kwargs)
    try:
        yield url
    finally:
        stop()


# ----------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def seed_settings(tmp_path_factory) -> Settings:
    return make_settings(tmp_path_factory.mktemp("seed_store"))


@pytest.fixture(scope="session")
def seed_assistant(seed_settings):
    """The seed corpus ingested once per session. Read-only: do not write to it."""
    from assistant.library import PaperAssistant

    seed_store(seed_settings.store_dir)
    pa = PaperAssistant(seed_settings)
    assert pa.stats()["papers"] == 20
    return pa


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory) -> Iterator[str]:
    """URL (http://127.0.0.1:PORT) of a real Chroma server on a temporary folder."""
    path = tmp_path_factory.mktemp("chroma_server")
    try:
        url, stop = start_chroma_server(path)
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield url
    finally:
        stop()
