"""The embedded store's ANN tier: an HNSW graph (usearch, int8) over the chunk vectors.

Past ``search.ann_threshold`` chunks a scan of every vector costs more than a search should
(0.2 s at 1,000,000 chunks), so the store asks this graph for candidates and re-scores them
exactly from its float32 vectors. bench/ann_choice.py chose usearch over hnswlib: half the
memory (float16), real removal, a faster edit, recall@10 as good. The graph then went from float16
to int8: after the exact re-score of the candidates recall@10 was the same at 100,000 vectors (0.983
int8, 0.979 float16: docs/benchmarks.md), and the file a server maps is 44% smaller (63 vs 112 MB).
A file written as float16 before is still read as it is.

The tier is a persisted *base* graph, memory-mapped read-only from its file (pages the searches
touch are the kernel's to drop, not the process's), plus an in-memory *delta* graph for the
chunks added since and a set of base keys removed since. A one-note edit therefore touches only
that note's vectors; :meth:`AnnTier.save` merges the three into a new file now and then. Keys are
the store's chunk keys; which generation the tier reflects is the caller's business (the store
names the file after it).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from vaultlens.fsutil import atomic_file

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from vaultlens.index.progress import Progress
    from vaultlens.index.store import ChunkKeys

CONNECTIVITY = 16  # M: edges per node (bench/ann_choice.py)
EXPANSION_ADD = 64  # ef at construction (128 doubled the build time for no recall after the re-scoring)
# ef at search; a search for more results widens it to that count. 400, not 200: at 1,000,000 int8
# vectors the walk missed true neighbours (recall@10 after the re-score 0.956 -> 0.972, same queries,
# the graph search still ~3 ms: docs/benchmarks.md)
EXPANSION_SEARCH = 400
SCAN_BELOW = 4096  # graphs this small are scanned (int8: about 2 MB a query reads)
MERGE_SHARE = 0.05  # merge the delta into a new base file when it holds this share of the base


def _index_class() -> Any:
    """usearch's ``Index``, with onnxruntime (the quality tier's runtime) loaded first when it is
    installed: onnxruntime 1.32 imported after usearch 2.26 segfaults in its static initialisers
    (libstdc++'s codecvt), and a tier may well load after the graph in the same process."""
    if importlib.util.find_spec("onnxruntime") is not None:
        import onnxruntime  # noqa: F401

    from usearch.index import Index

    return Index


def _graph(dims: int) -> Any:
    return _index_class()(
        ndim=dims,
        metric="ip",
        dtype="i8",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def _mapped(path: Path) -> Any:
    """The graph saved at ``path``, memory-mapped, searched with EXPANSION_SEARCH: the file does not keep
    it, and a graph restored without it searched with usearch's default of 64 (the writer's own
    process after each save: recall@10 0.938 against 0.975 at 1,000,000 chunks, docs/benchmarks.md)."""
    graph = _index_class().restore(str(path), view=True)
    if graph is not None:
        graph.expansion_search = EXPANSION_SEARCH
    return graph


def _scan(graph: Any, k: int) -> bool:
    """Whether a search of ``graph`` for ``k`` keys compares every vector instead of walking the graph:
    a walk can miss a node however wide its beam, and a small graph (a delta, a store just past a
    low threshold) or a search for most of it costs no more scanned."""
    return len(graph) <= SCAN_BELOW or k >= len(graph)


def _batch(graph: Any, queries: npt.NDArray[np.float32], k: int) -> tuple[npt.NDArray[np.float32], ChunkKeys]:
    """(distances, keys), both (n, k), of a search of ``graph``; a slot without a match has distance inf."""
    import numpy as np

    n = queries.shape[0]
    m = graph.search(queries, k, threads=0, exact=_scan(graph, k))
    counts = np.asarray(m.counts if n > 1 else [len(m.keys)]).reshape(n, 1)
    keys = np.zeros((n, k), dtype=np.int64)
    dist = np.full((n, k), np.inf, dtype=np.float32)
    got_keys = np.asarray(m.keys, dtype=np.int64).reshape(n, -1)
    got_dist = np.asarray(m.distances, dtype=np.float32).reshape(n, -1)
    width = got_keys.shape[1]
    valid = np.arange(width) < counts
    keys[:, :width] = np.where(valid, got_keys, 0)
    dist[:, :width] = np.where(valid, got_dist, np.inf)
    return dist, keys


class AnnTier:
    """Base graph (file-backed or built in memory) + delta graph + removed base keys, at one generation."""

    def __init__(self, dims: int, base: Any, generation: int, path: Path | None = None) -> None:
        self.dims = dims
        self.base = base
        self.delta = _graph(dims)
        self.removed: set[int] = set()
        self.generation = generation
        self.path = path  # the file the base was read from; None while it lives only in memory
        self._lock = threading.Lock()

    # ---- building, opening, saving -------------------------------------------------------
    @classmethod
    def build(
        cls, dims: int, blocks: Iterable[tuple[ChunkKeys, npt.NDArray[np.float32]]], generation: int
    ) -> AnnTier:
        """A tier from scratch, fed block by block (the whole matrix never has to be in memory)."""
        base = _graph(dims)
        for keys, vecs in blocks:
            if keys.size:
                base.add(keys, vecs, threads=0)
        return cls(dims, base, generation)

    @classmethod
    def open(cls, path: Path, dims: int, generation: int) -> AnnTier | None:
        """The tier saved in ``path`` (memory-mapped), or None when it cannot be read as one of ``dims``."""
        try:
            base = _mapped(path)
        except (RuntimeError, ValueError, OSError):
            return None
        if base is None or base.ndim != dims:
            return None
        return cls(dims, base, generation, path)

    def save(self, path: Path) -> None:
        """Write base + delta - removed to ``path`` atomically, and map the tier from it from now on."""
        import numpy as np

        Index = _index_class()
        with self._lock:
            merged = self.base if self.path is None else Index.restore(str(self.path))
            if merged is None:
                raise OSError(f"{self.path} cannot be read")
            gone = [k for k in self.removed if merged.contains(k)]
            if gone:
                merged.remove(np.array(gone, dtype=np.uint64))
            if len(self.delta):
                keys = np.asarray(self.delta.keys, dtype=np.uint64)
                merged.add(keys, np.asarray(self.delta.get(keys), dtype=np.float32), threads=0)
            with atomic_file(path, durable=False) as fh:
                merged.save(fh.name)  # usearch writes the temporary path itself; the rename is atomic
            self.base = _mapped(path)
            self.delta = _graph(self.dims)
            self.removed = set()
            self.path = path

    # ---- changes and queries ---------------------------------------------------------------
    def needs_merge(self) -> bool:
        """True for a tier never saved, or whose changes since its file outgrew MERGE_SHARE of it."""
        return self.path is None or len(self.delta) + len(self.removed) > max(
            1_000, MERGE_SHARE * len(self.base)
        )

    def __len__(self) -> int:
        return len(self.base) - len(self.removed) + len(self.delta)

    def update(
        self, touched: ChunkKeys, keys: ChunkKeys, vectors: npt.NDArray[np.float32], generation: int
    ) -> None:
        """Forget every key in ``touched`` (chunks removed or replaced), then add ``keys`` with ``vectors``."""
        import numpy as np

        with self._lock:
            for k in touched.tolist():
                if self.delta.contains(k):
                    self.delta.remove(k)
                if self.base.contains(k):
                    self.removed.add(int(k))
            if keys.size:
                self.delta.add(keys.astype(np.uint64), vectors, threads=1)
            self.generation = generation

    def search(self, query: npt.NDArray[np.float32], k: int) -> ChunkKeys:
        """Up to ``k`` keys whose vectors are (approximately) closest to ``query``, best first."""
        import numpy as np

        with self._lock:
            found: list[tuple[float, int]] = []
            if len(self.base):
                extra = min(len(self.removed), k)
                m = self.base.search(query, k + extra, threads=1, exact=_scan(self.base, k + extra))
                found += [
                    (float(d), int(key))
                    for d, key in zip(m.distances, m.keys, strict=True)
                    if int(key) not in self.removed
                ]
            if len(self.delta):
                m = self.delta.search(query, k, threads=1, exact=_scan(self.delta, k))
                found += [(float(d), int(key)) for d, key in zip(m.distances, m.keys, strict=True)]
        found.sort()
        return np.array([key for _, key in found[:k]], dtype=np.int64)

    def search_many(self, queries: npt.NDArray[np.float32], k: int) -> ChunkKeys:
        """Up to ``k`` keys per query row, best first: an (n, k) array padded with -1."""
        import numpy as np

        n = queries.shape[0]
        with self._lock:
            parts = []
            if len(self.base):
                dist, keys = _batch(self.base, queries, k + min(len(self.removed), k))
                if self.removed:
                    gone = np.isin(keys, np.fromiter(self.removed, np.int64, len(self.removed)))
                    dist = np.where(gone, np.inf, dist)
                parts.append((dist, keys))
            if len(self.delta):
                parts.append(_batch(self.delta, queries, k))
        if not parts:
            return np.full((n, k), -1, dtype=np.int64)
        dist = np.concatenate([d for d, _ in parts], axis=1)
        keys = np.concatenate([kk for _, kk in parts], axis=1)
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
        best = np.take_along_axis(keys, order, axis=1)
        return np.where(np.isfinite(np.take_along_axis(dist, order, axis=1)), best, -1)

    def keys(self) -> ChunkKeys:
        """Every key the tier holds, ascending."""
        import numpy as np

        with self._lock:
            base = np.asarray(self.base.keys, dtype=np.int64)
            if self.removed:
                base = base[~np.isin(base, np.fromiter(self.removed, np.int64, len(self.removed)))]
            return np.sort(np.concatenate([base, np.asarray(self.delta.keys, dtype=np.int64)]))

    def vectors(self, keys: ChunkKeys) -> npt.NDArray[np.float32]:
        """The stored (int8, or float16 in an older file) vectors of ``keys``, as float32; NaN rows for
        keys not held."""
        import numpy as np

        out = np.full((keys.size, self.dims), np.nan, dtype=np.float32)
        with self._lock:
            for i, k in enumerate(keys.tolist()):
                graph = self.delta if self.delta.contains(k) else self.base
                if (graph is self.delta or k not in self.removed) and graph.contains(k):
                    out[i] = graph.get(k, dtype=np.float32)
        return out


class AnnSource(Protocol):
    """What :class:`AnnKeeper` reads from a store, all inside the caller's snapshot."""

    directory: Path
    store_id: str

    def ann_floor(self) -> int:
        """The oldest generation the store's change log still reaches back from."""
        ...

    def changed_keys(self, since: int) -> ChunkKeys:
        """Keys of chunks added or removed after generation ``since`` (up to the snapshot's)."""
        ...

    def vectors_of(self, keys: ChunkKeys) -> tuple[ChunkKeys, npt.NDArray[np.float32]]:
        """(keys that exist, their float32 vectors), ascending."""
        ...

    def vector_blocks(self) -> Iterator[tuple[ChunkKeys, npt.NDArray[np.float32]]]:
        """Every chunk's (keys, vectors), a block at a time."""
        ...

    def chunk_count(self) -> int:
        """How many chunks the snapshot holds."""
        ...


def _counted(
    blocks: Iterable[tuple[ChunkKeys, npt.NDArray[np.float32]]], progress: Progress
) -> Iterator[tuple[ChunkKeys, npt.NDArray[np.float32]]]:
    for keys, vecs in blocks:
        yield keys, vecs
        progress.advance(int(keys.size))


class AnnKeeper:
    """Keeps one process's tier current: from its file, caught up from the store's change log.

    The writer (an index run, a watch flush) builds and saves the files; a reader only maps the
    newest one. Files are ``matrix-<store id>-<generation>.ann`` beside the vector cache. A file is taken
    only for this store (its random id) and only for a generation the snapshot has reached and
    the change log still reaches back to; the log's keys since that generation are then
    re-read, so the tier holds exactly the snapshot's vectors. Anything else is rebuilt by the writer.
    """

    def __init__(self, source: AnnSource) -> None:
        self.source = source
        self.tier: AnnTier | None = None
        self._lock = threading.Lock()

    def file(self, generation: int) -> Path:
        return self.source.directory / f"matrix-{self.source.store_id}-{generation}.ann"

    def files(self) -> dict[int, Path]:
        """This store's tier files by generation."""
        out: dict[int, Path] = {}
        for p in self.source.directory.glob(f"matrix-{self.source.store_id}-*.ann"):
            gen = p.name[: -len(".ann")].rsplit("-", 1)[1]
            if gen.isdigit():
                out[int(gen)] = p
        return out

    def current(self, generation: int, dims: int) -> AnnTier | None:
        """The reader's tier at ``generation`` (the caller's snapshot): held, or mapped from the newest
        usable file, caught up from the change log. None without a usable file: building one takes
        minutes past 100,000 chunks, so that is the writer's (:meth:`refresh`), never a search's."""
        with self._lock:
            return self._caught_up(generation, dims)

    def refresh(self, generation: int, dims: int, progress: Progress) -> None:
        """The writer's, after it committed ``generation``: catch up, or build from the store when no
        file is usable, and write a new file when there is none or the delta outgrew MERGE_SHARE."""
        with self._lock:
            tier = self._caught_up(generation, dims)
            if tier is None:
                progress.phase("Building the ANN index", self.source.chunk_count())
                tier = AnnTier.build(dims, _counted(self.source.vector_blocks(), progress), generation)
                self.tier = tier
            if tier.needs_merge():
                self._save(tier)

    def _caught_up(self, generation: int, dims: int) -> AnnTier | None:
        tier, floor = self.tier, self.source.ann_floor()
        if tier is not None and (tier.dims != dims or tier.generation < floor):
            tier = None
        if tier is None:
            tier = self._from_file(generation, dims, floor)
        elif tier.generation < generation:
            touched = self.source.changed_keys(tier.generation)
            tier.update(touched, *self.source.vectors_of(touched), generation)
        self.tier = tier
        return tier

    def _from_file(self, generation: int, dims: int, floor: int) -> AnnTier | None:
        usable = sorted((g for g in self.files() if floor <= g <= generation), reverse=True)
        for gen in usable:
            tier = AnnTier.open(self.files()[gen], dims, gen)
            if tier is not None:
                touched = self.source.changed_keys(gen)
                tier.update(touched, *self.source.vectors_of(touched), generation)
                return tier
        return None

    def _save(self, tier: AnnTier) -> None:
        """Merge into this generation's file and drop this store's older ones (a read-only folder: kept in memory)."""
        try:
            tier.save(self.file(tier.generation))
        except OSError:
            return
        for gen, p in self.files().items():
            if gen < tier.generation:
                p.unlink(missing_ok=True)
