"""The map of the collection: every paper as a point in 2-D, coloured by theme.

    m = pa.collection_map()          # built after ingest, cached with the store (cache/map.*)
    m.clusters                       # [MapCluster(label, terms, size, x, y)]
    view = m.view(max_points=5000, highlight=["h6a9…"])   # what the page draws

Layout: t-SNE (openTSNE, assistant/layout.py) of each paper's mean chunk embedding, the vectors
already in the store, so nothing is embedded: a paper's nearest papers sit next to it, so the
groups the reader sees are groups of papers on one subject. It starts from the PCA layout and is
seeded, so the same store gives the same picture. PCA alone (`pca_2d`) is the fallback: for
fewer than TSNE_MIN_PAPERS papers (t-SNE has too few neighbours to place), when openTSNE is not
installed, or with `map_layout = "pca"`. Why t-SNE, and what it costs: docs/benchmarks.md
(`benchmarks/map.py projection`).

Themes: on a t-SNE map, k-means on the map's own coordinates (assistant/layout.py), so a theme is
a region of the picture; on a PCA map, whose two axes mix unrelated papers, spherical k-means on
the full vectors. About sqrt(n/2) themes capped by `map_max_clusters`, each named by the phrases
that set it apart from the others (c-TF-IDF, assistant/map_labels.py).

Building takes seconds to minutes, so a build reports how far it has got (`MapProgress`): the page
starts one in the background after an upload and shows it on the Map tab.

Cache: `map.npz` (ids, coordinates, theme of every paper) and `map.json` (themes, how it was
built) in the store's cache folder, tagged with the store revision and MAP_FORMAT; a write to
the store (a new revision) makes it stale and the next `collection_map()` rebuilds it.

Beyond `map_max_points` papers, the page gets a sample: the same share of every theme (plus
the papers to highlight), and says so (`MapView.sampled`); the layout and the themes are still
computed from every paper.
"""
from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

import numpy as np

from . import layout
from .answer.themes import kmeans, target_groups
from .map_labels import name_groups
from .types import Paper

MAP_FORMAT = 4  # of the cached files; another is rebuilt (4: t-SNE layout, connected themes, names as covers)
POWER_ITERATIONS = 60  # block power iterations of the PCA (converged to ~1e-6 on MiniLM vectors)
TSNE_MIN_PAPERS = 50  # fewer: PCA (t-SNE needs ~3 × perplexity neighbours per paper to place it)


@dataclass
class MapCluster:
    id: int
    label: str  # "Federated learning, backdoor attacks"
    terms: list[str]  # the label's phrases
    size: int  # papers in the theme (all of them, not just those drawn)
    x: float  # centre of its papers on the map (0..1)
    y: float

    def to_json(self) -> dict:
        return {"id": self.id, "label": self.label, "terms": self.terms, "size": self.size,
                "x": round(self.x, 4), "y": round(self.y, 4)}


@dataclass
class MapPoint:
    paper_id: str
    x: float  # 0..1
    y: float  # 0..1
    cluster: int
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: Optional[int] = None
    highlighted: bool = False


@dataclass
class MapView:
    """What one drawing of the map holds: at most max_points points (+ highlighted ones)."""

    revision: str
    total: int  # papers in the collection
    points: list[MapPoint]
    clusters: list[MapCluster]
    sampled: bool  # fewer points than papers: a per-theme sample
    method: str
    highlighted: list[str]  # paper ids asked to be highlighted and found on the map


