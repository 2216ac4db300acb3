"""Fault battery (issue 11, items 1-4), the longer runs of tests/test_faults.py; prints a table.

    .venv/bin/python benchmarks/faults.py                  # everything with backend `none`
    .venv/bin/python benchmarks/faults.py --local          # the load run also with the local model
    .venv/bin/python benchmarks/faults.py --only load --conversations 16 --page 4

Classes (each real, on loopback; no mocks):
  model-down-before   llama_cpp.server (SmolLM2) killed before the question: /v1 plain, /v1 stream,
                      the page's chat handler, the CLI → 200 + cited extracts + notice
  model-down-during   SIGKILLed after its 3rd streamed delta (/v1 and page), restarted between
  model-back          the next question after each restart uses the model (it streamed tokens)
  chroma-restart      `serve --chroma-url`, Chroma stopped and restarted CYCLES times: requests
                      while down → 503 naming the server; after → 200, same paper, same `serve`
  upload-killed       the Corpus tab ingesting PAPERS real abstracts, `serve` SIGKILLed at KILLS
                      points of the progress bar: store consistent after each kill, re-upload
                      completes without duplicates
  uploads-concurrent  two sessions upload at once (one queued behind the other): both land
  load-<backend>      CONVERSATIONS two-turn /v1 conversations + PAGE two-turn page conversations
                      at once: no 5xx, none dropped, each follow-up on its own paper, serve's RSS
                      after vs before (after one warm-up round)
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import traceback
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
warnings.filterwarnings("ignore")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import httpx  # noqa: E402

from faultkit import (PageSession, papers_file, rss_kb, run_cli, sigkill_port, start_llm,  # noqa: E402
                      start_serve, store_consistency, v1_conversation)
from servers import free_port, running_app  # noqa: E402

ROWS: list[tuple[str, int, str, str]] = []  # (class, cases, held, figures)


def row(name: str, cases: int, held: int, figures: str = "") -> None:
    ROWS.append((name, cases, f"{held}/{cases}", figures))
    print(f"  -> {name}: {held}/{cases} held. {figures}", flush=True)


def conversations():
    from test_faults import CONVERSATIONS, EXTRACTS, FAILED, MCE_ID, MCE_Q  # noqa: F401
    return CONVERSATIONS


# ----------------------------------------------------------------------------- 1. model down

def model_down(tmp: Path, rounds: int) -> None:
    import assistant.llm as llm_module
    from assistant.config import load_settings
    from assistant.library import PaperAssistant
    from assistant.server import create_app
    from conftest import seeded_assistant
    from llm_server import smollm2_path
    from test_faults import EXTRACTS, FAILED, MCE_ID, MCE_Q, _page_answer, _v1_plain, _v1_stream_text

    model = smollm2_path()
    if model is None:
        print("SmolLM2 missing: model-down skipped")
        return
    seeded_assistant(tmp / "llm-store")
    port = free_port()
    base = f"http://127.0.0.1:{port}/v1"
    pa = PaperAssistant(load_settings(llm_backend="openai", store_dir=tmp / "llm-store",
                                      llm_base_url=base, llm_model="smollm2"))
    stop = None

    def up():
        nonlocal stop
        _, stop = start_llm(port, model)

    def down():
        nonlocal stop
        sigkill_port(port)
        if stop:
            stop()
            stop = None

    def extracts_with_notice(text: str) -> bool:
        return EXTRACTS in text and FAILED in text and "Meta Context Engineering" in text

    before = during = back = 0
    before_n = during_n = back_n = 0
    t_down: list[float] = []
    real = llm_module.stream_chat_events  # what the engine streams the model's answer through
    with running_app(create_app(pa)) as url:
        for _ in range(rounds):
            down()
            t0 = time.perf_counter()
            r = _v1_plain(url, MCE_Q)
            t_down.append(time.perf_counter() - t0)
            ok = (r.status_code == 200 and extracts_with_notice(r.json()["choices"][0]["message"]["content"])
                  and r.json()["citations"][0]["paper_id"] == MCE_ID)
            text, last = _v1_stream_text(url, MCE_Q)
            ok_stream = extracts_with_notice(text) and last["citations"][0]["paper_id"] == MCE_ID
            ok_page = extracts_with_notice(_page_answer(pa, MCE_Q, tmp))
            cli = run_cli("ask", MCE_Q, "--backend", "openai", "--store", str(tmp / "llm-store"),
                          PAPER_ASSISTANT_LLM_BASE_URL=base, PAPER_ASSISTANT_LLM_MODEL="smollm2")
            ok_cli = (cli.returncode == 0 and EXTRACTS in cli.stdout
                      and FAILED in " ".join(cli.stderr.split()))
            before += sum([ok, ok_stream, ok_page, ok_cli])
            before_n += 4

            # killed during: after the 3rd delta the server streams, /v1 then the page
            kills = []

            def kill_mid(llm, messages, **kw):
                for i, event in enumerate(real(llm, messages, **kw)):
                    if i == 2:
                        kills.append(sigkill_port(port))
                    yield event

            llm_module.stream_chat_events = kill_mid
            try:
                up()
                r = _v1_plain(url, MCE_Q)
                during += (r.status_code == 200 and kills[-1:] == [True]
                           and extracts_with_notice(r.json()["choices"][0]["message"]["content"]))
                down()
                up()
                during += extracts_with_notice(_page_answer(pa, MCE_Q, tmp)) and kills[-1:] == [True]
                down()
                during_n += 2
            finally:
                llm_module.stream_chat_events = real
            up()
            answer = pa.ask(MCE_Q)
            back += "first_token" in answer.timings and not any(FAILED in n for n in answer.notices)
            back_n += 1
    down()
    row("model-down-before (v1, v1 stream, page, CLI)", before_n, before,
        "/v1 answer with the server down in " + ", ".join(f"{t:.2f}" for t in t_down)
        + " s (the first includes loading the embedder)")
    row("model-down-during (v1, page)", during_n, during, "SIGKILL after the 3rd delta")
    row("model-back (next question after restart)", back_n, back, "model streamed again")


# ----------------------------------------------------------------------------- 2. Chroma restarts

def chroma_restart(tmp: Path, cycles: int) -> None:
    from conftest import start_chroma_server
    from test_faults import MCE_ID, MCE_Q, _v1_plain

    port = free_port()
    url, stop = start_chroma_server(tmp / "chroma", port=port)
    serve = start_serve(tmp / "chroma-store", chroma_url=url)
    down_ok = down_n = up_ok = up_n = 0
    recovery: list[float] = []
    try:
        for _ in range(cycles):
            stop()
            for _ in range(3):
                r = _v1_plain(serve.url, MCE_Q)
                down_n += 1
                down_ok += r.status_code == 503 and url in r.json()["error"]["message"]
            h = httpx.get(serve.url + "/healthz", timeout=30)
            down_n += 1
            down_ok += h.status_code == 503
            cli = run_cli("search", "context", "--chroma-url", url, "--store", str(tmp / "cli"))
            down_n += 1
            down_ok += cli.returncode == 2 and "Chroma server" in cli.stderr and "Traceback" not in cli.stderr
            url2, stop = start_chroma_server(tmp / "chroma", port=port)
            t0 = time.perf_counter()
            r = _v1_plain(serve.url, MCE_Q)
            recovery.append(time.perf_counter() - t0)
            up_n += 1
            up_ok += r.status_code == 200 and r.json()["citations"][0]["paper_id"] == MCE_ID
        alive = serve.proc.poll() is None
    finally:
        serve.stop()
        stop()
    row("chroma-down (v1 x3, healthz, CLI search per stop)", down_n, down_ok,
        f"{cycles} stop/restart cycles, 503 naming the server")
    row("chroma-back (same serve)", up_n, up_ok,
        f"first answer after restart {max(recovery):.2f} s at most; serve never restarted: {alive}")


# ----------------------------------------------------------------------------- 3. uploads

def upload_killed(tmp: Path, papers: int, kills: int, seed: int) -> None:
    from assistant.config import load_settings

    rng = random.Random(seed)
    data = papers_file(tmp / "upload.jsonl", papers)
    store = tmp / "upload-store"
    settings = load_settings(llm_backend="none", store_dir=store)
    held = 0
    figures = []
    for k in range(kills):
        serve = start_serve(store)
        written = httpx.get(serve.url + "/healthz").json()["papers"] - 20
        target = written + rng.randint(64, max(65, (papers - written) // 2))
        if target >= papers:
            serve.stop()
            break
        page = PageSession(serve.url)

        def progress(done, total, serve=serve, target=target):
            if done >= target:
                serve.kill()

        try:
            page.upload(data, progress)
        except Exception:
            pass
        page.close()
        killed = serve.proc.returncode == -9
        serve.stop()
        c = store_consistency(settings)
        ok = killed and c["consistent"] and not c["partial"] and c["duplicate_ids"] == 0
        held += ok
        figures.append(f"kill {k + 1} at >= {target}: {c['whole'] - 20} whole papers, "
                       f"{len(c['partial'])} partial")
        print("   ", figures[-1], c if not ok else "", flush=True)
    serve = start_serve(store)
    page = PageSession(serve.url)
    t0 = time.perf_counter()
    result = page.upload(data)
    elapsed = time.perf_counter() - t0
    page.close()
    c = store_consistency(settings)
    final_ok = (result["ok"] and c["consistent"] and c["whole"] == 20 + papers
                and c["duplicate_ids"] == 0)
    print("    re-upload:", result["status"][:200], flush=True)
    row(f"upload-killed ({papers} papers, SIGKILL of serve)", len(figures) + 1, held + final_ok,
        "; ".join(figures) + f"; re-upload completed in {elapsed:.0f} s, {c['whole'] - 20} papers, "
        f"{c['duplicate_ids']} duplicates")

    # two uploads at once, from two sessions
    files = [papers_file(tmp / "a.jsonl", 100, offset=papers + 100),
             papers_file(tmp / "b.jsonl", 100, offset=papers + 300)]
    before = httpx.get(serve.url + "/healthz").json()["papers"]
    sessions = [PageSession(serve.url), PageSession(serve.url)]
    queued: list[int] = []

    def upload_watch(i):
        fn = sessions[i]
        with files[i].open("rb") as fh:
            stored = fn.http.post(serve.url + "/gradio_api/upload",
                                  files={"files": (files[i].name, fh)}).json()[0]
        value = {"path": stored, "orig_name": files[i].name, "meta": {"_type": "gradio.FileData"}}
        return fn.run_event("pa-upload-btn", [value], lambda m: queued.append(i) if (
            m.get("msg") == "estimation" and (m.get("rank") or 0) > 0) else None)

    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(upload_watch, range(2)))
    for s in sessions:
        s.close()
    c = store_consistency(settings)
    after = c["whole"]
    serve.stop()
    landed = sum(bool(d["success"]) and "✓ Added" in str(d["output"]["data"]) for d in done)
    row("uploads-concurrent (2 sessions x 100 papers)", 2, landed if after == before + 200 else 0,
        f"{after - before} of 200 papers landed; queued behind the other: {bool(queued)}; "
        f"consistent: {c['consistent']}")


# ----------------------------------------------------------------------------- 4. load

def kept_own_paper(turns, author: str, text_of) -> bool:
    """A two-turn conversation's "Who wrote it?" named the author of the paper its first answer
    cited first, citing that paper alone; `text_of` reads an answer's text (/v1 or the page)."""
    first, second = turns
    cited = [c["paper_id"] for c in first["citations"]]
    return bool(cited) and author in text_of(second) and [c["paper_id"] for c in second["citations"]] == cited[:1]


