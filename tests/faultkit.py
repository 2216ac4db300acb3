"""Fault injection on loopback, shared by tests/test_faults.py and benchmarks/faults.py.

    start_serve(store, port=..., backend="none", chroma_url=None) -> Serve   `paper-assistant serve`
                                                   as a subprocess (SIGKILL-able), ready at /healthz
    PageSession(url).upload(path, on_progress)     the Corpus tab's upload, as the browser does it:
                                                   POST /gradio_api/upload, then the upload button's
                                                   event through /gradio_api/queue/join + queue/data
    PageSession(url).chat(message, history)        the page's public /chat endpoint (gradio_client's)
    v1_conversation(url, question, follow_up)      two turns through /v1 with a plain OpenAI client
    store_consistency(settings) -> dict            what Chroma holds vs the BM25 cache vs stats()
    papers_file(path, n, offset)                   n real abstracts (../shared/data) as JSON Lines
    rss_kb(pid)                                    resident memory of a process

Everything is loopback only; nothing is mocked.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import httpx

try:
    from servers import free_port
except ImportError:  # imported as tests.faultkit
    from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
VENV_BIN = Path(sys.executable).parent
# `paper-assistant` from this checkout (the venv's console script may point at another one)
CLI = [sys.executable, "-m", "assistant.cli"]


def cli_env(**extra) -> dict:
    """The environment for a CLI subprocess: this checkout first on the path, no telemetry."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "ANONYMIZED_TELEMETRY": "False",
            "GRADIO_ANALYTICS_ENABLED": "False", **extra}


def run_cli(*args: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=cli_env(**env))


# ----------------------------------------------------------------------------- serve

@dataclass
class Serve:
    url: str
    proc: subprocess.Popen
    log: object
    store: Path
    args: list = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def read_log(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-6000:]

    def kill(self) -> None:
        """SIGKILL: no cleanup, no flush; what a crash or an OOM kill does."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        if not self.log.closed:
            self.log.close()


def start_serve(store: Path, *, port: Optional[int] = None, backend: str = "none",
                chroma_url: Optional[str] = None, timeout: float = 240.0,
                env: Optional[dict] = None, extra: tuple = (),
                shutdown_grace: float = 0.5) -> Serve:
    """`paper-assistant serve` on 127.0.0.1 as a subprocess; returns once /healthz answers 200.
    Its temporary files go beside the store (a test's own folder): a server the test kills
    (SIGKILL runs no cleanup) leaves nothing in the machine's /tmp. `shutdown_grace` is how long
    `stop()` lets open requests finish (`serve_shutdown_grace`): a page or client left connected
    would otherwise hold each stop for the product's 3 s."""
    port = port or free_port()
    args = [*CLI, "serve", "--host", "127.0.0.1", "--port", str(port), "--store", str(store),
            "--backend", backend, *(["--chroma-url", chroma_url] if chroma_url else []), *extra]
    temp = Path(store).parent / "serve-tmp"
    temp.mkdir(parents=True, exist_ok=True)
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            cwd=ROOT, env=cli_env(**{"TMPDIR": str(temp),
                                          "PAPER_ASSISTANT_SERVE_SHUTDOWN_GRACE": str(shutdown_grace),
                                          **(env or {})}))
    s = Serve(f"http://127.0.0.1:{port}", proc, log, Path(store), args)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with {proc.returncode}:\n{s.read_log()}")
        try:
            if httpx.get(s.url + "/healthz", timeout=2).status_code == 200:
                return s
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            text = s.read_log()
            s.stop()
            raise RuntimeError(f"serve did not answer within {timeout:g}s:\n{text}")
        time.sleep(0.3)


# ----------------------------------------------------------------------------- the page

