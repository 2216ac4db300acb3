"""Settings: the PAPER_ASSISTANT_ environment, presets and their precedence, offline defaults."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.config import PRESETS, SEED_CORPUS, Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def clean_env(monkeypatch):
    """No PAPER_ASSISTANT_* variable from the caller's environment leaks into a test."""
    for name in list(os.environ):
        if name.upper().startswith("PAPER_ASSISTANT_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_defaults(clean_env):
    s = load_settings()
    assert s.llm_backend == "local"
    assert s.embed_backend == "onnx" and s.embed_model == "all-MiniLM-L6-v2"
    assert s.store_dir == Path("vectorstore")
    assert s.chroma_url is None
    assert s.k == 5
    assert SEED_CORPUS.is_file()


def test_env_prefix(clean_env):
    clean_env.setenv("PAPER_ASSISTANT_K", "7")
    clean_env.setenv("PAPER_ASSISTANT_STORE_DIR", "/tmp/somewhere")
    clean_env.setenv("PAPER_ASSISTANT_CHROMA_URL", "http://127.0.0.1:8123")
    clean_env.setenv("PAPER_ASSISTANT_LLM_BACKEND", "openai")
    clean_env.setenv("K", "99")  # unprefixed variables are ignored
    s = load_settings()
    assert s.k == 7
    assert s.store_dir == Path("/tmp/somewhere")
    assert s.chroma_url == "http://127.0.0.1:8123"
    assert s.llm_backend == "openai"
    # the plain constructor reads the same environment
    assert Settings().k == 7


def test_env_value_is_validated(clean_env):
    clean_env.setenv("PAPER_ASSISTANT_LLM_BACKEND", "nonsense")
    with pytest.raises(ValueError):
        load_settings()


def test_presets(clean_env):
    assert set(PRESETS) >= {"default", "extractive", "openai"}
    assert load_settings("extractive").llm_backend == "none"
    assert load_settings("openai").llm_backend == "openai"
    assert load_settings("default").llm_backend == "local"


def test_env_beats_preset(clean_env):
    clean_env.setenv("PAPER_ASSISTANT_LLM_BACKEND", "local")
    assert load_settings("extractive").llm_backend == "local"


def test_override_beats_env_and_preset(clean_env):
    clean_env.setenv("PAPER_ASSISTANT_LLM_BACKEND", "local")
    assert load_settings("extractive", llm_backend="openai").llm_backend == "openai"
    assert load_settings("default", llm_backend="none").llm_backend == "none"
    clean_env.setenv("PAPER_ASSISTANT_K", "7")
    assert load_settings(k=3).k == 3


def test_none_overrides_are_ignored(clean_env):
    clean_env.setenv("PAPER_ASSISTANT_STORE_DIR", "/tmp/from-env")
    s = load_settings("extractive", store_dir=None, chroma_url=None, llm_backend=None)
    assert s.store_dir == Path("/tmp/from-env")
    assert s.llm_backend == "none"


def test_unknown_preset_raises(clean_env):
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        load_settings("nope")


def test_importing_assistant_sets_offline_env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "ANONYMIZED_TELEMETRY")}
    code = ("import os, json; before = {k: os.environ.get(k) for k in "
            "('HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE', 'ANONYMIZED_TELEMETRY')}; "
            "import assistant; "
            "after = {k: os.environ.get(k) for k in before}; print(json.dumps([before, after]))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    before, after = json.loads(proc.stdout.strip().splitlines()[-1])
    assert before == {"HF_HUB_OFFLINE": None, "TRANSFORMERS_OFFLINE": None, "ANONYMIZED_TELEMETRY": None}
    assert after == {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}

