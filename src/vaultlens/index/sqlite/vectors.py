"""The embedded store's vectors: the matrix and its generation-stamped cache files, exact top-k and
scores, rows by key for the re-score, arrays derived from one generation, and the store's side of
the ANN tier (index/sqlite/ann.py): building it after a run, the change log it catches up from,
neighbours, and the checks doctor runs on both."""

from __future__ import annotations

import threading
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultlens.embedding.base import Vectors
from vaultlens.fsutil import atomic_file
from vaultlens.index.sqlite.ann import AnnKeeper, AnnTier
from vaultlens.index.sqlite.connection import SQLiteConnection
from vaultlens.index.store import ChunkKeys
from vaultlens.index.vector_file import VectorFile, cached_matrix, write_matrix

if TYPE_CHECKING:  # numpy loads in the methods that handle vectors: status and note lists skip it
    import numpy as np
    import numpy.typing as npt

    from vaultlens.index.progress import Progress

NEIGHBOUR_BATCH = 4096  # keys per ANN batch search in neighbours()
ANN_CANDIDATES = 200  # the fewest ANN candidates re-scored exactly (recall@10 >= 0.95: bench/ann_scale.py)
# vectors read from SQLite kept per generation (2 KB each at 512 dimensions): a search past the ANN
# threshold reads its candidates' vectors up to three times (re-score, fusion, note penalties)
VECTOR_CACHE = 4096