class PageSession:
    """One browser session of the page, talking Gradio's queue protocol over HTTP."""

    def __init__(self, url: str, timeout: float = 900.0):
        self.url = url.rstrip("/")
        self.session_hash = uuid.uuid4().hex[:11]
        self.http = httpx.Client(timeout=timeout)
        self.config = self.http.get(self.url + "/config").json()

    def close(self) -> None:
        self.http.close()

    def _component_id(self, elem_id: str) -> int:
        for c in self.config["components"]:
            if (c.get("props") or {}).get("elem_id") == elem_id:
                return c["id"]
        raise KeyError(elem_id)

    def _fn_index(self, elem_id: str, event: str = "click") -> tuple[int, int]:
        target = self._component_id(elem_id)
        for i, dep in enumerate(self.config["dependencies"]):
            if [target, event] in [list(t) for t in dep.get("targets", [])]:
                return dep.get("id", i), target
        raise KeyError(f"{elem_id}.{event}")

    def run_event(self, elem_id: str, data: list, on_message: Optional[Callable[[dict], None]] = None,
                  event: str = "click") -> dict:
        """Trigger `elem_id`'s event with `data`, as the browser does; the completed message."""
        fn_index, trigger = self._fn_index(elem_id, event)
        r = self.http.post(self.url + "/gradio_api/queue/join", json={
            "data": data, "fn_index": fn_index, "session_hash": self.session_hash,
            "event_data": None, "trigger_id": trigger})
        r.raise_for_status()
        event_id = r.json()["event_id"]
        with self.http.stream("GET", self.url + "/gradio_api/queue/data",
                              params={"session_hash": self.session_hash}) as stream:
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("event_id") not in (None, event_id):
                    continue
                if on_message:
                    on_message(msg)
                if msg.get("msg") == "process_completed":
                    return msg
        raise RuntimeError("the queue stream ended without process_completed")

    def upload(self, path: Path, on_progress: Optional[Callable[[int, int], None]] = None) -> dict:
        """The Corpus tab: upload the file, press "Add to the collection"; returns
        {"ok": bool, "status": the status HTML, "success": Gradio's flag}."""
        path = Path(path)
        with path.open("rb") as fh:
            r = self.http.post(self.url + "/gradio_api/upload",
                               files={"files": (path.name, fh, "application/octet-stream")})
        r.raise_for_status()
        stored = r.json()[0]
        value = {"path": stored, "orig_name": path.name, "meta": {"_type": "gradio.FileData"}}

        def watch(msg: dict) -> None:
            if msg.get("msg") == "progress" and on_progress:
                for p in msg.get("progress_data") or []:
                    if p.get("index") is not None and p.get("length"):
                        on_progress(int(p["index"]), int(p["length"]))

        done = self.run_event("pa-upload-btn", [value], watch)
        output = done.get("output") or {}
        status = ""
        for item in output.get("data") or []:
            if isinstance(item, str) and "pa-upload" not in item and ("✓" in item or "✗" in item):
                status = item
            elif isinstance(item, dict) and isinstance(item.get("value"), str) and (
                    "✓" in item["value"] or "✗" in item["value"]):
                status = item["value"]
        return {"ok": bool(done.get("success")) and "✓" in status, "status": status,
                "success": done.get("success"), "output": output}

    def chat(self, message: str, history: Optional[list] = None) -> dict:
        """The page's public /chat endpoint (what gradio_client's predict(api_name="/chat") calls)."""
        from gradio_client import Client

        if not hasattr(self, "_client"):
            self._client = Client(self.url + "/", verbose=False)
        return self._client.predict(message, history=history or [], api_name="/chat")


# ----------------------------------------------------------------------------- /v1

_CLIENT_LOCK = threading.Lock()


def v1_conversation(url: str, question: str, follow_up: str = "Who wrote it?",
                    timeout: float = 900.0) -> tuple[dict, dict]:
    """Two turns of one conversation through /v1 with a standard OpenAI client (it echoes only
    the first answer's text). Returns the two responses as dicts."""
    import openai

    with _CLIENT_LOCK:  # the SDK imports a module lazily on first use, not thread-safely
        client = openai.OpenAI(base_url=url.rstrip("/") + "/v1", api_key="unused", max_retries=0,
                               timeout=timeout)
    first = client.chat.completions.create(model="paper-assistant",
                                           messages=[{"role": "user", "content": question}])
    second = client.chat.completions.create(model="paper-assistant", messages=[
        {"role": "user", "content": question},
        {"role": "assistant", "content": first.choices[0].message.content},
        {"role": "user", "content": follow_up}])
    return first.to_dict(), second.to_dict()


# ----------------------------------------------------------------------------- the store

