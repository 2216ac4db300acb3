"""What reading costs: seconds to the first event (the candidates), the first visible text and
the whole answer, with the default local model on the seed corpus, for questions the gate is
unsure of (reworded), out-of-corpus questions, questions the gate is sure of, and summaries.

    .venv/bin/python benchmarks/reading_latency.py [--code DIR]

`--code DIR` imports the assistant from another checkout (an older commit's worktree), so the
same script measures before and after. Run it on a quiet machine.
"""
import statistics
import sys
import tempfile
import time
from pathlib import Path

if "--code" in sys.argv:
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--code") + 1]).resolve()))
sys.path.append(str(Path(__file__).resolve().parents[1]))

from assistant import PaperAssistant, load_settings  # noqa: E402
from assistant.config import SEED_CORPUS  # noqa: E402

store = tempfile.TemporaryDirectory(prefix="reading-latency-")
pa = PaperAssistant(load_settings(store_dir=store.name, llm_backend="local"))
pa.ingest([SEED_CORPUS])
pa.warm_up()  # the model loaded (in-process), or its llama-server started (PAPER_ASSISTANT_LLM_SERVER_PARALLEL)
QS = {"reworded": ["I need a paper about models that agree with users too much after RLHF.",
                   "Anything about estimating treatment effects when hospitals can't share patient rows?",
                   "Which paper makes language models write more varied stories without hurting coherence?"],
      "out-of-corpus": ["Which paper proposes a new method for protein-ligand docking?",
                        "Is there a paper on speculative decoding to speed up LLM inference?"],
      "sure": ["What is Top-W?", "Which paper proposes a subspace zeroth-order method for spiking networks?"],
      # a summary's best candidates are read against its topic (RelevancePolicy.summary_reading_papers)
      "summary": ["Summarise the causality work for a newcomer in plain words.",
                  "Give me an overview of the papers on federated learning.",
                  "Summarize what this collection has on speech recognition."]}
pa.ask("warm up: what is DAISI?")
for kind, qs in QS.items():
    first, shown, total = [], [], []
    for q in qs:
        t0 = time.perf_counter(); f = s = None
        for k, payload in pa.ask_stream(q):
            now = time.perf_counter() - t0
            f = f if f is not None else now
            if k == "token" and s is None:
                s = now
        total.append(time.perf_counter() - t0); first.append(f); shown.append(s if s is not None else total[-1])
    print(f"{kind:14s} first event {statistics.median(first):5.2f} s  first text {statistics.median(shown):5.2f} s  whole {statistics.median(total):5.2f} s  (max {max(total):.1f})")