def load(tmp: Path, backend: str, n_v1: int, n_page: int) -> None:
    convs = conversations()
    serve = start_serve(tmp / f"load-{backend}", backend=backend, timeout=900)
    try:
        # cold start: n_v1 first questions at once on the fresh serve (before the fix to
        # SentenceEmbeddings each embedded the same sentences again: 70-130 s instead of ~8 s)
        def cold(i):
            t = time.perf_counter()
            r = httpx.post(serve.url + "/v1/chat/completions", timeout=900, json={
                "model": "paper-assistant",
                "messages": [{"role": "user", "content": convs[i % len(convs)][0]}]})
            return r.status_code, time.perf_counter() - t

        with ThreadPoolExecutor(n_v1) as pool:
            cold_runs = list(pool.map(cold, range(n_v1)))
        row(f"load-{backend} cold start ({n_v1} first questions at once)", n_v1,
            sum(code == 200 for code, _ in cold_runs),
            f"slowest {max(t for _, t in cold_runs):.1f} s")
        # warm up: one conversation each way, so "before" includes loaded models and caches
        v1_conversation(serve.url, convs[0][0])
        warm = PageSession(serve.url)
        first = warm.chat(convs[0][0])
        warm.chat("Who wrote it?", first["history"])
        warm.close()
        time.sleep(1)
        rss_before = rss_kb(serve.pid)
        start = threading.Barrier(n_v1 + n_page)
        errors: list[str] = []

        def v1(i):
            q, _ = convs[i % len(convs)]
            start.wait()
            try:
                return v1_conversation(serve.url, q)
            except Exception as exc:  # a 5xx or a dropped connection
                errors.append(f"v1 {i}: {type(exc).__name__}: {str(exc)[:200]}")
                return None

        def page(i):
            q, _ = convs[i % len(convs)]
            session = PageSession(serve.url)
            start.wait()
            try:
                a = session.chat(q)
                return a, session.chat("Who wrote it?", a["history"])
            except Exception as exc:
                errors.append(f"page {i}: {type(exc).__name__}: {str(exc)[:200]}")
                return None
            finally:
                session.close()

        t0 = time.perf_counter()
        with ThreadPoolExecutor(n_v1 + n_page) as pool:
            fv = [pool.submit(v1, i) for i in range(n_v1)]
            fp = [pool.submit(page, i) for i in range(n_page)]
            rv = [f.result() for f in fv]
            rp = [f.result() for f in fp]
        wall = time.perf_counter() - t0
        time.sleep(1)
        rss_after = rss_kb(serve.pid)
        answered = sum(r is not None for r in rv) * 2 + sum(r is not None for r in rp) * 2
        own = sum(kept_own_paper(r, convs[i % len(convs)][1], lambda a: a["choices"][0]["message"]["content"])
                  for i, r in enumerate(rv) if r is not None)
        own += sum(kept_own_paper(r, convs[i % len(convs)][1], lambda a: a["answer"])
                   for i, r in enumerate(rp) if r is not None)
        growth = (rss_after - rss_before) / rss_before * 100
        total = 2 * (n_v1 + n_page)
        for e in errors:
            print("   ", e)
        row(f"load-{backend} requests answered (no 5xx)", total, answered,
            f"{n_v1} /v1 + {n_page} page two-turn conversations at once in {wall:.0f} s")
        row(f"load-{backend} follow-ups on their own paper", n_v1 + n_page, own, "")
        row(f"load-{backend} RSS within 10%", 1, int(abs(growth) <= 10),
            f"serve RSS {rss_before / 1024:.0f} MB before, {rss_after / 1024:.0f} MB after "
            f"({growth:+.1f}%)")
    finally:
        serve.stop()