def store_consistency(settings) -> dict:
    """Open the store afresh and compare its three views of the corpus.

    chroma_papers: papers with chunk 0 in Chroma; whole: those with every chunk the chunker
    makes for them (same content hash); bm25_chunks vs chroma_chunks of whole papers;
    stats: what `stats()` reports. Consistent when they all agree."""
    from assistant.index import Store
    from assistant.index.chunking import content_hash
    from assistant.types import Paper

    store = Store(settings)
    got = store.collection.get(include=["metadatas"])
    by_paper: dict[str, dict[str, Optional[str]]] = {}
    records: dict[str, Paper] = {}
    for cid, meta in zip(got["ids"], got["metadatas"]):
        by_paper.setdefault(meta["paper_id"], {})[cid] = meta.get("hash")
        if "paper" in meta:
            records[meta["paper_id"]] = Paper.model_validate_json(meta["paper"])
    whole = set()
    for pid, paper in records.items():
        expected = {c.chunk_id: content_hash(paper, c) for c in store.chunker.chunk(paper)}
        if by_paper.get(pid) == expected:
            whole.add(pid)
    stats = store.stats()
    bm25 = store.bm25()
    bm25_chunks = set(bm25.chunk_ids)
    whole_chunks = {cid for pid in whole for cid in by_paper[pid]}
    return {
        "chroma_chunks": len(got["ids"]), "chroma_papers": len(records), "whole": len(whole),
        "partial": sorted(set(by_paper) - whole), "stats_papers": stats["papers"],
        "stats_chunks": stats["chunks"], "bm25_chunks": len(bm25_chunks),
        "bm25_matches_whole": bm25_chunks == whole_chunks,
        "bm25_papers": len(set(bm25.paper_ids)),
        "duplicate_ids": len(got["ids"]) - len(set(got["ids"])),
        "consistent": (set(records) == whole and stats["papers"] == len(whole)
                       and bm25_chunks == whole_chunks and stats["chunks"] == len(got["ids"])),
    }


def papers_file(path: Path, n: int, offset: int = 0, source: str = "arxiv_math") -> Path:
    """`n` real abstracts from ../shared/data/<source>/papers.jsonl (from line `offset`), each
    with an id of its own, written as JSON Lines to `path`."""
    src = SHARED_DATA / source / "papers.jsonl"
    out = []
    with src.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i < offset:
                continue
            if len(out) >= n:
                break
            rec = json.loads(line)
            rec["id"] = f"{source}-{i}"
            out.append(json.dumps(rec, ensure_ascii=False))
    if len(out) < n:
        raise ValueError(f"{src} has only {len(out)} records from line {offset}")
    Path(path).write_text("\n".join(out) + "\n", encoding="utf-8")
    return Path(path)


def rss_kb(pid: int) -> int:
    """Resident set size of process `pid` and its children, in kB (Linux /proc)."""
    total = 0
    pids = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


# ----------------------------------------------------------------------------- the OpenAI server

def start_llm(port: int, model_path, timeout: float = 90.0):
    """llama_cpp.server with `model_path` on 127.0.0.1:`port` (fixed, so it can come back on the
    same address after a kill); returns (base_url, stop); `sigkill_port(port)` kills it."""
    try:
        from servers import start_process_server
    except ImportError:
        from tests.servers import start_process_server
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--host",
           "127.0.0.1", "--port", str(port), "--n_ctx", "2048"]
    base_url = f"http://127.0.0.1:{port}/v1"
    stop = start_process_server(cmd, f"{base_url}/models", timeout, "llama_cpp.server",
                                env={"PYTHONUNBUFFERED": "1"}, stop_timeout=10)
    return base_url, stop


def pid_listening(port: int) -> Optional[int]:
    """The pid of the process listening on 127.0.0.1:`port` (Linux /proc), or None."""
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            local, state = parts[1], parts[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                inode = parts[9]
                break
        if inode:
            break
    if not inode:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) == f"socket:[{inode}]":
                    return int(proc.name)
        except OSError:
            continue
    return None


def sigkill_port(port: int) -> bool:
    """SIGKILL the process listening on `port` (a server we started); True if one was killed."""
    pid = pid_listening(port)
    if pid is None:
        return False
    os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        if pid_listening(port) is None:
            break
        time.sleep(0.05)
    return True
