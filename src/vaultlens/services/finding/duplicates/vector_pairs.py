"""Pairs of close vectors without an all-pairs matrix.

Up to :data:`EXACT_MAX_ROWS` rows every pair is scored exactly, one block of rows at a time. Above it,
the rows are projected on their :data:`PROJECTED_DIMS` principal directions, grouped into k-means
partitions of the projections (each row joins its :data:`PROBES` nearest), and inside each partition
only the pairs whose projected distance allows cos >= floor are scored exactly: a projection on
orthonormal directions never lengthens a difference, so that filter drops no pair of the partition.
The cost grows with the partition sizes in the projected space instead of n squared in the full one,
and the full vectors are read once, a block at a time, and then only for the pairs that pass. Where
the filter passes a large share of a partition's pairs (sections of one tight topic: their projections
lie close though their vectors do not), the partition's rows are read whole and scored as one blocked
product instead, as :func:`exact_pairs` does: a pair at a time cost hours there at 1,000,000 chunks.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from vaultlens.index.vector_file import RowFile

BLOCK_ROWS = 1024  # rows per exact block: a 1024 x n float32 product stays under ~120 MB at 30k sections
# sections (notes, for translation candidates); above this, k-means partitions (recall measured)
EXACT_MAX_ROWS = 30_000
KMEANS_ITERATIONS = 8
PROBES = 3  # partitions each section joins (2 found 92.6% of planted pairs at 100k notes, 3: see benchmarks)
PROJECTED_DIMS = 128  # principal directions the partitions and the distance filter work in
PARTITION_SCALE = 1.0  # partitions per sqrt(rows) for the pairs of rows
PCA_SAMPLE = 20_000  # about this many rows teach the principal directions
READ_ROWS = 16_384  # rows read from the matrix per block while projecting
BOUND_SLACK = 1e-3  # float32 rounding room in the distance filter (it must never drop a true pair)
PAIR_BLOCK = 16_384  # pairs scored exactly at a time: their two rows each are read for it
DENSE_SHARE = 0.05  # a partition whose first block passes more of its pairs is scored as a whole
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


def assign(
    vecs: npt.NDArray[np.float32], seed: int = 0, k: int | None = None, sample_per: int = 40
) -> npt.NDArray[np.int64]:
    """Each row's :data:`PROBES` nearest of ``k`` k-means centroids (default about sqrt(n)), learnt on
    ``sample_per`` rows a centroid: the partitions it joins, an (n, probes) array."""
    n = vecs.shape[0]
    rng = np.random.default_rng(seed)
    k = max(2, min(n, k or int(np.sqrt(n))))
    sample = vecs[rng.choice(n, min(n, sample_per * k), replace=False)]
    centroids = _spherical_kmeans(sample, k, rng)
    probes = min(PROBES, k)
    nearest = np.empty((n, probes), dtype=np.int64)
    for s0 in range(0, n, 8192):
        sims = vecs[s0 : s0 + 8192] @ centroids.T
        nearest[s0 : s0 + 8192] = np.argpartition(-sims, probes - 1, axis=1)[:, :probes]
    return nearest


def members(nearest: npt.NDArray[np.int64]) -> Iterator[npt.NDArray[np.int64]]:
    """The rows of each partition 0, 1, ... that :func:`assign` put them in."""
    k = int(nearest.max()) + 1 if nearest.size else 0
    owner = nearest.ravel()
    member = np.repeat(np.arange(nearest.shape[0], dtype=np.int64), nearest.shape[1])
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(k + 1))
    for c in range(k):
        yield member[order[bounds[c] : bounds[c + 1]]]


def partitions(
    vecs: npt.NDArray[np.float32], seed: int = 0, k: int | None = None, sample_per: int = 40
) -> Iterator[npt.NDArray[np.int64]]:
    """Members of each of ``k`` k-means partitions (see :func:`assign`)."""
    return members(assign(vecs, seed, k, sample_per))


def _first_shared(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """For rows of partitions ``a`` and ``b`` ((m, probes) each), the lowest partition both joined."""
    shared = (a[:, :, None] == b[:, None, :]).any(axis=2)
    first: npt.NDArray[np.int64] = np.where(shared, a, np.iinfo(np.int64).max).min(axis=1)
    return first


class RowReader:
    """Rows of a matrix, read from its file when it is memory-mapped (the vector cache is): a pass
    over every row of a mapping keeps the whole file resident in this process, counted in its
    memory, where reads (index/vector_file.RowFile) leave it in the OS's file cache. The file is
    opened once, so a newer generation that deletes it meanwhile changes nothing here."""

    def __init__(self, vecs: npt.NDArray[np.float32]) -> None:
        self.vecs, self.dims = vecs, vecs.shape[1]
        self._rows: RowFile | None = None
        base: object = vecs
        while base is not None and not isinstance(base, np.memmap):
            base = getattr(base, "base", None)
        if isinstance(base, np.memmap) and base.shape == vecs.shape and vecs.flags.c_contiguous:
            try:
                file = open(str(base.filename), "rb", buffering=0)  # noqa: SIM115  # closed with this reader
            except (OSError, TypeError):  # no file name, or gone already: read through the mapping
                return
            weakref.finalize(self, file.close)
            self._rows, self._dtype = RowFile(file, base.offset, self.dims * base.dtype.itemsize), base.dtype

    def take(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The rows ``idx`` (any order, repeats allowed) as float32."""
        if self._rows is None or not len(idx):
            return np.asarray(self.vecs[idx], np.float32)
        uniq, inverse = np.unique(idx, return_inverse=True)
        lo, hi = int(uniq[0]), int(uniq[-1]) + 1
        dense = hi - lo <= 4 * len(uniq)  # then one read of the whole span
        spans = [(lo, hi - lo)] if dense else [(r, 1) for r in uniq.tolist()]
        raw = b"".join(self._rows.read(first, count) for first, count in spans)
        if len(raw) != sum(count for _, count in spans) * self.dims * self._dtype.itemsize:
            return np.asarray(self.vecs[idx], np.float32)  # a short read: the mapping has the rows
        got = np.frombuffer(raw, self._dtype).reshape(-1, self.dims)
        return np.asarray((got[uniq - lo] if dense else got)[inverse], np.float32)


