"""Seconds from `paper-assistant serve` (backend none) starting to /healthz answering 200, on a
fresh copy of the seed store, for each checkout given, alternating, N times (default 5):

    .venv/bin/python benchmarks/serve_start.py WORKTREE_OF_AN_OLDER_COMMIT /work/main

Each checkout is imported through PYTHONPATH, so the same interpreter and packages time both.
Run it on a quiet machine (nothing else running).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

SEED_STORE = Path(__file__).resolve().parent / ".stores" / "seed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def start_seconds(code: str) -> float:
    """One start of `serve` from checkout `code`, until /healthz answers."""
    folder = Path(tempfile.mkdtemp(prefix="serve-start-"))
    shutil.copytree(SEED_STORE, folder / "store")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=code, GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1",
               GRADIO_TEMP_DIR=str(folder / "gradio"))  # Gradio's own files, removed with the folder
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "assistant.cli", "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--store", str(folder / "store"), "--backend", "none"],
                            cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not healthy(port):
            if proc.poll() is not None:
                raise SystemExit(f"serve from {code} exited with {proc.returncode}")
            time.sleep(0.05)
        return time.monotonic() - started
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(folder)


def main() -> None:
    codes = sys.argv[1:] or [str(Path(__file__).resolve().parents[1])]
    times: dict[str, list[float]] = {code: [] for code in codes}
    for _ in range(int(os.environ.get("N", 5))):
        for code in codes:
            times[code].append(start_seconds(code))
    for code, seconds in times.items():
        seconds.sort()
        print(f"{code}: median {seconds[len(seconds) // 2]:.2f} s  ({' '.join(f'{s:.2f}' for s in seconds)})")


if __name__ == "__main__":
    main()