# ----------------------------------------------------------------------------- main

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", choices=["model", "chroma", "upload", "load"],
                    help="run only these classes")
    ap.add_argument("--papers", type=int, default=2000, help="size of the killed upload")
    ap.add_argument("--kills", type=int, default=2, help="SIGKILLs during that upload")
    ap.add_argument("--cycles", type=int, default=3, help="Chroma stop/restart cycles")
    ap.add_argument("--rounds", type=int, default=2, help="model-down rounds")
    ap.add_argument("--conversations", type=int, default=16, help="simultaneous /v1 conversations")
    ap.add_argument("--page", type=int, default=4, help="simultaneous page conversations")
    ap.add_argument("--local", action="store_true", help="the load run also with the local model")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    only = set(args.only or ["model", "chroma", "upload", "load"])
    tmp = Path(tempfile.mkdtemp(prefix="faults-"))
    t0 = time.perf_counter()
    steps = [("model", "model server down", lambda: model_down(tmp, args.rounds)),
             ("chroma", "Chroma restarts", lambda: chroma_restart(tmp, args.cycles)),
             ("upload", "interrupted and concurrent uploads",
              lambda: upload_killed(tmp, args.papers, args.kills, args.seed)),
             ("load", "load, backend none", lambda: load(tmp, "none", args.conversations, args.page))]
    if args.local:
        steps.append(("load", "load, local model",
                      lambda: load(tmp, "local", args.conversations, args.page)))
    try:
        for key, title, step in steps:
            if key not in only:
                continue
            print(f"== {title}", flush=True)
            t = time.perf_counter()
            try:
                step()
            except Exception:  # a broken step is reported, the others still run
                traceback.print_exc()
                ROWS.append((f"{title}: the run itself failed", 1, "0/1", "see the traceback"))
            print(f"   ({time.perf_counter() - t:.0f} s)", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nfault battery, {time.perf_counter() - t0:.0f} s ({os.cpu_count()} CPUs)\n")
    print("| fault / input class | cases | held | figures |")
    print("|---|---|---|---|")
    for name, cases, held, figures in ROWS:
        print(f"| {name} | {cases} | {held} | {figures} |")


if __name__ == "__main__":
    main()
