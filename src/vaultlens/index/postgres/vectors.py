"""The PostgreSQL store's vectors: pgvector's HNSW index (built once a store outgrows exact scans),
top-k and scores with exact values, neighbours, the matrix streamed into a vector cache file in the
store's folder, and the HNSW recall doctor measures."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultlens.embedding.base import Vectors
from vaultlens.index.postgres.connection import PostgresConnection
from vaultlens.index.postgres.seen import SeenPaths
from vaultlens.index.store import ChunkKeys
from vaultlens.index.vector_file import cached_matrix, write_matrix

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import psycopg

EXACT_BELOW = 100_000  # chunks (search.ann_threshold): exact scans below, as the embedded store's
MAX_EF_SEARCH = 1000  # pgvector's bound
# HNSW's candidate list per result wanted: at 1,000,000 chunks, top-200 then the best 10 re-scored had
# recall@10 0.918 with 2 (ef 400) and 0.972 with 4 (ef 800) for 2 ms more (docs/benchmarks.md)
EF_PER_RESULT = 4
NEIGHBOUR_BATCH = 256  # keys per neighbours query
# HNSW built over this many chunks or more gets a wider candidate list while it links them (pgvector's
# default 64 found 0.811 of the true top 10 at 1,000,000 chunks, 0.994 at 100,000; a build costs
# about linearly more)
WIDE_HNSW_FROM = 500_000
WIDE_EF_CONSTRUCTION = 128


class PostgresVectors(PostgresConnection):
    """Vector reads and the HNSW index of the store (PostgresStore, which sets these)."""

    exact_below: int  # chunks past which top_k and neighbours ask the HNSW index
    _matrix: dict[bool, tuple[int, ChunkKeys, Vectors]]
    _matrix_lock: threading.Lock
    _dims: int | None
    _seen: SeenPaths

    def ensure_ann(self) -> None:
        """Build the HNSW index now, whatever the size (a bulk load builds it once, at the end)."""
        with self.transaction() as db, db.cursor() as cur:
            self._ensure_ann(cur, force=True)

    def _ensure_ann(self, cur: psycopg.Cursor[Any], force: bool = False) -> None:
        """Create the HNSW index once the store outgrows exact scans (its expression names the dimension)."""
        if self._ann_dims(cur) is not None:
            return
        if not force:
            sql = "SELECT COUNT(*) FROM (SELECT 1 FROM chunks LIMIT %s) x"
            size = cur.execute(sql, (self.exact_below + 1,)).fetchone()
            if size is None or int(size[0]) <= self.exact_below:
                return
        row = cur.execute("SELECT vector_dims(vec) FROM vectors LIMIT 1").fetchone()
        if row is None:
            return
        dims = int(row[0])
        size = cur.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM chunks LIMIT %s) x", (WIDE_HNSW_FROM,)
        ).fetchone()
        wide = size is not None and int(size[0]) >= WIDE_HNSW_FROM
        cur.execute(
            f"CREATE INDEX IF NOT EXISTS chunks_vec_hnsw ON chunks USING hnsw ((vec::vector({dims})) vector_cosine_ops)"
            + (f" WITH (ef_construction = {WIDE_EF_CONSTRUCTION})" if wide else "")
        )
        cur.execute(
            "INSERT INTO meta (key, value) VALUES ('ann_dims', %s) ON CONFLICT DO NOTHING", (str(dims),)
        )

    def _ann_dims(self, cur: psycopg.Cursor[Any] | None = None) -> int | None:
        if cur is None:
            if self._dims is not None:  # an index, once built, stays with its store
                return self._dims
            raw = self.get_meta("ann_dims")
            self._dims = None if raw is None else int(raw)
        else:
            row = cur.execute("SELECT value FROM meta WHERE key = 'ann_dims'").fetchone()
            raw = None if row is None else row[0]
        return None if raw is None else int(raw)

    # ---- vectors ----------------------------------------------------------------------------
    def matrix(self, tier: bool = False) -> tuple[ChunkKeys, Vectors]:
        """(chunk keys ascending, vectors) of every chunk, once per generation: streamed into a vector cache
        file in the store's folder and memory-mapped (as the SQLite store's), so a whole-vault scan
        (duplicates) does not hold the matrix; held in memory where the folder cannot be written."""
        with self.snapshot() as gen:
            cached = self._matrix.get(tier)
            if cached is not None and cached[0] == gen:
                return cached[1], cached[2]
            with self._matrix_lock:
                cached = self._matrix.get(tier)
                if cached is not None and cached[0] == gen:
                    return cached[1], cached[2]
                keys, vecs = cached_matrix(
                    self._cache_files(gen, tier),
                    lambda: self._write_cache(gen, tier),
                    lambda: self._read_matrix(tier),
                )
                self._matrix[tier] = (gen, keys, vecs)
                return keys, vecs

    def _matrix_sql(self, tier: bool, vectors: bool = True) -> str:
        """Every chunk's key (and vector) in key order: the chunk's own vector, or its text's tier vector."""
        if tier:
            rows = "FROM chunks c JOIN tier_vectors t ON t.embed_hash = c.embed_hash"
            return f"SELECT c.key{', t.vec' if vectors else ''} {rows} ORDER BY c.key"
        return f"SELECT key{', vec' if vectors else ''} FROM chunks WHERE vec IS NOT NULL ORDER BY key"

    def _vector_blocks(self, tier: bool, size: int = 20_000) -> Iterator[tuple[ChunkKeys, Vectors]]:
        """(keys, vectors) of every chunk in key order, ``size`` rows at a time from a server-side cursor
        in this thread's snapshot (never every row at once)."""
        import numpy as np

        with self._translated("read the index"), self._reader().cursor(name="matrix", binary=True) as cur:
            cur.execute(self._matrix_sql(tier))
            while rows := cur.fetchmany(size):
                keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                yield (
                    keys,
                    np.stack([np.asarray(r[1].to_numpy(), dtype=np.float32) for r in rows]),
                )

    def _read_matrix(self, tier: bool) -> tuple[ChunkKeys, Vectors]:
        import numpy as np

        space = self.tier_space if tier else self.space
        blocks = list(self._vector_blocks(tier))
        if not blocks:
            return np.zeros(0, dtype=np.int64), np.zeros(
                (0, space.dimensions if space else 0), dtype=np.float32
            )
        return np.concatenate([k for k, _ in blocks]), np.concatenate([v for _, v in blocks])

    def _cache_files(self, gen: int, tier: bool) -> tuple[Path, Path]:
        stem = f"matrix-{self.store_id}-{gen}" + ("-tier" if tier else "")
        return self.location / f"{stem}.ids.npy", self.location / f"{stem}.vecs.npy"

    def _write_cache(self, gen: int, tier: bool) -> bool:
        """This snapshot's vectors into the cache files a block at a time; other stores' files and older
        generations' dropped (a reader still on one keeps its mapping). False when the folder cannot be
        written."""
        import numpy as np

        space = self.tier_space if tier else self.space
        if space is None:  # no vectors yet
            return False
        keys = np.fromiter((r[0] for r in self._rows(self._matrix_sql(tier, vectors=False))), np.int64)
        blocks = (v for _, v in self._vector_blocks(tier))
        try:
            write_matrix(*self._cache_files(gen, tier), keys, blocks, space.dimensions)
        except OSError:
            return False
        for p in self.location.glob("matrix-*.npy"):  # another store's, or an older generation's
            _, store_id, older = (p.name.split(".")[0].split("-") + ["", ""])[:3]
            if store_id != self.store_id or (older.isdigit() and int(older) < gen):
                p.unlink(missing_ok=True)
        return True

    def top_k(self, query: Vectors, k: int) -> tuple[ChunkKeys, npt.NDArray[np.float32]]:
        """The ``k`` chunks of highest inner product: HNSW (cosine; vectors are unit) past
        ``exact_below`` chunks, an exact scan below."""
        import numpy as np

        q = np.asarray(query, dtype=np.float32)
        with self.snapshot() as gen:
            n = self._size("chunks")
            dims = self._ann_dims()
            if k <= 0 or n == 0:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            if n <= self.exact_below or dims is None or k >= MAX_EF_SEARCH:
                rows = self._rows(
                    "SELECT key, -(vec <#> %s), path FROM chunks WHERE vec IS NOT NULL ORDER BY vec <#> %s"
                    " LIMIT %s",
                    (q, q, k),
                )
            else:
                self._ef_search(k)
                rows = self._rows(
                    f"SELECT key, -(vec <#> %s), path FROM chunks ORDER BY vec::vector({dims}) <=> %s LIMIT %s",
                    (q, q, k),
                )
            self._seen.add(gen, ((r[0], r[2]) for r in rows))  # the search reads them next
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        return keys, np.fromiter((r[1] for r in rows), dtype=np.float32, count=len(rows))

    def _ann_in_use(self) -> int | None:
        """The HNSW index's dimension when searches use it (past ``exact_below`` chunks), else None."""
        dims = self._ann_dims()
        return dims if dims is not None and self._size("chunks") > self.exact_below else None

    def neighbours(self, keys: ChunkKeys, k: int) -> tuple[ChunkKeys, ChunkKeys] | None:
        """Each key's ``k`` nearest other chunks by the HNSW index, NEIGHBOUR_BATCH keys per query;
        None below ``exact_below`` chunks (the caller compares the vectors itself)."""
        import numpy as np

        with self.snapshot():
            dims = self._ann_in_use()
            if dims is None:
                return None
            self._ef_search(k + 1)
            froms: list[int] = []
            tos: list[int] = []
            ids = keys.tolist()
            for start in range(0, len(ids), NEIGHBOUR_BATCH):
                rows = self._rows(
                    "SELECT q.key, n.key FROM unnest(%s::bigint[]) AS q(key) JOIN chunks c ON c.key = q.key"
                    " CROSS JOIN LATERAL (SELECT d.key FROM chunks d"
                    f" ORDER BY d.vec::vector({dims}) <=> c.vec::vector({dims}) LIMIT %s) n"
                    " WHERE n.key <> q.key AND c.vec IS NOT NULL",
                    (ids[start : start + NEIGHBOUR_BATCH], k + 1),
                )
                froms.extend(r[0] for r in rows)
                tos.extend(r[1] for r in rows)
        return np.asarray(froms, dtype=np.int64), np.asarray(tos, dtype=np.int64)

    def ann_recall(self, queries: int = 200, k: int = 10) -> float | None:
        """Recall@k of the HNSW index against an exact scan, ``queries`` stored vectors as queries."""
        import numpy as np

        with self.snapshot():
            dims = self._ann_in_use()
            if dims is None:
                return None
            sample = self._rows(
                "SELECT vec FROM chunks WHERE vec IS NOT NULL ORDER BY md5(key::text) LIMIT %s",
                (queries,),
                binary=True,
            )
            hits = []
            for (vec,) in sample:
                q = np.asarray(vec.to_numpy(), dtype=np.float32)
                exact = {
                    r[0] for r in self._rows("SELECT key FROM chunks ORDER BY vec <#> %s LIMIT %s", (q, k))
                }
                self._ef_search(k)
                found = self._rows(
                    f"SELECT key FROM chunks ORDER BY vec::vector({dims}) <=> %s LIMIT %s", (q, k)
                )
                hits.append(len(exact & {r[0] for r in found}) / k)
            return float(np.mean(hits)) if hits else None

    def _ef_search(self, k: int) -> None:
        """HNSW's candidate list on this thread's connection: EF_PER_RESULT times ``k`` (pgvector's
        bounds: 40..1000); set for the session, and only when it changes (a statement per search
        less)."""
        ef = max(40, min(MAX_EF_SEARCH, EF_PER_RESULT * k))
        conn = self._reader()
        if getattr(self._local, "ef", None) != (conn, ef):
            self._rows("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))
            self._local.ef = (conn, ef)

    def scores(self, query: Vectors, keys: ChunkKeys) -> npt.NDArray[np.float32]:
        import numpy as np

        out = np.full(keys.shape[0], np.nan, dtype=np.float32)
        if keys.size == 0:
            return out
        q = np.asarray(query, dtype=np.float32)
        rows = self._rows(
            "SELECT key, -(vec <#> %s), path FROM chunks WHERE key = ANY(%s) AND vec IS NOT NULL",
            (q, keys.tolist()),
        )
        self._seen.add(self._frozen(), ((r[0], r[2]) for r in rows))
        found = {int(r[0]): float(r[1]) for r in rows}
        for i, key in enumerate(keys.tolist()):
            if key in found:
                out[i] = found[key]
        return out