@dataclass
class CollectionMap:
    revision: str
    ids: list[str]
    xy: np.ndarray  # (n, 2) float32, scaled to 0..1 (1st–99th percentile box, clipped)
    cluster: np.ndarray  # (n,) int16
    clusters: list[MapCluster]
    method: str = "pca"
    explained: list[float] = field(default_factory=list)  # variance share of the two axes
    build_seconds: float = 0.0
    timings: dict = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.ids)

    def index(self) -> dict[str, int]:
        idx = getattr(self, "_index", None)
        if idx is None:
            idx = {pid: i for i, pid in enumerate(self.ids)}
            self._index = idx
        return idx

    # ------------------------------------------------------------------ views
    def sample(self, max_points: int, seed: int = 0) -> np.ndarray:
        """Row indices drawn on the page: all of them up to max_points, else the same share of
        every theme (at least one paper each), seeded, in row order."""
        n = self.size
        if max_points <= 0 or n <= max_points:
            return np.arange(n)
        rng = np.random.default_rng(seed)
        share = max_points / n
        chosen = []
        for c in range(len(self.clusters)):
            rows = np.flatnonzero(self.cluster == c)
            if not len(rows):
                continue
            take = max(1, int(round(len(rows) * share)))
            chosen.append(rng.choice(rows, size=min(take, len(rows)), replace=False))
        out = np.sort(np.concatenate(chosen)) if chosen else np.arange(0)
        return out[:max_points] if len(out) > max_points else out

    def view(self, papers: dict[str, Paper], max_points: int,
             highlight: Iterable[str] = ()) -> MapView:
        rows = self.sample(max_points)
        idx = self.index()
        marked = [pid for pid in dict.fromkeys(highlight) if pid in idx]
        extra = [idx[pid] for pid in marked if idx[pid] not in set(rows.tolist())]
        rows = np.concatenate([rows, np.asarray(extra, dtype=rows.dtype)]) if extra else rows
        marked_set = set(marked)
        points = []
        for r in rows.tolist():
            pid = self.ids[r]
            p = papers.get(pid)
            points.append(MapPoint(pid, float(self.xy[r, 0]), float(self.xy[r, 1]),
                                   int(self.cluster[r]), p.title if p else pid,
                                   list(p.authors) if p else [], p.year if p else None,
                                   pid in marked_set))
        return MapView(self.revision, self.size, points, self.clusters,
                       sampled=len(rows) - len(extra) < self.size, method=self.method,
                       highlighted=marked)

    def to_json(self, with_points: bool = False) -> dict:
        out = {"revision": self.revision, "papers": self.size, "method": self.method,
               "explained_variance": [round(v, 4) for v in self.explained],
               "build_seconds": round(self.build_seconds, 3),
               "clusters": [c.to_json() for c in self.clusters]}
        if with_points:
            out["points"] = [{"paper_id": pid, "x": round(float(x), 4), "y": round(float(y), 4),
                              "cluster": int(c)}
                             for pid, (x, y), c in zip(self.ids, self.xy.tolist(), self.cluster.tolist())]
        return out

    # ------------------------------------------------------------------ cache
    def save(self, folder: Path, signature: dict) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / "map.tmp.npz", ids=np.asarray(self.ids, dtype=str), xy=self.xy,
                 cluster=self.cluster)
        meta = {"format": MAP_FORMAT, **self.to_json(), "timings": self.timings,
                "signature": signature}
        (folder / "map.tmp.json").write_text(json.dumps(meta, ensure_ascii=False))
        (folder / "map.tmp.npz").replace(folder / "map.npz")
        (folder / "map.tmp.json").replace(folder / "map.json")

    @classmethod
    def load(cls, folder: Path, revision: str, signature: dict) -> Optional["CollectionMap"]:
        try:
            meta = json.loads((folder / "map.json").read_text())
            if (meta.get("format") != MAP_FORMAT or meta.get("revision") != revision
                    or meta.get("signature") != signature):
                return None
            with np.load(folder / "map.npz") as data:
                ids, xy, cluster = data["ids"].tolist(), data["xy"], data["cluster"]
        except Exception:  # missing, damaged, another format: rebuilt
            return None
        if len(ids) != meta.get("papers"):
            return None
        clusters = [MapCluster(**c) for c in meta["clusters"]]
        return cls(revision, ids, xy, cluster, clusters, meta.get("method", "pca"),
                   meta.get("explained_variance", []), meta.get("build_seconds", 0.0),
                   meta.get("timings", {}))


