"""The local model's own speed: our llama-cpp-python build against llama.cpp's `llama-bench`
(same sources, same GGUF, same machine, same threads), and the aggregate throughput of
llama.cpp's `llama-server` with 1, 4 and 8 parallel slots (continuous batching).

    .venv/bin/python benchmarks/llama_speed.py [--bin DIR] [--threads 2] [--reps 2]
                                               [--parallel 1,4,8] [--server-tokens 48]

- ours: `Llama.eval` of a 512-token prompt (prompt tokens/s, as llama-bench's pp512), then 128
  single-token `Llama.eval` steps (decode tokens/s, as tg128), n_batch 512, best of `--reps`.
- llama-bench: `llama-bench -m GGUF -p 512 -n 128 -t THREADS -r REPS -o json` from `--bin`
  (built from the sources llama-cpp-python vendors; see `llama_cpp_tools()` in
  assistant/llm/server.py for where `make llama-tools` puts them).
- llama-server: `--parallel N --cont-batching`, N simultaneous chat requests of a
  ~600-token prompt (an answer prompt's size here) and `--server-tokens` output tokens each;
  aggregate generated tokens/s = all tokens / wall time, and the server's own prompt/decode
  timings. The in-process baseline (N=1 through our build) runs in the same invocation.

Both sides run the packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M. On a shared machine the
numbers move with the other load: compare rows of one run, not across runs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assistant import load_settings  # noqa: E402
from assistant.llm import resolve_model_path  # noqa: E402

PROMPT_WORDS = ("We study retrieval augmented generation for scientific abstracts with "
                "citations, hybrid lexical and dense search, grounding of each sentence, and "
                "evaluation on held-out questions. ")


def ours(model: Path, threads: int, reps: int, n_prompt: int = 512, n_gen: int = 128) -> dict:
    import llama_cpp

    llama = llama_cpp.Llama(model_path=str(model), n_ctx=n_prompt + n_gen + 16, n_batch=512,
                            n_ubatch=512, n_threads=threads, n_threads_batch=threads,
                            n_gpu_layers=0, verbose=False)
    tokens = llama.tokenize((PROMPT_WORDS * 40).encode(), add_bos=False)[:n_prompt]
    pp, tg = [], []
    for _ in range(reps):
        llama.reset()
        t0 = time.perf_counter()
        llama.eval(tokens)
        pp.append(n_prompt / (time.perf_counter() - t0))
        tok = tokens[-1]
        t0 = time.perf_counter()
        for _ in range(n_gen):
            llama.eval([tok])
        tg.append(n_gen / (time.perf_counter() - t0))
    llama.close()
    return {"pp": max(pp), "tg": max(tg), "pp_all": pp, "tg_all": tg}


def llama_bench(binary: Path, model: Path, threads: int, reps: int) -> dict:
    out = subprocess.run([str(binary), "-m", str(model), "-p", "512", "-n", "128", "-t",
                          str(threads), "-r", str(reps), "-o", "json"],
                         capture_output=True, text=True, check=True, timeout=1800)
    rows = json.loads(out.stdout)
    got = {}
    for r in rows:
        key = "pp" if r.get("n_prompt") else "tg"
        got[key] = r["avg_ts"]
        got[key + "_sd"] = r.get("stddev_ts")
        got["build"] = f"{r.get('build_commit')} ({r.get('build_number')})"
        got["cpu"] = r.get("cpu_info")
    return got


def _post(url: str, body: dict, timeout: float = 600) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def server_parallel(server_bin: Path, model: Path, threads: int, parallel: int,
                    n_tokens: int, prompt_words: int = 450) -> dict:  # ~600 tokens
    """`parallel` simultaneous requests against llama-server --parallel `parallel`."""
    from assistant.llm.server import LlamaServer

    with LlamaServer(server_bin, model, parallel=parallel, n_ctx=2048 * parallel,
                     threads=threads) as srv:
        url = srv.base_url + "/chat/completions"
        words = (PROMPT_WORDS * 30).split()[:prompt_words]
        results: list = [None] * parallel

        def one(i: int) -> None:
            # a different prompt per user (no shared prefix to reuse from the cache)
            text = f"User {i}: " + " ".join(words[i:] + words[:i])
            t0 = time.perf_counter()
            body = {"messages": [{"role": "user", "content": text + "\nSummarise in one line."}],
                    "max_tokens": n_tokens, "temperature": 0, "ignore_eos": True}
            r = _post(url, body)
            results[i] = (time.perf_counter() - t0, r)

        t0 = time.perf_counter()
        threads_ = [threading.Thread(target=one, args=(i,)) for i in range(parallel)]
        for t in threads_:
            t.start()
        for t in threads_:
            t.join()
        wall = time.perf_counter() - t0
    gen = sum(r["usage"]["completion_tokens"] for _, r in results)
    prompt = sum(r["usage"]["prompt_tokens"] for _, r in results)
    timings = [r.get("timings", {}) for _, r in results]
    return {"parallel": parallel, "wall": wall, "generated": gen, "prompt_tokens": prompt,
            "agg_tg": gen / wall, "agg_all": (gen + prompt) / wall,
            "latency_p50": statistics.median(t for t, _ in results),
            "latency_max": max(t for t, _ in results),
            "server_pp": statistics.median(t.get("prompt_per_second", 0) for t in timings),
            "server_tg": statistics.median(t.get("predicted_per_second", 0) for t in timings)}


def main() -> int:
    from assistant.llm.server import llama_cpp_tools

    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", type=Path, default=None, help="folder with llama-bench, llama-server")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--parallel", default="1,4,8")
    ap.add_argument("--server-tokens", type=int, default=48)
    ap.add_argument("--prompt-words", type=int, default=450, help="per request (~600 tokens)")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--skip-ours", action="store_true")
    args = ap.parse_args()
    model = resolve_model_path(load_settings())
    tools = args.bin or llama_cpp_tools()
    print(f"model {model.name}; threads {args.threads}; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores", flush=True)
    rows = []
    if not args.skip_ours:
        o = ours(model, args.threads, args.reps)
        rows.append(("ours: llama-cpp-python Llama.eval", o["pp"], o["tg"]))
        print(f"ours  pp512 {o['pp']:.1f} t/s {[round(x, 1) for x in o['pp_all']]}  "
              f"tg128 {o['tg']:.1f} t/s {[round(x, 1) for x in o['tg_all']]}", flush=True)
    if tools and (tools / "llama-bench").exists() and not args.skip_bench:
        b = llama_bench(tools / "llama-bench", model, args.threads, args.reps)
        rows.append((f"llama-bench {b.get('build')}", b["pp"], b["tg"]))
        print(f"bench pp512 {b['pp']:.1f}±{b.get('pp_sd') or 0:.1f} t/s  "
              f"tg128 {b['tg']:.1f}±{b.get('tg_sd') or 0:.1f} t/s  ({b.get('cpu')})", flush=True)
    print(f"\n| build | prompt t/s (pp512) | decode t/s (tg128) |\n|---|---|---|")
    for name, pp, tg in rows:
        print(f"| {name} | {pp:.1f} | {tg:.1f} |")
    if tools and (tools / "llama-server").exists() and args.parallel:
        print(f"\nllama-server, N simultaneous requests, {args.server_tokens} tokens each "
              f"(ignore_eos), {args.prompt_words}-word prompts:", flush=True)
        print("| N (= --parallel) | wall s | generated t/s (aggregate) | prompt+generated t/s "
              "| per-request prompt t/s | per-request decode t/s | latency p50 / max s |")
        print("|---|---|---|---|---|---|---|")
        for n in [int(x) for x in args.parallel.split(",")]:
            r = server_parallel(tools / "llama-server", model, args.threads, n, args.server_tokens,
                                args.prompt_words)
            print(f"| {n} | {r['wall']:.1f} | {r['agg_tg']:.1f} | {r['agg_all']:.1f} | "
                  f"{r['server_pp']:.1f} | {r['server_tg']:.1f} | "
                  f"{r['latency_p50']:.1f} / {r['latency_max']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
