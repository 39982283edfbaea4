"""Synthetic unit vectors shaped like the bundled model's, for the ANN and scale benches.

The model's vectors are anisotropic (a shared mean of norm ~0.45; the top 32 of 512 principal
directions hold ~60% of the variance, measured on ru-wiki + kepano, see bench/duplicates_scale.py):
Gaussian noise with a 1/i spectrum in a random orthonormal basis mimics that. Chunks belong to
clusters (normalise(centre + spectral noise)); queries are drawn the same way from random clusters,
so a query has close neighbours but no exact copy in the index. Generated in blocks from a seed, so
a million vectors never need to exist twice in memory.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

DIMS = 512  # the bundled model's (vaultlens.embedding.local.DIMENSIONS)


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


class Clustered:
    """Seeded clustered vectors: ``block(start, stop)`` is the same for the same seed and range."""

    def __init__(self, n: int, clusters: int = 2000, seed: int = 7, dims: int = DIMS) -> None:
        self.n, self.seed, self.dims = n, seed, dims
        rng = np.random.default_rng(seed)
        lam = 1.0 / np.arange(1, dims + 1)
        q = np.linalg.qr(rng.standard_normal((dims, dims)))[0]
        self.basis = (q * np.sqrt(lam / lam.sum())).astype(np.float32)
        self.shared = unit(rng.standard_normal(dims)) * 0.45
        self.centres = unit(self.shared + 0.9 * self._spectral(rng, clusters))
        self.cluster = rng.integers(0, clusters, n)

    def _spectral(self, rng: np.random.Generator, m: int) -> np.ndarray:
        return rng.standard_normal((m, self.dims)).astype(np.float32) @ self.basis.T

    def block(self, start: int, stop: int) -> np.ndarray:
        rng = np.random.default_rng((self.seed, start))
        return unit(self.centres[self.cluster[start:stop]] + self._spectral(rng, stop - start))

    def blocks(self, size: int = 50_000) -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, self.n, size):
            yield start, self.block(start, min(self.n, start + size))

    def queries(self, m: int, seed: int = 99) -> np.ndarray:
        rng = np.random.default_rng(seed)
        c = rng.integers(0, len(self.centres), m)
        return unit(self.centres[c] + self._spectral(rng, m))


def exact_top(matrix_blocks: Iterator[tuple[int, np.ndarray]], queries: np.ndarray, k: int) -> np.ndarray:
    """Row numbers of the ``k`` best rows per query by inner product, scanning blocks once."""
    best_s = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), k), dtype=np.int64)
    for start, block in matrix_blocks:
        s = queries @ block.T
        idx = np.arange(start, start + block.shape[0])
        all_s = np.concatenate([best_s, s], axis=1)
        all_i = np.concatenate([best_i, np.broadcast_to(idx, s.shape)], axis=1)
        top = np.argpartition(-all_s, k - 1, axis=1)[:, :k]
        best_s = np.take_along_axis(all_s, top, axis=1)
        best_i = np.take_along_axis(all_i, top, axis=1)
    return best_i


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each query's true top-k found in its returned ids."""
    hits = [len(set(f.tolist()) & set(t.tolist())) / len(t) for f, t in zip(found, truth, strict=True)]
    return float(np.mean(hits))
