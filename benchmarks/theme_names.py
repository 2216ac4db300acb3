"""The map's theme names, for a blind reader (issue 26): each theme of a corpus's map with its
name, size and five titles drawn at random (seed 0) from its papers.

    .venv/bin/python benchmarks/theme_names.py [--corpus ml_conf] [--grouping map|384d]

writes benchmarks/theme_names/<corpus>_themes[_384d].json and reader_input[_384d].md (what the
reader is shown; the reader's verdicts go beside it, reader_verdicts[_384d].md), and prints
three figures of the grouping: coherence (mean cosine of a theme's paper vectors to their
centroid), label coverage (share of a theme's papers whose title or abstract holds one of its
name's phrases) and map contiguity (share of each paper's 10 nearest papers on the map that are
in its theme). The store is benchmarks/.stores/<corpus> (corpora.open_corpus: ingested if
empty); its map is built or loaded as the product does (PaperAssistant.collection_map).
`--grouping 384d` regroups the same papers by spherical k-means on their 384-d vectors (as
many themes) and names them the same way: groups of the vectors alone, without the map's
connectivity constraint (layout.connected_groups).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
from sklearn.neighbors import NearestNeighbors  # noqa: E402

from assistant.map import kmeans, label_clusters  # noqa: E402
from corpora import open_corpus  # noqa: E402

OUT = ROOT / "benchmarks" / "theme_names"
DESCRIBED = {"ml_conf": "machine-learning conference papers", "arxiv_math": "arXiv mathematics papers"}
INTRO = ("Each theme below is a group of papers the map drew together. It has a NAME (made by "
         "software) and five titles drawn at random from its papers.")


def themes(corpus: str, grouping: str = "map", titles: int = 5, seed: int = 0) -> list[dict]:
    pa = open_corpus(corpus)
    cmap = pa.collection_map()
    papers = pa.store.papers()
    ids = cmap.ids
    found_ids, vectors = pa.store.all_paper_vectors()
    where = {pid: i for i, pid in enumerate(found_ids)}
    vectors = vectors[[where[pid] for pid in ids]]
    if grouping == "map":
        cluster = np.asarray(cmap.cluster)
        names = [(c.label, c.terms) for c in cmap.clusters]
    else:
        cluster = kmeans(vectors, len(cmap.clusters), seed)
        names = label_clusters(cluster, ids, papers, seed)
    figures(cluster, names, ids, vectors, papers, cmap.xy)
    rng = random.Random(seed)
    out = []
    for c, (label, _) in enumerate(names):
        members = [ids[r] for r in np.flatnonzero(cluster == c)]
        out.append({"theme": label, "size": len(members),
                    "titles": [papers[p].title for p in rng.sample(members, min(titles, len(members)))]})
    return sorted(out, key=lambda t: -t["size"])


def figures(cluster, names, ids, vectors, papers, xy) -> None:
    coherence, coverage = [], []
    for c, (label, terms) in enumerate(names):
        rows = np.flatnonzero(cluster == c)
        centre = vectors[rows].mean(axis=0)
        coherence.append(float((vectors[rows] @ (centre / np.linalg.norm(centre))).mean()))
        texts = [f"{papers[ids[r]].title} {papers[ids[r]].abstract}".lower() for r in rows]
        coverage.append(float(np.mean([any(t.lower() in x for t in terms) for x in texts])))
        print(f"  {coverage[-1]:.2f}  {label}")
    _, near = NearestNeighbors(n_neighbors=11).fit(xy).kneighbors(xy)
    contiguity = float((cluster[near[:, 1:]] == cluster[:, None]).mean())
    print(f"coherence {np.mean(coherence):.3f}  label coverage {np.mean(coverage):.3f}  "
          f"map contiguity {contiguity:.3f}")


def reader_page(found: list[dict], n_papers: int, described: str) -> str:
    lines = [f"# Themes of a map of {n_papers:,} {described}", "", INTRO, ""]
    for i, t in enumerate(found, 1):
        lines.append(f'## Theme {i}: NAME = "{t["theme"]}" ({t["size"]} papers)')
        lines += [f"- {title}" for title in t["titles"]] + [""]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="ml_conf")
    ap.add_argument("--grouping", choices=("map", "384d"), default="map")
    args = ap.parse_args()
    found = themes(args.corpus, args.grouping)
    tail = "" if args.grouping == "map" else "_384d"
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.corpus}_themes{tail}.json").write_text(json.dumps(found, indent=1, ensure_ascii=False))
    (OUT / f"reader_input{tail}.md").write_text(reader_page(found, sum(t["size"] for t in found),
                                                          DESCRIBED.get(args.corpus, "papers")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