def partitioned_pairs(
    vecs: npt.NDArray[np.float32], rows: npt.NDArray[np.int64], floor: float, seed: int = 0
) -> Iterator[PairBatch]:
    """Pairs of ``rows`` (indices into ``vecs``, given back as such) with cos >= floor, approximately:
    each row joins the partitions of its :data:`PROBES` nearest k-means centroids of the projections,
    and inside each partition the pairs the projected distance allows are scored exactly.

    Two near-copies (cos >= 0.9) are almost always nearest to the same centroid, and probing three
    makes a miss rarer still; recall is measured on planted pairs in bench/duplicates_scale.py and
    bench/dup_scale.py, not guaranteed.
    """
    n = len(rows)
    reader = RowReader(vecs)
    unit, norms = _projections(reader, rows)
    limit = 2.0 - 2.0 * floor + BOUND_SLACK
    nearest = assign(unit, seed, k=int(PARTITION_SCALE * np.sqrt(n)))
    for c, idx in enumerate(members(nearest)):
        # the filter on the partition's first rows against all of it tells whether it is worth it
        m, head = len(idx), min(len(idx), BLOCK_ROWS)
        part_unit, part_norms = unit[idx], norms[idx]
        a, b = _within_distance(part_unit, part_norms, limit, stop=head)
        if len(a) > DENSE_SHARE * (head * (head - 1) // 2 + head * (m - head)):
            for i, j, sims in exact_pairs(reader.take(rows[idx]), floor):  # idx ascending: i < j
                fresh = _first_shared(nearest[idx[i]], nearest[idx[j]]) == c
                yield rows[idx[i[fresh]]], rows[idx[j[fresh]]], sims[fresh]
            continue
        more_a, more_b = _within_distance(part_unit, part_norms, limit, start=head)
        a, b = np.concatenate([a, more_a]), np.concatenate([b, more_b])
        lo, hi = np.minimum(idx[a], idx[b]), np.maximum(idx[a], idx[b])
        # a pair two partitions share is scored in the first of them: no set of the pairs seen, whose
        # size grew with the vault (20 GB at 1,000,000 chunks of tight topics: docs/benchmarks.md)
        fresh = _first_shared(nearest[lo], nearest[hi]) == c
        lo, hi = lo[fresh], hi[fresh]
        for s0 in range(0, len(lo), PAIR_BLOCK):
            ga, gb = rows[lo[s0 : s0 + PAIR_BLOCK]], rows[hi[s0 : s0 + PAIR_BLOCK]]
            sims = _cosines(reader, ga, gb)
            keep = sims >= floor
            if keep.any():
                yield ga[keep], gb[keep], sims[keep].astype(np.float32)


def _cosines(
    reader: RowReader, a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]
) -> npt.NDArray[np.float32]:
    """cos(row a[i], row b[i]) for each i."""
    out: npt.NDArray[np.float32] = np.einsum("ij,ij->i", reader.take(a), reader.take(b))
    return out


