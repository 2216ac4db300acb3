"""Answer latency per intent with the default local model, against a naive-RAG baseline.

    .venv/bin/python benchmarks/answer.py [--backend local] [--code DIR]

For each intent it prints time to first visible text, time to the model's first token, and
total time (median over its questions). The baseline, measured in the same run with the same
model, is what a plain RAG pipeline sends: the top 3 whole abstracts in llama-index's default
QA prompt; our compact context (a few best sentences per chosen paper) is compared with it.
The questions are written for the seed corpus here (not the dev set). It also prints the share
of answers whose text includes the model's (checked) prose rather than only cited extracts.
`--code DIR` imports the assistant from another checkout (an older commit's worktree), so the
same script measures before and after.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if "--code" in sys.argv:  # before anything imports the assistant
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--code") + 1]).resolve()))

from assistant import PaperAssistant, load_settings  # noqa: E402

EXTRACTS_ONLY = "Extracts from the most relevant papers"  # the fallback's heading, old and new

QUESTIONS = {
    "question": ["Which paper proposes a subspace zeroth-order method for spiking networks?",
                 "What dataset does the face fill-light paper introduce?",
                 "Which paper studies implicit state in tool-augmented LLM agents?"],
    "summary": ["Give me an overview of the papers on large language models.",
                "Summarize the causality papers."],
    "compare": ["Compare Proteus with Top-W.",
                "Compare DAISI and SPATIA."],
}

NAIVE_QA = ("Context information is below.\n---------------------\n{context}\n---------------------\n"
            "Given the context information and not prior knowledge, answer the query.\n"
            "Query: {query}\nAnswer: ")


def timed_answer(pa: PaperAssistant, question: str) -> dict:
    t0 = time.perf_counter()
    first_text = None
    final = None
    for kind, payload in pa.ask_stream(question):
        if kind == "token" and first_text is None and str(payload).strip():
            first_text = time.perf_counter() - t0
        if kind == "final":
            final = payload
    total = time.perf_counter() - t0
    return {"first_text": first_text or total, "first_token": final.timings.get("first_token"),
            "total": total, "citations": len(final.citations), "notices": final.notices,
            "prose": final.timings.get("first_token") is not None and EXTRACTS_ONLY not in final.answer
            and not final.abstained}


def naive_baseline(pa: PaperAssistant, question: str) -> dict:
    from assistant.llm import make_llm, stream_chat_text

    llm = make_llm(pa.settings)
    hits = pa.search(question, k=3)
    prompt = NAIVE_QA.format(context="\n\n".join(h.paper.abstract for h in hits), query=question)
    t0 = time.perf_counter()
    first = None
    for delta in stream_chat_text(llm, [{"role": "user", "content": prompt}]):
        if first is None and delta.strip():
            first = time.perf_counter() - t0
    return {"first_token": first, "total": time.perf_counter() - t0}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="local")
    ap.add_argument("--store", default=None)
    ap.add_argument("--code", default=None, help="import the assistant from this checkout")
    args = ap.parse_args()
    scratch = None if args.store else tempfile.TemporaryDirectory(prefix="bench-answer-")
    store = Path(args.store) if args.store else Path(scratch.name)  # a scratch store goes at exit
    pa = PaperAssistant(load_settings(store_dir=store, llm_backend=args.backend))
    pa.ensure_corpus()
    t0 = time.perf_counter()
    timed_answer(pa, "What is Top-W?")  # loads the model once, like a running server
    print(f"warm-up (model load + first answer): {time.perf_counter() - t0:.1f} s; "
          f"backend {pa.backend_label()}")
    every = []
    for intent, questions in QUESTIONS.items():
        rows = [timed_answer(pa, q) for q in questions]
        every += rows
        med = lambda key: statistics.median(r[key] for r in rows if r[key] is not None)  # noqa: E731
        tok = [r["first_token"] for r in rows if r["first_token"] is not None]
        print(f"{intent:9s} first visible text {med('first_text'):5.2f} s | model first token "
              f"{statistics.median(tok) if tok else float('nan'):5.2f} s | whole answer "
              f"{med('total'):5.1f} s | citations {[r['citations'] for r in rows]}")
    print(f"answers with model prose: {sum(r['prose'] for r in every)} of {len(every)}")
    if args.backend != "none":
        base = [naive_baseline(pa, q) for q in QUESTIONS["question"]]
        ours = [timed_answer(pa, q) for q in QUESTIONS["question"]]
        b_ft = statistics.median(r["first_token"] for r in base)
        o_ft = statistics.median(r["first_token"] for r in ours if r["first_token"])
        print(f"baseline (3 whole abstracts, llama-index QA prompt): first token {b_ft:.2f} s, "
              f"whole answer {statistics.median(r['total'] for r in base):.1f} s")
        print(f"ours (compact evidence): first token {o_ft:.2f} s, whole answer "
              f"{statistics.median(r['total'] for r in ours):.1f} s; ratio {b_ft / o_ft:.2f}x faster to first token")
    return 0


if __name__ == "__main__":
    sys.exit(main())
