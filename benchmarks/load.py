"""Several users on the local model: 1, 4 and 8 simultaneous conversations against `serve`.

    .venv/bin/python benchmarks/load.py [--users 1,4,8] [--max-tokens 48] [--parallel 0]
                                        [--store DIR] [--turns 1]

Starts `paper-assistant serve` (a child process, on a free loopback port, on its own store with
the bundled seed corpus, the packaged local model), waits until the page answers and the model
is warm (one answer), then for each N sends N conversations at once through the streamed
`/v1/chat/completions` (each user's questions differ) and reports, over all answers:

- time to first visible text (the first content chunk: the papers' structure for summaries,
  the first checked sentence otherwise), to the model's first token (the engine's own
  `timings.first_token`, in the final chunk), and to the complete answer: p50 / p95;
- aggregate generation: the model's tokens of every answer (`timings.model_tokens`) / the
  round's wall time;
- how many answers were told they waited for the model (`paper_assistant.waiting` chunks);
- serve's start (to the page answering) and peak RSS (VmHWM of serve and its children, so the
  llama-server child counts when `--parallel` > 0).

`--max-tokens` caps every answer's model output (PAPER_ASSISTANT_MAX_TOKENS) to keep a round
short on 2 cores; `--parallel N` serves the model with a llama-server child with N slots
(`serve --parallel`), 0 the in-process llama-cpp-python model. The machine is shared: the load
average at the start of each round is printed with it.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORES = ROOT / "benchmarks" / ".stores"

QUESTIONS = [
    "Which paper proposes a subspace zeroth-order method for spiking networks?",
    "What dataset does the face fill-light paper introduce?",
    "Which paper studies implicit state in tool-augmented LLM agents?",
    "Give me an overview of the papers on large language models.",
    "Summarize the causality papers.",
    "Compare Proteus with Top-W.",
    "Compare DAISI and SPATIA.",
    "Which paper studies backdoor attacks in federated learning?",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True)
    kids = [int(x) for x in out.stdout.split()]
    return kids + [g for k in kids for g in _children(k)]


def peak_rss_by_process(pid: int) -> dict[str, float]:
    """VmHWM (peak resident set) of the process and each descendant, in MB, by "name pid"."""
    peaks = {}
    for p in [pid, *_children(pid)]:
        try:
            status = Path(f"/proc/{p}/status").read_text().splitlines()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status if ":" in line)
        if "VmHWM" in fields:
            peaks[f"{fields['Name'].strip()} {p}"] = int(fields["VmHWM"].split()[0]) / 1024
    return peaks


def peak_rss_mb(pid: int) -> float:
    """VmHWM of the process and all its descendants, summed, in MB (Linux /proc)."""
    return sum(peak_rss_by_process(pid).values())


class Serve:
    def __init__(self, store: Path, max_tokens: int, parallel: int, extra_env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PAPER_ASSISTANT_MAX_TOKENS": str(max_tokens),
               "PAPER_ASSISTANT_LLM_SERVER_PARALLEL": str(parallel), **(extra_env or {})}
        self.log = tempfile.TemporaryFile(mode="w+b")
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "assistant.cli", "serve", "--port", str(self.port),
             "--store", str(store)], cwd=ROOT, env=env, stdout=self.log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.start_s = self._wait_page()

    def _wait_page(self, timeout: float = 600) -> float:
        while time.perf_counter() - self.t0 < timeout:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise SystemExit("serve exited:\n" + self.log.read().decode()[-3000:])
            try:
                with urllib.request.urlopen(self.url + "/", timeout=5) as r:
                    if r.status == 200:
                        return time.perf_counter() - self.t0
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit("serve did not answer in time")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def ask(url: str, question: str, history: list[dict]) -> dict:
    body = {"model": "paper-assistant", "stream": True,
            "messages": history + [{"role": "user", "content": question}]}
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    first_text = None
    waited = False
    final = {}
    text = ""
    with urllib.request.urlopen(req, timeout=900) as r:
        for raw in r:
            line = raw.decode("utf-8").strip()
            if not line.startswith("data: {"):
                continue
            chunk = json.loads(line[6:])
            meta = chunk.get("paper_assistant") or {}
            if meta.get("waiting"):
                waited = True
            delta = (chunk.get("choices") or [{}])[0].get("delta") or {}
            if delta.get("content"):
                first_text = first_text or time.perf_counter() - t0
                text += delta["content"]
            if (chunk.get("choices") or [{}])[0].get("finish_reason") == "stop":
                final = meta
    total = time.perf_counter() - t0
    timings = final.get("timings", {})
    return {"first_text": first_text or total, "first_token": timings.get("first_token"),
            "total": total, "model_tokens": timings.get("model_tokens", 0), "waited": waited,
            "text": text, "notices": final.get("notices", [])}


def pct(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    if not values:
        return float("nan"), float("nan")
    return statistics.median(values), values[min(len(values) - 1, round(0.95 * (len(values) - 1)))]


def round_of(url: str, users: int, turns: int) -> tuple[list[dict], float]:
    results: list[dict] = []
    lock = threading.Lock()

    def user(i: int) -> None:
        history: list[dict] = []
        for t in range(turns):
            q = QUESTIONS[(i + t) % len(QUESTIONS)]
            r = ask(url, q, history)
            history += [{"role": "user", "content": q}, {"role": "assistant", "content": r["text"]}]
            with lock:
                results.append(r)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return results, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", default="1,4,8")
    ap.add_argument("--turns", type=int, default=1)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--parallel", type=int, default=0,
                    help="llama-server child with this many slots (0: in-process model)")
    ap.add_argument("--store", type=Path, default=STORES / "load")
    args = ap.parse_args()
    serve = Serve(args.store, args.max_tokens, args.parallel)
    mode = (f"llama-server child, --parallel {args.parallel}" if args.parallel
            else "in-process llama-cpp-python (one answer at a time)")
    try:
        print(f"serve: page answered {serve.start_s:.1f} s after start; model: {mode}; "
              f"max_tokens {args.max_tokens}", flush=True)
        t0 = time.perf_counter()
        warm = ask(serve.url, QUESTIONS[0], [])
        print(f"warm-up answer {time.perf_counter() - t0:.1f} s (model loaded, first token "
              f"{warm['first_token']})", flush=True)
        rows = []
        for n in [int(x) for x in args.users.split(",")]:
            load = os.getloadavg()[0]
            results, wall = round_of(serve.url, n, args.turns)
            tokens = sum(r["model_tokens"] for r in results)
            ft = pct([r["first_text"] for r in results])
            fm = pct([r["first_token"] for r in results if r["first_token"] is not None])
            tt = pct([r["total"] for r in results])
            waited = sum(r["waited"] for r in results)
            failed = sum(any("failed" in n_ for n_ in r["notices"]) for r in results)
            rows.append((n, ft, fm, tt, tokens / wall, waited, len(results), load, failed))
            print(f"  {n} users: {len(results)} answers in {wall:.1f} s, {tokens} model tokens "
                  f"({tokens / wall:.2f} t/s), waited {waited}, model failed {failed}", flush=True)
        peaks = peak_rss_by_process(serve.proc.pid)
        rss = sum(peaks.values())
    finally:
        serve.stop()
    print(f"\n{mode}; answers capped at {args.max_tokens} model tokens; peak RSS of serve "
          f"(+ children) {rss:.0f} MB; start to page {serve.start_s:.1f} s")
    print("peak RSS by process: " + ", ".join(f"{k} {v:.0f} MB" for k, v in peaks.items()))
    print("| users | first visible text p50 / p95 s | first model token p50 / p95 s | "
          "complete answer p50 / p95 s | aggregate model t/s | told to wait | load avg |")
    print("|---|---|---|---|---|---|---|")
    for n, ft, fm, tt, agg, waited, count, load, failed in rows:
        print(f"| {n} | {ft[0]:.1f} / {ft[1]:.1f} | {fm[0]:.1f} / {fm[1]:.1f} | "
              f"{tt[0]:.1f} / {tt[1]:.1f} | {agg:.2f} | {waited}/{count} | {load:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
