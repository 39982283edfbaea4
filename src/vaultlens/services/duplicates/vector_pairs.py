"""Pairs of close vectors without an all-pairs matrix.

Up to :data:`EXACT_MAX_ROWS` rows every pair is scored exactly, one block of rows at a time; above it,
rows are grouped into k-means partitions (each joins its nearest few) and pairs are scored exactly
inside each partition, so the cost grows with the partition sizes instead of n squared.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

BLOCK_ROWS = 1024  # rows per exact block: a 1024 x n float32 product stays under ~120 MB at 30k sections
# sections (notes, for translation candidates); above this, k-means partitions (recall measured)
EXACT_MAX_ROWS = 30_000
KMEANS_ITERATIONS = 8
PROBES = 3  # partitions each section joins (2 found 92.6% of planted pairs at 100k notes, 3: see benchmarks)
PairBatch = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]


def exact_pairs(vecs: npt.NDArray[np.float32], floor: float) -> Iterator[PairBatch]:
    """Every pair i < j with cos >= floor: blocked full products, memory for one block only.

    BLAS makes this the fastest exact method measured here (bench/duplicates_scale.py: faster than
    a projected pre-filter at every size, since the filter's survivors cost more than the flops saved).
    """
    n = vecs.shape[0]
    for start in range(0, n - 1, BLOCK_ROWS):
        stop = min(n, start + BLOCK_ROWS)
        sims = vecs[start:stop] @ vecs[start:].T
        rows, cols = np.nonzero(sims >= floor)
        keep = cols > rows  # the upper triangle: column offset 0 is row ``start`` itself
        rows, cols = rows[keep], cols[keep]
        if rows.size:
            yield (rows + start).astype(np.int64), (cols + start).astype(np.int64), sims[rows, cols]


def _spherical_kmeans(
    sample: npt.NDArray[np.float32], k: int, rng: np.random.Generator
) -> npt.NDArray[np.float32]:
    centroids = sample[rng.choice(len(sample), k, replace=False)].copy()
    for _ in range(KMEANS_ITERATIONS):
        assign = np.argmax(sample @ centroids.T, axis=1)
        sums = np.zeros_like(centroids)
        np.add.at(sums, assign, sample)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()))]
        norms[empty] = 1.0
        centroids = (sums / norms).astype(np.float32)
    return centroids


def partitions(vecs: npt.NDArray[np.float32], seed: int = 0) -> Iterator[npt.NDArray[np.int64]]:
    """Members of each k-means partition (about sqrt(n) of them); each vector joins its :data:`PROBES` nearest."""
    n = vecs.shape[0]
    rng = np.random.default_rng(seed)
    k = max(2, int(np.sqrt(n)))
    sample = vecs[rng.choice(n, min(n, 40 * k), replace=False)]
    centroids = _spherical_kmeans(sample, k, rng)
    probes = min(PROBES, k)
    nearest = np.empty((n, probes), dtype=np.int64)
    for s0 in range(0, n, 8192):
        sims = vecs[s0 : s0 + 8192] @ centroids.T
        nearest[s0 : s0 + 8192] = np.argpartition(-sims, probes - 1, axis=1)[:, :probes]
    owner = nearest.ravel()
    member = np.repeat(np.arange(n, dtype=np.int64), probes)
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(k + 1))
    for c in range(k):
        yield member[order[bounds[c] : bounds[c + 1]]]


def partitioned_pairs(vecs: npt.NDArray[np.float32], floor: float, seed: int = 0) -> Iterator[PairBatch]:
    """Pairs with cos >= floor, approximately: each vector joins the partitions of its
    :data:`PROBES` nearest k-means centroids, and pairs are scored exactly inside each partition.

    Two near-copies (cos >= 0.9) are almost always nearest to the same centroid, and probing two
    makes a miss rarer still; recall is measured on planted pairs in bench/duplicates_scale.py,
    not guaranteed. Cost is the sum of squared partition sizes instead of n squared.
    """
    n = vecs.shape[0]
    seen: set[int] = set()
    for idx in partitions(vecs, seed):
        for ra, rb, sims in exact_pairs(vecs[idx], floor):
            a, b = idx[ra], idx[rb]
            lo, hi = np.minimum(a, b), np.maximum(a, b)
            codes = lo * n + hi
            fresh = np.array([code not in seen for code in codes.tolist()], dtype=bool)
            seen.update(codes[fresh].tolist())
            if fresh.any():
                yield lo[fresh], hi[fresh], sims[fresh]


def close_pairs(vecs: npt.NDArray[np.float32], floor: float) -> Iterator[PairBatch]:
    if vecs.shape[0] <= EXACT_MAX_ROWS:
        return exact_pairs(vecs, floor)
    return partitioned_pairs(vecs, floor)


def top_across(
    vecs: npt.NDArray[np.float32], left: npt.NDArray[np.int64], right: npt.NDArray[np.int64], m: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(l, r) for each l of ``left`` and its ``m`` nearest of ``right``, and for each r its ``m``
    nearest of ``left`` (duplicates possible): one blocked product, memory for one block, the
    right side's running best and the answer (O(n m))."""
    if not len(left) or not len(right):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    kr, kl = min(m, len(right)), min(m, len(left))
    targets = vecs[right]
    col_val = np.full((kl, len(right)), -np.inf, dtype=np.float32)  # each right's best lefts so far
    col_idx = np.zeros((kl, len(right)), dtype=np.int64)
    ls: list[npt.NDArray[np.int64]] = []
    rs: list[npt.NDArray[np.int64]] = []
    for start in range(0, len(left), BLOCK_ROWS):
        block = left[start : start + BLOCK_ROWS]
        sims = vecs[block] @ targets.T
        ls.append(np.repeat(block, kr))
        rs.append(right[np.argpartition(-sims, kr - 1, axis=1)[:, :kr]].ravel())
        kb = min(kl, len(block))
        top = np.argpartition(-sims, kb - 1, axis=0)[:kb]
        vals = np.vstack([col_val, np.take_along_axis(sims, top, axis=0)])
        idx = np.vstack([col_idx, block[top]])
        keep = np.argpartition(-vals, kl - 1, axis=0)[:kl]
        col_val, col_idx = np.take_along_axis(vals, keep, axis=0), np.take_along_axis(idx, keep, axis=0)
    found = np.isfinite(col_val)
    ls.append(col_idx[found])
    rs.append(np.broadcast_to(right, col_idx.shape)[found])
    return np.concatenate(ls), np.concatenate(rs)
