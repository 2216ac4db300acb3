"""Where the map puts each paper: t-SNE (openTSNE) so that papers with similar abstracts sit
together, and the groups the reader sees on it.

    xy = tsne_2d(vectors, init=pca_xy, seed=0, threads=2, progress=lambda done: ...)
    groups = connected_groups(vectors, xy, k=12)

t-SNE keeps each paper's nearest papers next to it, which a linear projection (PCA) cannot do
with 384 dimensions in two; distances between far-apart groups mean little. The steps:

1. each paper's nearest papers by cosine: exact (blocks of matrix products) up to
   EXACT_NEIGHBOURS_MAX papers, Annoy (openTSNE's approximate index, seeded) beyond;
2. perplexity-based affinities on them (perplexity 30, capped below n/3 for small collections);
3. the optimisation, started from the PCA layout (so the picture keeps its orientation between
   builds): an early-exaggeration phase that gathers the groups, then a shorter free phase.
   The negative gradient is FFT-interpolated (openTSNE's FIt-SNE), whose cost per iteration
   has a floor from its grid, so below FFT_MIN_PAPERS Barnes-Hut is cheaper.

Everything is seeded: the same vectors give the same map. openTSNE is optional at import time:
without it (`TSNE_AVAILABLE` is False) the map falls back to PCA (assistant/map.py). The
trade-offs behind these constants, with figures, are in docs/benchmarks.md
(`benchmarks/map.py projection`).
"""
from __future__ import annotations

import warnings
from typing import Callable, Optional

import numpy as np

try:  # optional: without it the map is a PCA projection (scikit-learn comes with openTSNE)
    from openTSNE import TSNEEmbedding
    from openTSNE.affinity import PerplexityBasedNN
    from openTSNE.initialization import rescale
    from openTSNE.nearest_neighbors import Annoy, PrecomputedNeighbors
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.neighbors import KNeighborsClassifier, kneighbors_graph
    TSNE_AVAILABLE = True
except ImportError:  # pragma: no cover - exercised by monkeypatching TSNE_AVAILABLE
    TSNE_AVAILABLE = False

PERPLEXITY = 30.0
EXACT_NEIGHBOURS_MAX = 20000  # above: Annoy (exact kNN costs n² dot products)
NEIGHBOUR_BLOCK = 2048  # rows of the similarity matrix held at once (2048 × n float32)
FFT_MIN_PAPERS = 3000  # below: Barnes-Hut (the FFT grid's fixed cost per iteration dominates)
EARLY_ITERATIONS = 250  # exaggeration 12: the groups form
LATE_ITERATIONS = 150  # exaggeration 1: the groups spread (more iterations kept no more neighbours)
EARLY_EXAGGERATION = 12.0
REPORT_EVERY = 25  # iterations between progress reports

Progress = Optional[Callable[[float], None]]  # called with the share of the layout done (0..1)


def perplexity_for(n: int) -> float:
    """PERPLEXITY, capped so that 3 × perplexity neighbours exist (a collection of 40 papers
    gets 13): openTSNE would lower it itself, with a warning."""
    return float(max(1.0, min(PERPLEXITY, (n - 1) / 3.0)))


