"""What keeping sentence vectors at ingest costs: ingest of N real abstracts with each
`sentence_vectors` setting, each into a fresh store, in one process.

    .venv/bin/python benchmarks/sentence_ingest.py [--papers 400] [--modes on_use ingest]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assistant import PaperAssistant, load_settings  # noqa: E402
from assistant.corpus import read_papers  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "ml_conf" / "papers.jsonl"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--papers", type=int, default=400)
    ap.add_argument("--modes", nargs="+", default=["on_use", "ingest"])
    args = ap.parse_args()
    papers = list(read_papers(DATA, skip_bad=True, errors=[]))[: args.papers]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "papers.jsonl"
        src.write_text("".join(p.model_dump_json() + "\n" for p in papers), encoding="utf-8")
        for mode in args.modes:
            pa = PaperAssistant(load_settings(store_dir=Path(tmp) / mode, llm_backend="none",
                                              sentence_vectors=mode))
            pa.search("warm up the embedding session")
            t0 = time.perf_counter()
            pa.ingest([src])
            seconds = time.perf_counter() - t0
            print(f"{mode}: {len(papers)} papers in {seconds:.1f} s "
                  f"({len(papers) / seconds:.1f} papers/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
