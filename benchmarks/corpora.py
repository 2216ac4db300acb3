"""The shared corpora as stores for benchmarks and evaluation, each built once by our own ingest.

    from corpora import open_corpus, CORPORA
    pa = open_corpus("arxiv_math")          # benchmarks/.stores/arxiv_math, ingested if empty

Corpora are read from ../shared/data (internal evaluation use only: never copied into the
repository); the seed corpus is the bundled demo corpus.
"""
from __future__ import annotations

import csv
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # after any checkout named by --code (evaluate.py)

from assistant import PaperAssistant, load_settings  # noqa: E402
from assistant.config import SEED_CORPUS  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
STORES = ROOT / "benchmarks" / ".stores"

CORPORA = {
    "seed": SEED_CORPUS,
    "scifact": DATA / "scifact" / "corpus.jsonl",
    "arxiv_math": DATA / "arxiv_math" / "papers.jsonl",
    "ml_conf": DATA / "ml_conf" / "papers.jsonl",
}


def available(name: str) -> bool:
    return CORPORA[name].exists()


def open_corpus(name: str, backend: str = "none", stores: Path = STORES, **overrides) -> PaperAssistant:
    """A PaperAssistant on the corpus's own store, ingesting the corpus the first time."""
    pa = PaperAssistant(load_settings(store_dir=stores / name, llm_backend=backend, **overrides))
    if pa.store.collection.count() == 0:
        t0 = time.perf_counter()
        pa.ingest([CORPORA[name]])
        print(f"indexed {name} in {time.perf_counter() - t0:.0f} s: {pa.stats()['papers']} papers",
              file=sys.stderr)
    return pa


def held_out(qid: str) -> bool:
    """The calibration's 30% held-out split, by a hash of the question id (evaluate.py asks the
    same SciFact claims the calibration held out)."""
    return int(hashlib.md5(qid.encode()).hexdigest(), 16) % 10 < 3


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(l) for l in Path(path).read_text().splitlines() if l.strip()]


def scifact_claims(split: str = "train") -> list[tuple[str, str, set[str]]]:
    """(query id, claim, relevant paper ids) for SciFact claims with judgments."""
    qrels: dict[str, set[str]] = {}
    with (DATA / "scifact" / "qrels" / f"{split}.tsv").open() as f:
        for row in csv.DictReader(f, delimiter="\t"):
            qrels.setdefault(row["query-id"], set()).add(row["corpus-id"])
    queries = read_jsonl(DATA / "scifact" / f"queries_{split}.jsonl")
    return [(q["_id"], q["text"], qrels[q["_id"]]) for q in queries if q["_id"] in qrels]


def evidence_question(claim: str) -> str:
    """How a user asks about a claim: "Is there evidence that <claim>?"."""
    claim = claim.strip().rstrip(".")
    return f"Is there evidence that {claim[0].lower() + claim[1:] if claim[1:2].islower() else claim}?"


def corpus_titles(name: str, limit: Optional[int] = None) -> list[tuple[str, str]]:
    """(paper id, title) of a shared JSONL corpus, in file order."""
    out = []
    for rec in read_jsonl(CORPORA[name]):
        out.append((str(rec.get("id") or rec.get("_id")), rec.get("title", "")))
        if limit and len(out) >= limit:
            break
    return out


def seed_ids_by_key(pa: PaperAssistant) -> dict[str, str]:
    """The seed question sets name papers by short keys (../shared/eval/seed_papers.json), matched
    to the store's paper ids by first author, as the shared scorer does."""
    import unicodedata

    def norm(name: str) -> str:
        name = unicodedata.normalize("NFKD", name)
        return " ".join("".join(c for c in name if not unicodedata.combining(c)).lower().split())

    keys = json.loads((ROOT.parent / "shared" / "eval" / "seed_papers.json").read_text())["papers"]
    by_author = {norm(p.authors[0]): pid for pid, p in pa.store.papers().items() if p.authors}
    return {k["key"]: by_author[norm(k["first_author"])] for k in keys if norm(k["first_author"]) in by_author}
