"""The map's theme names, for a blind reader (issue 26): each theme of a corpus's map with its
name, size and five titles drawn at random (seed 0) from its papers.

    .venv/bin/python benchmarks/theme_names.py [--corpus ml_conf] [--grouping map|384d]
        [--seed 0] [--tag before]
    .venv/bin/python benchmarks/theme_names.py --ab before after [--corpus ml_conf arxiv_math]

writes benchmarks/theme_names/<corpus>_themes[_384d].json and reader_input[_384d].md (what the
reader is shown; the reader's verdicts go beside it, reader_verdicts[_384d].md), and prints
three figures of the grouping: coherence (mean cosine of a theme's paper vectors to their
centroid), label coverage (share of a theme's papers whose title or abstract holds one of its
name's phrases) and map contiguity (share of each paper's 10 nearest papers on the map that are
in its theme). The store is benchmarks/.stores/<corpus> (corpora.open_corpus: ingested if
empty); its map is built or loaded as the product does (PaperAssistant.collection_map).
`--grouping 384d` regroups the same papers by spherical k-means on their 384-d vectors (as
many themes) and names them the same way: groups of the vectors alone, without the map's
connectivity constraint (layout.connected_groups). `--seed` draws other titles; `--tag` names
the files <corpus>_themes_<tag>.json (the names of one version of the code).

`--ab A B` puts two tagged versions of the same map (same groups, same titles) on one page for a
blind reader: each theme's titles with its two names as "Name 1" and "Name 2" in a seeded random
order (one name where both agree); the key, which version each name is, goes to
reader_key_ab.json beside reader_input_ab.md, and `--score-ab verdicts.json` counts each
version's FITS / PARTLY / DOES NOT FIT from the reader's verdicts (a JSON list of
{"corpus", "theme", "name": 1 or 2, "verdict"}).
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


AB_INTRO = ("Each theme below is a group of papers a map of the collection drew together. You see "
            "five titles drawn at random from its papers and one or two candidate NAMES for the "
            "theme, made by software. Judge each name on its own.")
VERDICTS = ("FITS", "PARTLY", "DOES NOT FIT")


def ab_page(corpora: list[str], tags: tuple[str, str], seed: int = 0) -> tuple[str, dict]:
    """The reader's page with both versions' names per theme, and the key to it."""
    rng = random.Random(seed)
    lines, key = [], {}
    for corpus in corpora:
        a, b = (json.loads((OUT / f"{corpus}_themes_{t}.json").read_text()) for t in tags)
        lines += [f"# Themes of a map of {sum(t['size'] for t in a):,} "
                  f"{DESCRIBED.get(corpus, 'papers')}", ""]
        for i, (ta, tb) in enumerate(zip(a, b), 1):
            if ta["titles"] != tb["titles"]:
                raise SystemExit(f"{corpus} theme {i}: the two versions grouped differently")
            names = [(tags[0], ta["theme"]), (tags[1], tb["theme"])]
            rng.shuffle(names)
            if names[0][1] == names[1][1]:
                names = [("both", names[0][1])]
            key[f"{corpus}/{i}"] = [tag for tag, _ in names]
            lines.append(f"## {corpus} theme {i} ({ta['size']} papers)")
            lines += [f'- Name {n}: "{name}"' for n, (_, name) in enumerate(names, 1)]
            lines += ["", "Titles:"] + [f"- {title}" for title in ta["titles"]] + [""]
    return "\n".join([AB_INTRO, ""] + lines), key


def score_ab(verdicts: list[dict], key: dict, tags: tuple[str, str]) -> dict:
    """FITS / PARTLY / DOES NOT FIT per version (a name both versions share counts for both)."""
    out = {tag: dict.fromkeys(VERDICTS, 0) for tag in tags}
    for v in verdicts:
        tag = key[f"{v['corpus']}/{v['theme']}"][int(v["name"]) - 1]
        for t in (tags if tag == "both" else (tag,)):
            out[t][v["verdict"].upper()] += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", nargs="+", default=["ml_conf"])
    ap.add_argument("--grouping", choices=("map", "384d"), default="map")
    ap.add_argument("--seed", type=int, default=0, help="of the titles drawn")
    ap.add_argument("--tag", default="")
    ap.add_argument("--ab", nargs=2, metavar=("A", "B"))
    ap.add_argument("--score-ab", metavar="VERDICTS_JSON")
    args = ap.parse_args()
    if args.ab:
        tags = tuple(args.ab)
        if args.score_ab:
            key = json.loads((OUT / "reader_key_ab.json").read_text())
            verdicts = json.loads(Path(args.score_ab).read_text())
            print(json.dumps(score_ab(verdicts, key, tags), indent=1))
            return 0
        page, key = ab_page(args.corpus, tags)
        (OUT / "reader_input_ab.md").write_text(page)
        (OUT / "reader_key_ab.json").write_text(json.dumps(key, indent=1))
        return 0
    args.corpus = args.corpus[0]
    found = themes(args.corpus, args.grouping, seed=args.seed)
    tail = ("" if args.grouping == "map" else "_384d") + (f"_{args.tag}" if args.tag else "")
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.corpus}_themes{tail}.json").write_text(json.dumps(found, indent=1, ensure_ascii=False))
    (OUT / f"reader_input{tail}.md").write_text(reader_page(found, sum(t["size"] for t in found),
                                                          DESCRIBED.get(args.corpus, "papers")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
