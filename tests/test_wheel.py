"""The built wheel is a working product: `pip install .` (not editable) answers questions.

The sources are copied to a temporary folder and built there as `python -m build` does (an
sdist, then the wheel from the sdist), so nothing is written into the tree. The wheel goes into
a fresh venv that borrows this environment's dependencies through a .pth file added after the
install; every command runs from a folder outside the repository without PYTHONPATH, and the
test checks that the installed package and its own copy of the prompts are what runs.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds a wheel and a venv

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ["assistant", "prompts", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md"]
QUESTION = "Which paper studies backdoor attacks in federated learning?"
PROMPTS = sorted(p.name for p in (ROOT / "prompts").glob("*.txt"))

# What the installed package says about itself, run by the venv's python.
INSPECT = """
import json, sys, assistant, assistant.config as config, assistant.prompts as prompts
found = {n: next(str(c / f"{n}.txt") for c in prompts.CANDIDATES if (c / f"{n}.txt").is_file())
         for n in sys.argv[1:]}
print(json.dumps({"package": assistant.__file__, "seed": str(config.SEED_CORPUS),
                  "prompt_files": found,
                  "prompts": {n: prompts.load_prompt(n) for n in found}}))
"""


def _run(cmd, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith("PAPER_ASSISTANT_")}
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """(wheel path, build log)."""
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "prompts")
                            if name == "assistant" else shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    proc = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src],
                cwd=out)
    wheels = list(out.glob("paper_assistant-*.whl"))
    assert len(wheels) == 1, proc.stdout
    return wheels[0], proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def venv(built, tmp_path_factory) -> Path:
    env = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", env], cwd=env)
    python = env / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
          "--no-index", "--no-cache-dir", built[0]], cwd=env)
    # The dependencies: this environment's site-packages, after the venv's own.
    site = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                cwd=env).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "borrowed_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    return env


def test_the_wheel_carries_the_prompts_and_the_page_assets(built):
    wheel, log = built
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"assistant/prompts/{p}" for p in PROMPTS} <= names
    assert {"assistant/ui/static/style.css", "assistant/ui/static/markers.js",
            "assistant/ui/static/map.js",
            "assistant/data/seed_corpus.txt", "assistant/llm/packaged.py"} <= names
    assert not any(n.startswith(("tests/", "prompts/")) for n in names)
    assert "License classifiers are deprecated" not in log
    assert "project.license` as a TOML table is deprecated" not in log


def test_the_installed_package_answers_with_its_own_prompts(venv, tmp_path):
    names = [p.removesuffix(".txt") for p in PROMPTS]
    info = json.loads(_run([venv / "bin" / "python", "-c", INSPECT, *names], cwd=tmp_path).stdout)
    assert sorted(info["prompts"]) == sorted(names)
    installed = str(venv.resolve())
    assert info["package"].startswith(installed), info["package"]
    assert all(f.startswith(installed) for f in info["prompt_files"].values()), info["prompt_files"]
    for name, text in info["prompts"].items():  # the copy is the source's
        assert text == (ROOT / "prompts" / f"{name}.txt").read_text("utf-8").strip()
    store = tmp_path / "store"
    script = venv / "bin" / "paper-assistant"
    _run([script, "ingest", "--quiet", "--store", store, info["seed"]], cwd=tmp_path)
    answer = json.loads(_run([script, "ask", "--json", "--backend", "none", "--store", store,
                              QUESTION], cwd=tmp_path).stdout)
    assert answer["citations"] and answer["citations"][0]["authors"][0] == "zhixuan ma"
    assert "[1]" in answer["answer"] and not answer["abstained"]