# ---------------------------------------------------------------------- building
def pca_2d(vectors: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """The two principal components (signs fixed: each axis's largest loading is positive, so
    the picture does not flip between builds) and the share of variance each explains."""
    if len(vectors) < 2:
        return np.full((len(vectors), 2), 0.5, dtype=np.float32), [0.0, 0.0]
    x = vectors.astype(np.float32) - vectors.mean(axis=0, dtype=np.float64).astype(np.float32)
    cov = (x.T @ x).astype(np.float64) / max(1, len(x) - 1)
    # Block power iteration (8 vectors, seeded) then Rayleigh-Ritz on the 8×8 projection:
    # matrix products only. LAPACK's full eigh of the 384×384 matrix is as exact but took
    # 2-4 s under multi-threaded OpenBLAS on a loaded 2-core machine (30 ms single-threaded).
    block = np.random.default_rng(0).standard_normal((cov.shape[0], min(8, cov.shape[0])))
    for _ in range(POWER_ITERATIONS):
        block, _ = np.linalg.qr(cov @ block)
    small_values, small_axes = np.linalg.eigh(block.T @ cov @ block)
    order = np.argsort(small_values)[::-1][:2]
    values, axes = small_values[order], block @ small_axes[:, order]
    top = [0, 1]
    axes *= np.sign(axes[np.abs(axes).argmax(axis=0), [0, 1]])
    total = float(np.trace(cov)) or 1.0
    return (x @ axes.astype(np.float32)).astype(np.float32), [float(values[i] / total) for i in top]


def unit_box(xy: np.ndarray, lo: float = 1.0, hi: float = 99.0) -> np.ndarray:
    """Coordinates scaled to 0..1, the lo–hi percentile box filling the middle 84% (the few
    papers beyond it are drawn in the margin, clipped at the edge, instead of squeezing
    everyone else into the middle); aspect kept."""
    if not len(xy):
        return xy.astype(np.float32)
    a, b = np.percentile(xy, lo, axis=0), np.percentile(xy, hi, axis=0)
    span = float(max((b - a).max(), 1e-9))
    centre = (a + b) / 2
    out = (xy - centre) / span * 0.84 + 0.5
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def label_clusters(cluster: np.ndarray, ids: Sequence[str], papers: dict[str, Paper],
                   seed: int = 0) -> list[tuple[str, list[str]]]:
    """(label, terms) per cluster: the phrases that set its papers apart from the other
    clusters' (map_labels.name_groups). A theme no phrase recurs in is "Other papers"."""
    k = int(cluster.max()) + 1 if len(cluster) else 0
    groups = [[papers[ids[r]] for r in np.flatnonzero(cluster == c) if ids[r] in papers]
              for c in range(k)]
    return name_groups(groups, seed)


def layout_method(n: int, wanted: str) -> str:
    """The layout a map of n papers gets: t-SNE when asked for, installed and n is large
    enough to have neighbourhoods; PCA otherwise."""
    if wanted == "tsne" and layout.TSNE_AVAILABLE and n >= TSNE_MIN_PAPERS:
        return "tsne"
    return "pca"


def lay_out(vectors: np.ndarray, method: str, seed: int = 0, threads: int = 2,
            progress: layout.Progress = None) -> tuple[np.ndarray, list[float]]:
    """Raw 2-D coordinates by `method` (the PCA layout is t-SNE's start) and, for PCA, the
    share of variance of each axis."""
    xy, explained = pca_2d(vectors)
    if method == "tsne":
        return layout.tsne_2d(vectors, init=xy, seed=seed, threads=threads, progress=progress), []
    return xy, explained


def group(vectors: np.ndarray, xy: np.ndarray, method: str, k: int, seed: int = 0) -> np.ndarray:
    """The theme of each paper: on a t-SNE map, groups of the vectors that are also regions of
    the map (layout.connected_groups); on a PCA map, whose axes mix unrelated papers, groups of
    the full vectors (spherical k-means)."""
    if method == "tsne":
        return layout.connected_groups(vectors, xy, k, seed)
    return kmeans(vectors, k, seed)


def build_map(store, max_clusters: int, seed: int = 0, method: str = "tsne", threads: int = 2,
              progress: Optional["MapProgress"] = None) -> CollectionMap:
    """The map of the store as it is now (one pass over its vectors)."""
    progress = progress or MapProgress()
    t0 = time.perf_counter()
    progress.at("vectors")
    with store.request():
        revision = store._cache_revision or store.revision()
        papers = store.papers()
    rows = store.paper_rows()  # the paper side's rows: read from Chroma once per revision
    ids, vectors = rows.ids, rows.matrix
    keep = [i for i, pid in enumerate(ids) if pid in papers]  # chunks of a half-written paper
    if len(keep) != len(ids):
        ids, vectors = [ids[i] for i in keep], vectors[keep]
    t_read = time.perf_counter()
    used = layout_method(len(ids), method)
    progress.papers, progress.method = len(ids), used
    progress.at("layout")
    raw, explained = lay_out(vectors, used, seed, threads, lambda share: progress.at("layout", share))
    xy = unit_box(raw)
    t_layout = time.perf_counter()
    progress.at("themes")
    k = target_groups(len(ids), max_clusters) if ids else 0
    cluster = group(vectors, xy, used, k, seed) if ids else np.zeros(0, dtype=np.int16)
    t_cluster = time.perf_counter()
    clusters = make_clusters(xy, cluster, label_clusters(cluster, ids, papers, seed))
    t1 = time.perf_counter()
    timings = {"read_vectors": t_read - t0, "layout": t_layout - t_read,
               "cluster": t_cluster - t_layout, "label": t1 - t_cluster}
    return CollectionMap(revision, ids, xy, cluster, clusters, used, explained, t1 - t0,
                         {k: round(v, 3) for k, v in timings.items()})


def make_clusters(xy: np.ndarray, cluster: np.ndarray,
                  labels: list[tuple[str, list[str]]]) -> list[MapCluster]:
    """The themes with their sizes and centres on the map (where their labels are drawn)."""
    out = []
    for c, (label, terms) in enumerate(labels):
        rows = cluster == c
        cx, cy = (xy[rows].mean(axis=0).tolist() if rows.any() else (0.5, 0.5))
        out.append(MapCluster(c, label, terms, int(rows.sum()), float(cx), float(cy)))
    return out


def map_signature(settings) -> dict:
    """What a cached map depends on besides the store revision and MAP_FORMAT."""
    return {"method": settings.map_layout, "max_clusters": int(settings.map_max_clusters)}


class MapProgress:
    """How far a map build has got, for the page's Map tab and the CLI, written by the thread
    that builds and read by others (single attribute writes; `done` is set when it ends)."""

    STAGES = {"waiting": (0.0, 0.0), "vectors": (0.0, 0.05), "layout": (0.05, 0.9),
              "themes": (0.9, 1.0), "done": (1.0, 1.0)}

    def __init__(self):
        self.stage = "waiting"
        self.share = 0.0  # of the whole build, 0..1
        self.papers = 0
        self.method = ""
        self.error: Optional[str] = None
        self.started = time.monotonic()
        self.done = threading.Event()

    def at(self, stage: str, within: float = 0.0) -> None:
        lo, hi = self.STAGES[stage]
        self.stage, self.share = stage, lo + (hi - lo) * min(1.0, max(0.0, within))

    def finish(self, error: Optional[str] = None) -> None:
        self.error = error
        self.at("done")
        self.done.set()

    def describe(self) -> str:
        """One line for a person: what is being done, how far."""
        if self.error:
            return f"The map could not be built: {self.error}"
        what = {"waiting": "Waiting to build the map",
                "vectors": "Reading the papers' vectors",
                "layout": (f"Laying out {self.papers:,} papers "
                           f"({'t-SNE' if self.method == 'tsne' else 'PCA'})"),
                "themes": "Finding and naming the themes",
                "done": "The map is ready"}[self.stage]
        return f"{what}… {self.share:.0%} ({time.monotonic() - self.started:.0f} s)"


def neighbour_preservation(vectors: np.ndarray, xy: np.ndarray, k: int = 10,
                           sample: int = 1000, seed: int = 0) -> float:
    """Share of each (sampled) paper's k nearest papers by cosine that are also among its k
    nearest on the map: 1 = the map keeps every neighbourhood (benchmarks/map.py)."""
    n = len(vectors)
    if n <= k + 1:
        return 1.0
    rng = np.random.default_rng(seed)
    rows = rng.choice(n, size=min(sample, n), replace=False)
    kept = 0
    for r in rows:
        near = np.argsort(-(vectors @ vectors[r]), kind="stable")
        near = near[near != r][:k]
        d = ((xy - xy[r]) ** 2).sum(axis=1)
        d[r] = math.inf
        kept += len(set(near.tolist()) & set(np.argsort(d, kind="stable")[:k].tolist()))
    return kept / (len(rows) * k)