def _projections(
    reader: RowReader, rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """The rows on their top principal directions, as unit vectors and lengths, in two passes of
    :data:`READ_ROWS` rows at a time (the first learns the directions from every few rows)."""
    n, dims = len(rows), reader.dims
    blocks = range(0, n, READ_ROWS)
    basis = np.eye(dims, dtype=np.float32)
    if dims > PROJECTED_DIMS:
        step = max(1, n // PCA_SAMPLE)
        total, gram, count = np.zeros(dims), np.zeros((dims, dims)), 0
        for s0 in blocks:
            part = reader.take(rows[s0 : s0 + READ_ROWS])[::step].astype(np.float64)
            total, gram, count = total + part.sum(axis=0), gram + part.T @ part, count + len(part)
        mean = total / count
        directions = np.linalg.eigh(gram / count - np.outer(mean, mean))[1]  # ascending: the last are the top
        basis = np.ascontiguousarray(directions[:, -PROJECTED_DIMS:], dtype=np.float32)
    unit = np.empty((n, basis.shape[1]), dtype=np.float32)
    for s0 in blocks:
        unit[s0 : s0 + READ_ROWS] = reader.take(rows[s0 : s0 + READ_ROWS]) @ basis
    norms = np.linalg.norm(unit, axis=1).astype(np.float32)
    unit /= np.maximum(norms, 1e-12)[:, None]
    return unit, norms


def _within_distance(
    unit: npt.NDArray[np.float32],
    norms: npt.NDArray[np.float32],
    limit: float,
    start: int = 0,
    stop: int | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Local pairs i < j whose projected vectors lie within squared distance ``limit``, for the i from
    ``start`` to ``stop`` (default: every row).

    |a - b|^2 = |a|^2 + |b|^2 - 2 |a| |b| cos is smallest, for a given |a|, when |b|^2 = |a|^2 - limit,
    so no pair within the limit has a cosine below sqrt(1 - limit / |a|^2): one comparison per pair
    against its row's bound, the exact distance only for what passes it."""
    m = len(unit)
    sq = norms.astype(np.float64) ** 2
    least_cos = np.sqrt(np.clip(1.0 - limit / np.maximum(sq, 1e-12), 0.0, 1.0)).astype(np.float32)
    ls: list[npt.NDArray[np.int64]] = []
    rs: list[npt.NDArray[np.int64]] = []
    end = m if stop is None else min(m, stop)
    for first in range(start, end, BLOCK_ROWS):
        last = min(end, first + BLOCK_ROWS)
        cos = unit[first:last] @ unit[first:].T
        rows, cols = np.nonzero(cos >= least_cos[first:last, None])
        keep = cols > rows  # the upper triangle: column offset 0 is row ``first`` itself
        rows, cols = rows[keep], cols[keep]
        a, b = rows + first, cols + first
        near = sq[a] + sq[b] - 2.0 * norms[a] * norms[b] * cos[rows, cols] <= limit
        ls.append(a[near])
        rs.append(b[near])
    if not ls:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(ls).astype(np.int64), np.concatenate(rs).astype(np.int64)


def close_pairs(
    vecs: npt.NDArray[np.float32], rows: npt.NDArray[np.int64], floor: float
) -> Iterator[PairBatch]:
    """Pairs of ``rows`` (indices into ``vecs``, given back as such) with cos >= floor."""
    if len(rows) > EXACT_MAX_ROWS:
        yield from partitioned_pairs(vecs, rows, floor)
        return
    for a, b, sims in exact_pairs(np.asarray(vecs[rows], np.float32), floor):
        yield rows[a], rows[b], sims


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