def nearest_neighbours(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest other rows of each row by cosine (rows are unit vectors) and their cosine
    distances, nearest first; exact, one block of rows at a time (ties: lower row first)."""
    n = len(vectors)
    index = np.empty((n, k), dtype=np.int64)
    distance = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, NEIGHBOUR_BLOCK):
        stop = min(n, start + NEIGHBOUR_BLOCK)
        sim = vectors[start:stop] @ vectors.T
        sim[np.arange(stop - start), np.arange(start, stop)] = -np.inf  # not its own neighbour
        part = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        part_sim = np.take_along_axis(sim, part, axis=1)
        order = np.lexsort((part, -part_sim), axis=1)
        index[start:stop] = np.take_along_axis(part, order, axis=1)
        distance[start:stop] = 1.0 - np.take_along_axis(part_sim, order, axis=1)
    return index, np.clip(distance, 0.0, 2.0)


def affinities(vectors: np.ndarray, seed: int, threads: int) -> "PerplexityBasedNN":
    """t-SNE's input affinities over each paper's 3 × perplexity nearest papers."""
    perplexity = perplexity_for(len(vectors))
    k = min(len(vectors) - 1, int(3 * perplexity))
    if len(vectors) <= EXACT_NEIGHBOURS_MAX:
        knn = PrecomputedNeighbors(*nearest_neighbours(vectors, k))
    else:
        knn = Annoy(vectors, k, metric="cosine", n_jobs=threads, random_state=seed)
    return PerplexityBasedNN(knn_index=knn, perplexity=perplexity, n_jobs=threads)


def tsne_2d(vectors: np.ndarray, init: np.ndarray, seed: int = 0, threads: int = 2,
            progress: Progress = None) -> np.ndarray:
    """The t-SNE layout of unit vectors, started from `init` (the PCA layout), seeded."""
    n = len(vectors)
    total = EARLY_ITERATIONS + LATE_ITERATIONS
    report = progress or (lambda share: None)
    report(0.0)
    aff = affinities(vectors.astype(np.float32), seed, threads)
    start = rescale(np.asarray(init, dtype=np.float64))  # std 1e-4, as openTSNE's own init
    method = "fft" if n >= FFT_MIN_PAPERS else "bh"
    emb = TSNEEmbedding(start, aff, negative_gradient_method=method, n_jobs=threads,
                        random_state=seed)
    emb = emb.optimize(n_iter=EARLY_ITERATIONS, exaggeration=EARLY_EXAGGERATION,
                       learning_rate=max(n / EARLY_EXAGGERATION, 50.0), momentum=0.5,
                       callbacks=_reporter(report, 0, total), callbacks_every_iters=REPORT_EVERY)
    emb = emb.optimize(n_iter=LATE_ITERATIONS, exaggeration=1.0, learning_rate=max(float(n), 50.0),
                       momentum=0.8, callbacks=_reporter(report, EARLY_ITERATIONS, total),
                       callbacks_every_iters=REPORT_EVERY)
    report(1.0)
    return np.asarray(emb, dtype=np.float32)


def _reporter(report: Callable[[float], None], before: int, total: int):
    """An openTSNE callback passing the share of iterations done to `report` (never stops)."""
    def callback(iteration, error, embedding):
        report((before + iteration) / total)
        return False
    return callback


# ---------------------------------------------------------------------- groups on the map
WARD_MAX_PAPERS = 20000  # papers Ward's method groups (~6 s); the others take their neighbours' group
MAP_NEIGHBOURS = 10  # a group grows only through each paper's nearest points on the map


def connected_groups(vectors: np.ndarray, xy: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """The group of each paper: Ward's clustering of the paper vectors, merging only groups that
    touch on the map (scikit-learn's connectivity constraint over each point's MAP_NEIGHBOURS
    nearest points), so a theme is one region the reader sees and also papers about one thing.
    k-means on the map's points mixes topics that happen to lie side by side, k-means on the
    vectors scatters a theme over the picture (blind readers' verdicts in
    docs/benchmarks.md). Beyond WARD_MAX_PAPERS papers (Ward takes ~40 s at 100,000) a seeded
    sample is grouped and every other paper takes the group most of its nearest sampled points
    on the map have. Deterministic; groups numbered by size, largest first."""
    n = len(xy)
    if k <= 1 or n <= k:
        return np.zeros(n, dtype=np.int16) if k <= 1 else np.arange(n, dtype=np.int16)
    rng = np.random.default_rng(seed)
    fit = np.arange(n) if n <= WARD_MAX_PAPERS else np.sort(rng.choice(n, WARD_MAX_PAPERS, replace=False))
    graph = kneighbors_graph(xy[fit], min(MAP_NEIGHBOURS, len(fit) - 1), include_self=False)
    with warnings.catch_warnings():  # islands on the map: scikit-learn joins them, and says so
        warnings.filterwarnings("ignore", message="the number of connected components")
        labels = AgglomerativeClustering(n_clusters=k, connectivity=graph,
                                         linkage="ward").fit_predict(vectors[fit])
    if len(fit) < n:
        labels = KNeighborsClassifier(MAP_NEIGHBOURS).fit(xy[fit], labels).predict(xy)
    sizes = np.bincount(labels, minlength=k)
    rank = np.empty(k, dtype=np.int64)
    rank[sorted(range(k), key=lambda j: (-sizes[j], j))] = np.arange(k)
    return rank[labels].astype(np.int16)