class SQLiteVectors(SQLiteConnection):
    """Vector reads and the vector caches of the store (SQLiteStore, which sets these)."""

    ann_threshold: int  # chunks from which top_k asks the ANN tier
    _ann: AnnKeeper
    _matrix: dict[bool, tuple[int, npt.NDArray[np.int64], Vectors]]
    _matrix_lock: threading.Lock
    _vec_cache: dict[tuple[int, int], bytes]
    _vec_file: tuple[int, int, VectorFile, ChunkKeys] | None

    def matrix(self, tier: bool = False) -> tuple[ChunkKeys, Vectors]:
        """(chunk rowids, unit vectors) for every chunk, from the generation-stamped cache.

        Runs inside a snapshot, so the generation, and the rows a cache is built from, are
        one committed state: a cache file is only ever written for the generation it holds.
        Cache files carry the store's random id as well as the generation, so a cache written
        by a reader of an older store (before a rebuild restarted the generations) is never
        taken for this one's. ``tier``: the quality tier's vectors (only chunks that have one).
        """
        with self.snapshot() as gen:
            cached = self._matrix.get(tier)
            if cached is not None and cached[0] == gen:
                return cached[1], cached[2]
            with self._matrix_lock:
                return self._load_matrix(gen, tier)

    def _load_matrix(self, gen: int, tier: bool) -> tuple[ChunkKeys, Vectors]:
        """The matrix of generation ``gen`` (the caller's snapshot), built once under the matrix lock."""
        cached = self._matrix.get(tier)
        if cached is not None and cached[0] == gen:  # built by the thread we waited for
            return cached[1], cached[2]
        rowids, vecs = cached_matrix(
            self._cache_files(gen, tier),
            lambda: self._write_cache(gen, tier),
            lambda: self._read_matrix(tier),
        )
        self._matrix[tier] = (gen, rowids, vecs)
        return rowids, vecs

    def top_k(self, query: Vectors, k: int) -> tuple[ChunkKeys, npt.NDArray[np.float32]]:
        """Exact over the matrix; past ``ann_threshold`` chunks, the ANN tier's candidates re-scored
        exactly from the stored float32 vectors (at least ANN_CANDIDATES of them, for recall)."""
        import numpy as np

        tier = self.ann_tier()
        if tier is not None:
            return self._ann_top(tier, query, k)
        rowids, vecs = self.matrix()
        if rowids.size == 0 or k <= 0:
            return rowids[:0], np.zeros(0, dtype=np.float32)
        dense = np.asarray(vecs @ query, dtype=np.float32)
        k = min(k, dense.size)
        top = np.argpartition(-dense, k - 1)[:k]
        return rowids[top], dense[top]

    def _ann_top(self, tier: AnnTier, query: Vectors, k: int) -> tuple[ChunkKeys, npt.NDArray[np.float32]]:
        """The ``k`` best of the tier's candidates (at least ANN_CANDIDATES), re-scored exactly."""
        import numpy as np

        keys, vecs = self.vectors_of(tier.search(query, max(k, ANN_CANDIDATES)))
        dense = np.asarray(vecs @ query, dtype=np.float32)
        top = np.argsort(-dense, kind="stable")[: max(k, 0)]
        return keys[top], dense[top]

    def scores(self, query: Vectors, keys: ChunkKeys) -> npt.NDArray[np.float32]:
        import numpy as np

        out = np.full(keys.shape[0], np.nan, dtype=np.float32)
        if self._chunks_now() >= self.ann_threshold:  # a few hundred rows: read them, never the matrix
            have, vecs = self.vectors_of(keys)
            pos = np.minimum(np.searchsorted(have, keys), max(have.size - 1, 0))
            found = have[pos] == keys if have.size else np.zeros(keys.shape[0], dtype=np.bool_)
            out[found] = np.asarray(vecs[pos[found]] @ query, dtype=np.float32)
            return out
        rowids, vecs = self.matrix()
        if rowids.size == 0 or keys.size == 0:
            return out
        pos = np.minimum(np.searchsorted(rowids, keys), rowids.size - 1)
        found = rowids[pos] == keys
        if found.any():
            out[found] = np.asarray(vecs[pos[found]] @ query, dtype=np.float32)
        return out

    # ---- the ANN tier (index/sqlite/ann.py) ----------------------------------------------------------
    def ann_tier(self) -> AnnTier | None:
        """The ANN tier at this snapshot's generation; None below ``ann_threshold`` chunks, or while no
        usable file exists (the exact scan answers until the writer's :meth:`refresh_ann` writes one)."""
        space = self.space
        if self._chunks_now() < self.ann_threshold or space is None or not space.dimensions:
            return None
        with self.snapshot() as gen:
            return self._ann.current(gen, space.dimensions)

    def neighbours(self, keys: ChunkKeys, k: int) -> tuple[ChunkKeys, ChunkKeys] | None:
        """Past ``ann_threshold`` chunks: each key's ``k`` nearest other chunks in the ANN tier, by
        stored vector, NEIGHBOUR_BATCH keys at a time (memory for one batch only); else None."""
        import numpy as np

        tier = self.ann_tier()
        if tier is None:
            return None
        froms: list[ChunkKeys] = []
        tos: list[ChunkKeys] = []
        for start in range(0, keys.size, NEIGHBOUR_BATCH):
            have, vecs = self.vectors_of(keys[start : start + NEIGHBOUR_BATCH])
            if not have.size:
                continue
            found = tier.search_many(vecs, k + 1)  # the chunk itself comes back too
            src = np.broadcast_to(have[:, None], found.shape)
            keep = (found >= 0) & (found != src)
            froms.append(src[keep])
            tos.append(found[keep])
        if not froms:
            return keys[:0], keys[:0]
        return np.concatenate(froms), np.concatenate(tos)

    def chunk_count(self) -> int:
        return self._chunks_now()

    def ann_floor(self) -> int:
        return int(self.get_meta("ann_floor") or 0)

    def changed_keys(self, since: int) -> ChunkKeys:
        import numpy as np

        rows = self.db.execute("SELECT DISTINCT key FROM chunk_log WHERE generation > ?", (since,)).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def vectors_of(self, keys: ChunkKeys) -> tuple[ChunkKeys, Vectors]:
        """(keys that have a chunk and a vector, their float32 vectors), ascending by key: rows of the
        vector cache file (one ``pread`` each: index/vector_file.py) for the keys unchanged since it was
        written, SQLite for the others, and for all of them when no file is usable."""
        import numpy as np

        with self.snapshot() as gen:
            held = self._vector_file(gen) if keys.size else None
            if held is None:
                return self._stack(self._sqlite_vectors(gen, keys.tolist()))
            vec_file, changed = held
            unique = np.unique(keys)
            stale = np.isin(unique, changed, assume_unique=True)
            try:
                have, vecs = vec_file.read(unique[~stale])
            except OSError:  # truncated since it was opened: SQLite answers until the next generation
                self._vec_file = None
                return self._stack(self._sqlite_vectors(gen, keys.tolist()))
            if not stale.any():
                return have, vecs
            more_keys, more = self._stack(self._sqlite_vectors(gen, unique[stale].tolist()))
        both = np.concatenate([have, more_keys])
        order = np.argsort(both, kind="stable")
        return both[order], np.concatenate([vecs, more])[order]

    def _sqlite_vectors(self, gen: int, keys: list[int]) -> list[Any]:
        """(key, float32 bytes) rows of ``keys`` read from SQLite in snapshot ``gen``, ascending; the
        last VECTOR_CACHE read are kept for the generation (a rowid may name another chunk in the next)."""
        sql = (
            "SELECT c.rowid, v.vec FROM chunks c JOIN vectors v ON v.embed_hash = c.embed_hash"
            " WHERE c.rowid IN ({marks})"
        )
        cache, wanted = self._vec_cache, dict.fromkeys(keys)
        rows = [(k, v) for k in wanted if (v := cache.get((gen, k))) is not None]
        cached = {k for k, _ in rows}
        read = list(self._rows_in(sql, (k for k in wanted if k not in cached)))
        if len(cache) + len(read) > VECTOR_CACHE:
            cache.clear()
        cache.update(((gen, k), v) for k, v in read[:VECTOR_CACHE])
        return sorted(rows + read)

    def _vector_file(self, gen: int) -> tuple[VectorFile, ChunkKeys] | None:
        """The newest vector cache file snapshot ``gen`` can read rows from (this store's, written at a
        generation the change log still reaches back to), with the keys changed since it was written,
        which are read from SQLite instead. Kept for the generation; looked for again while none is."""
        import numpy as np

        held = self._vec_file
        if held is not None and held[0] == gen:
            return held[2], held[3]
        floor = self.ann_floor()
        for g in sorted(self._cache_gens(gen), reverse=True):
            if g < floor:
                break
            if held is not None and held[1] == g and held[0] < gen:  # the same file: only the new changes
                now = (gen, g, held[2], np.union1d(held[3], self.changed_keys(held[0])))
            elif (opened := self._open_vector_file(g)) is not None:
                now = (gen, g, opened, np.unique(self.changed_keys(g)))
            else:
                continue
            self._vec_file = now
            return now[2], now[3]
        return None

    def _open_vector_file(self, gen: int) -> VectorFile | None:
        space = self.space
        if space is None or not space.dimensions:
            return None
        return VectorFile.open(*self._cache_files(gen), space.dimensions)

    def _cache_gens(self, upto: int) -> list[int]:
        """Generations up to ``upto`` with a vector cache file of this store (the main vectors')."""
        found = []
        for p in self.directory.glob(f"matrix-{self.store_id}-*.vecs.npy"):
            gen = p.name[: -len(".vecs.npy")].rsplit("-", 1)[1]
            if gen.isdigit() and int(gen) <= upto:
                found.append(int(gen))
        return found

    def vector_blocks(
        self, size: int = 20_000, table: str = "vectors"
    ) -> Iterator[tuple[ChunkKeys, Vectors]]:
        """(keys, vectors) of every chunk in key order, ``size`` at a time (``table``: or tier_vectors)."""
        last = -1
        while True:
            rows = self.db.execute(
                f"SELECT c.rowid, v.vec FROM chunks c JOIN {table} v ON v.embed_hash = c.embed_hash"
                " WHERE c.rowid > ? ORDER BY c.rowid LIMIT ?",
                (last, size),
            ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield self._stack(rows)

    def _stack(self, rows: Sequence[Any]) -> tuple[ChunkKeys, Vectors]:
        import numpy as np

        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if not rows:
            space = self.space
            return keys, np.zeros((0, space.dimensions if space else 0), dtype=np.float32)
        return keys, np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)

    def ann_problems(self) -> list[str]:
        """An ANN file that cannot be read or holds other keys or vectors than the store (a sample)."""
        import numpy as np

        space = self.space
        with self.snapshot() as gen:
            files = {g: p for g, p in self._ann.files().items() if g <= gen}
            if space is None:
                return []
            if not files:
                if self._chunks_now() < self.ann_threshold:
                    return []
                return ["no ANN index yet: searches scan every vector until `vaultlens index` writes it"]
            newest = max(files)
            tier = AnnTier.open(files[newest], space.dimensions, newest)
            if tier is None:
                return [f"ANN index {files[newest].name} cannot be read"]
            if newest < self.ann_floor():
                return []  # older than the change log: never taken, the next index run rebuilds it
            touched = self.changed_keys(newest)  # from SQLite, not the vector file: this checks the tier's
            tier.update(touched, *self._stack(self._sqlite_vectors(gen, touched.tolist())), gen)
            true_keys = np.fromiter(
                (r[0] for r in self.db.execute("SELECT rowid FROM chunks ORDER BY rowid")), np.int64
            )
            if not np.array_equal(tier.keys(), true_keys):
                return [f"ANN index {files[newest].name} holds other chunks than the store"]
            sample = true_keys[np.random.default_rng(0).permutation(true_keys.size)[:500]]
            keys, stored = self._stack(self._sqlite_vectors(gen, sample.tolist()))
            if np.abs(tier.vectors(keys) - stored).max(initial=0.0) > 1e-2:  # float16 rounds at ~1e-3
                return [f"ANN index {files[newest].name} differs from the stored vectors"]
            return []

    def ann_recall(self, queries: int = 200, k: int = 10) -> float | None:
        """Recall@k of the ANN tier as searches use it (its candidates re-scored exactly) against an
        exact scan, stored vectors as queries; None without a tier."""
        import numpy as np

        with self.snapshot():
            tier = self.ann_tier()
            if tier is None:
                return None
            keys = tier.keys()
            sample = keys[np.random.default_rng(1).permutation(keys.size)[:queries]]
            _, qs = self.vectors_of(sample)
            best = [np.full(k, -np.inf, dtype=np.float32) for _ in qs]
            best_keys = [np.zeros(k, dtype=np.int64) for _ in qs]
            for block_keys, vecs in self.vector_blocks():
                scores = qs @ vecs.T
                for i in range(len(qs)):
                    s = np.concatenate([best[i], scores[i]])
                    kk = np.concatenate([best_keys[i], block_keys])
                    top = np.argpartition(-s, k - 1)[:k]
                    best[i], best_keys[i] = s[top], kk[top]
            hits = [
                len(set(self._ann_top(tier, q, k)[0].tolist()) & set(t.tolist()))
                for q, t in zip(qs, best_keys, strict=True)
            ]
            return float(np.mean(hits)) / k

    def cache_problems(self) -> list[str]:
        """A vector cache that differs from the stored vectors (it would serve wrong results): the
        newest file a search may read (the matrix below the ANN threshold, the re-score's rows past it,
        where it may be older than the snapshot), compared block by block on the keys unchanged since."""
        import numpy as np

        with self.snapshot() as gen:
            gens = self._cache_gens(gen)
            if not gens or (max(gens) < self.ann_floor() and max(gens) < gen):
                return []  # none, or too old to be read: rebuilt, never trusted
            ids_file, vec_file = self._cache_files(max(gens))
            try:
                rowids, vecs = np.load(ids_file), np.load(vec_file, mmap_mode="r")
                if vecs.shape[0] != rowids.shape[0]:
                    raise ValueError("keys and vectors differ in number")
            except (OSError, ValueError):
                return [f"vector cache {vec_file.name} cannot be read"]
            changed = np.unique(self.changed_keys(max(gens)))
            kept = np.flatnonzero(~np.isin(rowids, changed))
            done = 0
            for keys, block in self.vector_blocks():
                same = ~np.isin(keys, changed)
                keys, block = keys[same], block[same]
                rows = kept[done : done + keys.size]
                if not (np.array_equal(rowids[rows], keys) and np.array_equal(vecs[rows], block)):
                    return [f"vector cache {vec_file.name} differs from the stored vectors"]
                done += keys.size
            if done != kept.size:
                return [f"vector cache {vec_file.name} differs from the stored vectors"]
            return []

    def _read_matrix(self, tier: bool = False) -> tuple[ChunkKeys, Vectors]:
        import numpy as np

        space = self.tier_space if tier else self.space
        dims = space.dimensions if space else 0
        table = "tier_vectors" if tier else "vectors"
        rows = self.db.execute(
            f"SELECT c.rowid, v.vec FROM chunks c JOIN {table} v ON v.embed_hash = c.embed_hash ORDER BY c.rowid"
        ).fetchall()
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if not rows:
            return rowids, np.zeros((0, dims), dtype=np.float32)
        vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        return rowids, vecs

    def _cache_files(self, gen: int, tier: bool = False) -> tuple[Path, Path]:
        stem = f"matrix-{self.store_id}-{gen}" + ("-tier" if tier else "")
        return self.directory / f"{stem}.ids.npy", self.directory / f"{stem}.vecs.npy"

    def _write_cache(self, gen: int, tier: bool) -> bool:
        """Stream this snapshot's vectors into the cache files a block at a time (the matrix is never
        held in memory: it is memory-mapped from the file afterwards); False when it cannot be written."""
        import numpy as np

        table = "tier_vectors" if tier else "vectors"
        join = f"FROM chunks c JOIN {table} v ON v.embed_hash = c.embed_hash"
        ids = np.fromiter(
            (r[0] for r in self.db.execute(f"SELECT c.rowid {join} ORDER BY c.rowid")), np.int64
        )
        space = self.tier_space if tier else self.space
        try:
            blocks = (block for _, block in self.vector_blocks(table=table))
            write_matrix(*self._cache_files(gen, tier), ids, blocks, space.dimensions if space else 0)
        except OSError:
            return False  # a read-only index dir only costs memory and speed
        self._drop_caches(keep=gen)
        return True

    def load_derived(self, name: str, generation: int) -> dict[str, npt.NDArray[Any]] | None:
        """Arrays saved by :meth:`save_derived`, from ``matrix-<store id>-<generation>.<name>.npz``
        beside the vector cache; None when missing or unreadable (no pickles are ever loaded)."""
        import numpy as np

        try:
            with np.load(self._derived_file(name, generation), allow_pickle=False) as npz:
                return {k: npz[k] for k in npz.files}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return None

    def save_derived(self, name: str, generation: int, arrays: dict[str, npt.NDArray[Any]]) -> None:
        """Written atomically beside the vector cache and dropped with it (a newer generation or a wipe)."""
        import numpy as np

        try:
            with atomic_file(self._derived_file(name, generation), durable=False) as fh:
                named: dict[str, Any] = dict(arrays)  # names -> arrays (numpy types **kwargs loosely)
                np.savez(fh, **named)
        except OSError:
            return  # a read-only index dir only costs speed
        self._drop_caches(keep=generation)

    def _derived_file(self, name: str, gen: int) -> Path:
        if not name.isalnum():
            raise ValueError(f"bad cache name {name!r}")
        return self.directory / f"matrix-{self.store_id}-{gen}.{name}.npz"

    def _drop_caches(self, keep: int | None) -> None:
        """Delete caches of other stores, and this store's older than ``keep`` (all when None), but
        for the newest vector cache: past the ANN threshold the re-score reads its rows."""
        ann = self.directory.glob(
            "matrix-*.ann"
        )  # this store's are dropped by the tier itself (index/sqlite/ann.py)
        newest = f"matrix-{self.store_id}-{max(self._cache_gens(2**62), default=-1)}"
        for p in [*self.directory.glob("matrix-*.npy"), *self.directory.glob("matrix-*.npz"), *ann]:
            stem = p.name.split(".")[0]
            _, store_id, gen = (stem.split("-") + ["", ""])[:3]
            ours = store_id == self.store_id and gen.isdigit()
            spared = p.suffix == ".ann" or (stem == newest and p.name.endswith(".npy"))
            if keep is None or not ours or (int(gen) < keep and not spared):
                p.unlink(missing_ok=True)

    def refresh_ann(self, progress: Progress) -> None:
        """Past ``ann_threshold`` chunks, bring the ANN tier's file up to the committed generation
        (build it, or merge the delta into a new one), so searches only map it, and write the vector
        cache file the re-score reads rows from when none is usable after the log is pruned; then
        prune the log."""
        space = self.space
        if self._chunks_now() < self.ann_threshold or space is None or not space.dimensions:
            return
        with self.snapshot() as gen:
            self._ann.refresh(gen, space.dimensions, progress)
            floor = self._log_floor(gen)
            if not any(floor <= g and self._open_vector_file(g) for g in self._cache_gens(gen)):
                self._write_cache(gen, tier=False)
        with self.transaction():
            self._prune_chunk_log()

    def _prune_chunk_log(self) -> None:
        """Inside a transaction: forget the change log up to the ANN tier's newest file."""
        gen = self.generation
        for g, p in self._ann.files().items():
            if g > gen:  # written for generations this store never committed (a restored backup)
                p.unlink(missing_ok=True)
        floor = self._log_floor(gen)
        self._conn.execute("DELETE FROM chunk_log WHERE generation <= ?", (floor,))
        self._set_meta("ann_floor", str(floor))

    def _log_floor(self, gen: int) -> int:
        """The generation the change log is pruned to at ``gen``: the ANN tier's newest file."""
        return max((g for g in self._ann.files() if g <= gen), default=gen)
