"""The PostgreSQL store: one schema per store, pgvector for vectors (HNSW, cosine), postings for full text.

The same guarantees as the SQLite store, said in PostgreSQL: every batch is one transaction that
first takes the store's advisory transaction lock, so batches of two writers (on any machine)
never interleave and a killed writer leaves the last committed batch; a snapshot is a REPEATABLE
READ, READ ONLY transaction on a per-thread connection, so every read in it sees one committed
generation while writers keep committing. Vectors are kept twice: by embed hash (so an unchanged
or moved chunk costs no embedding) and on the chunk row, where the HNSW index serves ``top_k``
once a store holds more than ``exact_below`` chunks (below, an exact scan answers, as SQLite's).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from vaultlens.chunking.chunker import Chunk
from vaultlens.embedding.base import EmbeddingSpace, Vectors
from vaultlens.index import bm25_top, rows, term_counts
from vaultlens.index.bm25_top import Query
from vaultlens.index.estimate import RebuildEstimate
from vaultlens.index.postgres import fulltext
from vaultlens.index.postgres.connection import connect, register_vectors, translated
from vaultlens.index.postgres.schema import lock_key
from vaultlens.index.postgres.seen import SeenPaths
from vaultlens.index.runs import RunRecord
from vaultlens.index.store import (
    ChunkKeys,
    FileRecord,
    NoteScores,
    NoteText,
    NoteUpdate,
    StoreCounts,
    tier_switch,
)
from vaultlens.index.store_defaults import StoreDefaults
from vaultlens.index.vector_file import cached_matrix, write_matrix
from vaultlens.vault.model import Link

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
SLICE_CHUNKS = 2000  # chunks per insert statement of a batch (apply)


def _columns(alias: str = "") -> str:
    return rows.chunk_columns("key", alias)


# the SQL types of rows.RECORD_COLUMNS, rows.CHUNK_INSERT_COLUMNS and rows.LINK_COLUMNS, in order:
# a batch's rows go to the server as one array per column
_RECORD_TYPES = ["text", "text", "bigint", "bigint", "text", "text", "text", "text", "text", "text", "int",
                 "float8"]  # fmt: skip
_CHUNK_TYPES = ["text", "text", "int", "text", "text", "text", "text", "int", "int", "int", "int", "bool",
                "text"]  # fmt: skip
_LINK_TYPES = ["text", "text", "text", "text", "text", "text", "int"]


def _names(columns: str) -> list[str]:
    return [c.strip() for c in columns.split(",")]


def _arrays(types: list[str]) -> str:
    return ", ".join(f"%s::{t}[]" for t in types)


_RECORD_ARRAYS, _CHUNK_ARRAYS, _LINK_ARRAYS = map(_arrays, (_RECORD_TYPES, _CHUNK_TYPES, _LINK_TYPES))
_FILE_SELECT = ", ".join([*(f"u.{c}" for c in _names(rows.RECORD_COLUMNS)), "u.tsv::tsvector", "u.dl"])
_CHUNK_SELECT = ", ".join(f"u.{c}" for c in _names(rows.CHUNK_INSERT_COLUMNS))


# a snapshot's start and its generation, one round trip (the simple protocol runs both statements)
_BEGIN_SNAPSHOT = (
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT value FROM meta WHERE key = 'generation'"
)
_COUNTED = ("chunks", "files")  # the tables whose terms term_stats counts
# document frequencies (migration 0003) moved by a batch's rows: ``{_COUNT_TERMS} SELECT tbl, term,
# delta ... {_ADD_COUNTS}`` (a term's row stays at 0 when its last holder goes)
_COUNT_TERMS = "INSERT INTO term_stats AS s (tbl, term, df)"
_ADD_COUNTS = "ON CONFLICT (tbl, term) DO UPDATE SET df = s.df + excluded.df"


def _slices(updates: Sequence[NoteUpdate]) -> Iterator[Sequence[NoteUpdate]]:
    """Consecutive runs of whole notes of about SLICE_CHUNKS chunks."""
    start, size = 0, 0
    for i, u in enumerate(updates):
        size += len(u.chunks)
        if size >= SLICE_CHUNKS:
            yield updates[start : i + 1]
            start, size = i + 1, 0
    if start < len(updates):
        yield updates[start:]


def _columnwise(values: list[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Rows of ``width`` values as ``width`` lists (one array parameter per column)."""
    return [list(col) for col in zip(*values, strict=True)] if values else [[] for _ in range(width)]


class PostgresStore(StoreDefaults):
    reads_in_server = True

    def __init__(self, dsn: str, schema: str, location: Path, exact_below: int = EXACT_BELOW) -> None:
        self.dsn = dsn
        self.schema = schema
        self.location = location
        self.exact_below = exact_below
        self._lock_key = lock_key(schema)
        self._local = threading.local()  # .conn: this thread's read connection, .snap: True inside a snapshot
        self._readers: list[psycopg.Connection[Any]] = []
        self._readers_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._writing = 0  # depth of transaction() on this store (nested blocks are savepoints)
        self._conn = self._connect("open the index")
        self._matrix: dict[bool, tuple[int, ChunkKeys, Vectors]] = {}
        self._matrix_lock = threading.Lock()
        self._dims: int | None = None  # the HNSW index's dimension once it exists
        self._stats: dict[tuple[int, str, str], float] = {}  # (generation, what, term) -> df or size
        self._seen = SeenPaths()  # chunk paths the dense and score reads returned (index/postgres/seen.py)
        self.store_id = self.get_meta("store_id") or "0"

    # ---- connections, transactions, snapshots ------------------------------------------------
    def _translated(self, action: str) -> Any:
        return translated(self.dsn, action)

    def _connect(self, action: str) -> psycopg.Connection[Any]:
        conn = connect(self.dsn, self.schema)
        with self._translated(action):
            register_vectors(conn)
        return conn

    def _writer(self) -> psycopg.Connection[Any]:
        """The write connection, replaced when an interrupted write left it mid-command or broken.

        Ctrl-C can land between sending a statement and reading its answer, where psycopg cannot
        cancel it: the connection stays busy and every later statement (the run's own "cancelled"
        record first) fails. Closing it makes the server roll back what it had open.
        """
        from psycopg.pq import TransactionStatus

        if self._conn.closed or self._conn.info.transaction_status != TransactionStatus.IDLE:
            self._conn.close()
            self._conn = self._connect("write the index")
        return self._conn

    def _reader(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = self._connect("read the index")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _rows(self, sql: str, params: Any = None, *, binary: bool = False) -> list[Any]:
        """Every row of a read, on this thread's connection (inside its snapshot when one is open)."""
        conn = self._reader()
        with self._translated("read the index"):
            return conn.execute(sql, params, binary=binary).fetchall()

    def _one(self, sql: str, params: Any = None) -> Any:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """One write transaction under the store's advisory lock: one writer at a time, on any machine."""
        with self._write_lock:
            conn = self._conn if self._writing else self._writer()
            self._writing += 1
            try:
                with self._translated("write the index"), conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    yield conn
            finally:
                self._writing -= 1

    @contextmanager
    def snapshot(self) -> Iterator[int]:
        """Freeze one committed generation for every read in the block (re-entrant per thread).

        The transaction starts and its generation is read in one round trip (a search opens one
        snapshot per thread). A connection that cannot end it (an interrupted read left it
        mid-command, or the server went away) is closed, which ends the transaction on the server
        too, and the next read opens another. A failed transaction undoes the session settings made
        in it (:meth:`_ef_search`), so they are forgotten.
        """
        if getattr(self._local, "snap", False):
            yield self.generation
            return
        from psycopg import Error

        conn = self._reader()
        with self._translated("read the index"):
            cur = conn.execute(_BEGIN_SNAPSHOT)
            cur.nextset()
            gen = int(cur.fetchone()[0])  # type: ignore[index]
        self._local.snap, self._local.gen = True, gen  # frozen: no need to ask again inside
        self._local.counts = None  # read once per snapshot (see counts)
        try:
            yield gen
        except BaseException:
            self._local.ef = None
            raise
        finally:
            self._local.snap = False
            try:
                conn.execute("COMMIT")  # read only: nothing to write, the settings kept
            except Error:
                conn.close()

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self._conn.close()

    # ---- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._one("SELECT value FROM meta WHERE key = %s", (key,))
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._set_meta(key, value)

    def delete_meta(self, key: str) -> None:
        with self.transaction() as db:
            db.execute("DELETE FROM meta WHERE key = %s", (key,))

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def _frozen(self) -> int | None:
        """The generation this thread's snapshot holds; None outside a snapshot (each read its own)."""
        return int(self._local.gen) if getattr(self._local, "snap", False) else None

    @property
    def generation(self) -> int:
        if getattr(self._local, "snap", False):
            return int(self._local.gen)
        return int(self.get_meta("generation") or 0)

    def _bump_generation(self) -> None:
        self._conn.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation'")

    # ---- embedding space and runs ----------------------------------------------------------
    def rebuild_estimate(self, target: EmbeddingSpace) -> RebuildEstimate:
        row = self._one(
            "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM (SELECT MAX(length(text) + length(heading_path)) AS n"
            " FROM chunks GROUP BY embed_hash) x"
        )
        return RebuildEstimate(int(row[0]), int(row[1]), self._embed_rate(), target.provider != "local")

    def _embed_rate(self, runs: int = 10) -> float | None:
        sql = "SELECT stats FROM runs WHERE stats IS NOT NULL ORDER BY id DESC LIMIT %s"
        return rows.embed_rate(raw for (raw,) in self._rows(sql, (runs,)))

    def start_run(self) -> int:
        with self.transaction() as db:
            row = db.execute(
                "INSERT INTO runs (started, status) VALUES (%s, 'running') RETURNING id", (time.time(),)
            ).fetchone()
            return int(row[0]) if row else 0

    def finish_run(self, run_id: int, status: str, stats: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE runs SET finished = %s, status = %s, stats = %s WHERE id = %s",
                (time.time(), status, json.dumps(stats), run_id),
            )

    def last_run(self) -> RunRecord | None:
        return rows.run_record(
            self._one("SELECT started, finished, status, stats FROM runs ORDER BY id DESC LIMIT 1")
        )

    # ---- writes -------------------------------------------------------------------------------
    def apply(
        self,
        updates: Sequence[NoteUpdate] = (),
        vectors: dict[str, npt.NDArray[np.float32]] | None = None,
        deletes: Sequence[str] = (),
        touch: Sequence[FileRecord] = (),
    ) -> None:
        """Apply one batch atomically: new vectors, replaced notes, deleted paths, refreshed stamps.

        One statement per table for each slice of SLICE_CHUNKS chunks (rows sent as arrays and
        unnested): a statement per chunk cost an executor start each and fired statement triggers per
        chunk; a statement for the whole batch left the server idle while the client built it."""
        import numpy as np

        # pipelined: the server inserts one slice of notes while the next one's rows are built here
        with self.transaction() as db, db.pipeline(), db.cursor() as cur:
            if vectors:
                cur.execute(  # the vectors in binary: as text, 1,000 of them took 1.4 s to format and parse
                    "INSERT INTO vectors (embed_hash, vec) SELECT * FROM unnest(%s::text[], %b::vector[])"
                    " ON CONFLICT DO NOTHING",
                    (list(vectors), [np.asarray(v, dtype=np.float32) for v in vectors.values()]),
                )
            gone = [*deletes, *(u.record.path for u in updates)]
            if gone:
                cur.execute("DELETE FROM links WHERE src = ANY(%s)", (gone,))
                for table in ("chunks", "files"):  # each deleted row's terms leave the counts
                    cur.execute(
                        f"WITH gone AS (DELETE FROM {table} WHERE path = ANY(%s) RETURNING tsv)"
                        f" {_COUNT_TERMS} SELECT '{table}', w, -COUNT(*)"
                        f" FROM gone, unnest(tsvector_to_array(gone.tsv)) w GROUP BY w {_ADD_COUNTS}",
                        (gone,),
                    )
            added: dict[str, Counter[str]] = {"chunks": Counter(), "files": Counter()}
            for part in _slices(updates):
                self._insert_notes(cur, part, added)
            for table, counts in added.items():
                if counts:
                    cur.execute(
                        f"{_COUNT_TERMS} SELECT %s, * FROM unnest(%s::text[], %s::bigint[]) {_ADD_COUNTS}",
                        (table, list(counts), list(counts.values())),
                    )
            if touch:
                cur.execute(
                    f"INSERT INTO files ({rows.RECORD_COLUMNS}) SELECT * FROM unnest({_RECORD_ARRAYS})"
                    " ON CONFLICT (path)" + rows.RECORD_UPSERT,
                    _columnwise([rows.record_params(r) for r in touch], len(_RECORD_TYPES)),
                )
            if updates or deletes:
                self._bump_generation()
            if vectors:
                self._ensure_ann(cur)

    def _insert_notes(
        self, cur: psycopg.Cursor[Any], updates: Sequence[NoteUpdate], added: dict[str, Counter[str]]
    ) -> None:
        """The notes' records (with their note-level full text), chunks and links: a statement each,
        rows in the batch's order (chunk keys are assigned as the chunks come); each row's distinct
        terms counted into ``added`` (per table)."""
        files, chunks, links = [], [], []
        in_chunks, in_notes = term_counts.added(updates)
        added["chunks"].update(in_chunks)
        added["files"].update(in_notes)
        for u in updates:
            tsv, dl = (
                fulltext.tsvector_literal(" ".join(item.terms for item in u.chunks))
                if u.chunks
                else (None, None)
            )
            files.append((*rows.record_params(u.record), tsv, dl))
            for item in u.chunks:
                chunks.append((*rows.chunk_params(item), *fulltext.tsvector_literal(item.terms)))
            links.extend(rows.link_params(u.record.path, u.links))
        cur.execute(
            f"INSERT INTO files ({rows.RECORD_COLUMNS}, tsv, dl)"
            f" SELECT {_FILE_SELECT} FROM unnest({_RECORD_ARRAYS}, %s::text[], %s::int[])"
            f" AS u({rows.RECORD_COLUMNS}, tsv, dl)",
            _columnwise(files, len(_RECORD_TYPES) + 2),
        )
        if chunks:
            cur.execute(
                f"INSERT INTO chunks ({rows.CHUNK_INSERT_COLUMNS}, tsv, dl, vec)"
                f" SELECT {_CHUNK_SELECT}, u.tsv::tsvector, u.dl,"
                # a lookup per row: a join would plan a scan of every stored vector per batch
                " (SELECT vec FROM vectors v WHERE v.embed_hash = u.embed_hash)"
                f" FROM unnest({_CHUNK_ARRAYS}, %s::text[], %s::int[]) WITH ORDINALITY"
                f" AS u({rows.CHUNK_INSERT_COLUMNS}, tsv, dl, ord) ORDER BY u.ord",
                _columnwise(chunks, len(_CHUNK_TYPES) + 2),
            )
        if links:
            cur.execute(
                f"INSERT INTO links ({rows.LINK_COLUMNS}) SELECT {rows.LINK_COLUMNS}"
                f" FROM unnest({_LINK_ARRAYS}) WITH ORDINALITY AS u({rows.LINK_COLUMNS}, ord) ORDER BY ord",
                _columnwise(links, len(_LINK_TYPES)),
            )

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

    def drop_orphan_vectors(self) -> int:
        with self.transaction() as db:
            db.execute(
                "DELETE FROM tier_vectors t WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = t.embed_hash)"
            )
            cur = db.execute(
                "DELETE FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = v.embed_hash)"
            )
            return cur.rowcount

    def clear(self) -> None:
        """Remove every indexed note and vector but keep the schema, so a cleared index stays cleared."""
        with self.transaction() as db:
            db.execute(
                "TRUNCATE chunks, vectors, tier_vectors, links, files, term_stats, counters,"
                " chunks_postings, files_postings"
            )
            db.execute("DELETE FROM meta WHERE key IN ('space', 'tier_space')")
            self._set_meta("cleared_at", str(time.time()))
            self._bump_generation()

    def dismiss_pair(self, a: str, b: str) -> None:
        a, b = sorted((a, b))
        hashes = dict(self._rows("SELECT path, file_hash FROM files WHERE path = ANY(%s)", ([a, b],)))
        with self.transaction() as db:
            db.execute(
                "INSERT INTO dismissed_pairs (a, b, hash_a, hash_b, dismissed_at) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (a, b) DO UPDATE SET hash_a = excluded.hash_a, hash_b = excluded.hash_b,"
                " dismissed_at = excluded.dismissed_at",
                (a, b, hashes.get(a), hashes.get(b), time.time()),
            )

    # ---- the quality tier ---------------------------------------------------------------------
    def tier_missing(self, limit: int) -> list[tuple[str, str, Chunk]]:
        found = self._rows(
            f"SELECT DISTINCT ON (c.embed_hash) c.embed_hash, f.title, {_columns('c')} FROM chunks c"
            " JOIN files f ON f.path = c.path"
            " WHERE NOT EXISTS (SELECT 1 FROM tier_vectors t WHERE t.embed_hash = c.embed_hash)"
            " ORDER BY c.embed_hash, c.key",
        )
        found.sort(key=lambda r: int(r[2]))
        return [(r[0], r[1] or "", rows.chunk(r[2:])) for r in found[:limit]]

    def add_tier_vectors(self, space: EmbeddingSpace, vectors: dict[str, Vectors]) -> None:
        import numpy as np

        with self.transaction() as db, db.cursor() as cur:
            drop, record = tier_switch(self.tier_space, space)
            if drop:
                cur.execute("DELETE FROM tier_vectors")
            if record:
                self._set_meta("tier_space", space.to_json())
            cur.executemany(
                "INSERT INTO tier_vectors (embed_hash, vec) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [(h, np.asarray(v, dtype=np.float32)) for h, v in vectors.items()],
            )
            self._bump_generation()

    def drop_tier(self) -> None:
        with self.transaction() as db:
            for sql in rows.DROP_TIER:
                db.execute(sql)
            self._bump_generation()

    def tier_coverage(self) -> tuple[int, int]:
        row = self._one(rows.TIER_COVERAGE)
        return int(row[1]), int(row[0])

    # ---- catalog reads ------------------------------------------------------------------------
    def file_records(self) -> dict[str, FileRecord]:
        return {r[0]: rows.record(r) for r in self._rows(f"SELECT {rows.FILE_COLUMNS} FROM files")}

    def known_embed_hashes(self, hashes: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(hashes))
        return {
            r[0] for r in self._rows("SELECT embed_hash FROM vectors WHERE embed_hash = ANY(%s)", (wanted,))
        }

    def chunk_keys(self, path: str) -> set[tuple[str, str]]:
        return {
            (r[0], r[1]) for r in self._rows("SELECT id, content_hash FROM chunks WHERE path = %s", (path,))
        }

    def chunks(self, keys: Iterable[int]) -> dict[int, Chunk]:
        found = self._rows(f"SELECT {_columns()} FROM chunks WHERE key = ANY(%s)", ([int(k) for k in keys],))
        return {int(r[0]): rows.chunk(r) for r in found}

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        row = self._one(f"SELECT {_columns()} FROM chunks WHERE id = %s", (chunk_id,))
        return None if row is None else rows.chunk(row)

    def chunk_paths(self, keys: Iterable[int]) -> dict[int, str]:
        found, missing = self._seen.split(self._frozen(), (int(k) for k in keys))
        if missing:
            found.update(self._rows("SELECT key, path FROM chunks WHERE key = ANY(%s)", (missing,)))
        return found

    def note_chunk_keys(self, paths: Iterable[str]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for key, path in self._rows(
            "SELECT key, path FROM chunks WHERE path = ANY(%s) ORDER BY key", (list(paths),)
        ):
            out.setdefault(path, []).append(int(key))
        return out

    def note_chunk_scores(
        self, query: Vectors, paths: Iterable[str]
    ) -> tuple[dict[str, list[int]], npt.NDArray[np.float32]]:
        """The keys and scores in one statement (rows grouped by note, keys in order in each)."""
        import numpy as np

        groups: dict[str, list[int]] = {}
        found = self._rows(
            "SELECT path, key, -(vec <#> %s) FROM chunks WHERE path = ANY(%s) ORDER BY path, key",
            (np.asarray(query, dtype=np.float32), list(paths)),
        )
        for path, key, _ in found:
            groups.setdefault(path, []).append(int(key))
        scores = np.fromiter((np.nan if s is None else s for _, _, s in found), np.float32, len(found))
        return groups, scores

    def chunk_layout(self) -> tuple[ChunkKeys, list[str], npt.NDArray[np.bool_]]:
        import numpy as np

        data = self._rows("SELECT key, path, frontmatter FROM chunks ORDER BY key")
        keys = np.fromiter((r[0] for r in data), dtype=np.int64, count=len(data))
        frontmatter = np.fromiter((bool(r[2]) for r in data), dtype=np.bool_, count=len(data))
        return keys, [r[1] for r in data], frontmatter

    def note_texts(self) -> Iterator[NoteText]:
        yield from rows.note_texts(
            self._rows("SELECT path, text, frontmatter FROM chunks ORDER BY path, ordinal")
        )

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        return dict(self._rows("SELECT path, title FROM files WHERE path = ANY(%s)", (list(paths),)))

    def links(self, paths: Iterable[str] | None = None) -> dict[str, list[Link]]:
        cols = rows.LINK_COLUMNS
        if paths is None:
            return rows.links_by_src(self._rows(f"SELECT {cols} FROM links ORDER BY src, line, n"))
        return rows.links_by_src(
            self._rows(f"SELECT {cols} FROM links WHERE src = ANY(%s) ORDER BY src, line, n", (list(paths),))
        )

    def dismissed_pairs(self) -> set[tuple[str, str]]:
        rows = self._rows(
            "SELECT d.a, d.b FROM dismissed_pairs d JOIN files fa ON fa.path = d.a JOIN files fb ON fb.path = d.b"
            " WHERE fa.file_hash IS NOT DISTINCT FROM d.hash_a AND fb.file_hash IS NOT DISTINCT FROM d.hash_b"
        )
        return {(r[0], r[1]) for r in rows}

    def counts(self) -> StoreCounts:
        """From the counters the store's triggers keep (migration 0004; doctor compares them with the
        rows); read once in a snapshot, whose every read of them would give the same."""
        in_snapshot = getattr(self._local, "snap", False)
        if in_snapshot and self._local.counts is not None:
            return cast(StoreCounts, self._local.counts)
        counts = rows.store_counts(self._rows("SELECT name, n FROM counters"))
        if in_snapshot:
            self._local.counts = counts
        return counts

    def _counted(self) -> StoreCounts:
        return rows.counted(self._rows)

    def size_bytes(self) -> int:
        row = self._one(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (self.schema,),
        )
        return int(row[0])

    def unused_vectors(self) -> int:
        row = self._one(
            "SELECT COUNT(*) FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = v.embed_hash)"
        )
        return int(row[0])

    def problems(self) -> list[str]:
        checks = {
            "chunks without a vector": "SELECT COUNT(*) FROM chunks WHERE vec IS NULL",
            "chunks whose vector differs from the stored one": "SELECT COUNT(*) FROM chunks c JOIN vectors v"
            " ON v.embed_hash = c.embed_hash WHERE c.vec IS DISTINCT FROM v.vec",
            "notes with chunks but no note-level full text": "SELECT COUNT(*) FROM files WHERE n_chunks > 0"
            " AND status = 'indexed' AND tsv IS NULL",
            **rows.SHARED_CHECKS,
        }
        found = []
        for label, sql in checks.items():
            n = self._one(sql)[0]
            if n:
                found.append(f"{n} {label}")
        if self.counts() != self._counted():
            found.append(f"the kept counts {self.counts()} differ from the rows {self._counted()}")
        for table in ("chunks", "files"):
            kept = (self._size(table), self._counter(f"dl:{table}"))
            truth = self._one(f"SELECT COUNT(*), COALESCE(SUM(dl), 0) FROM {table} WHERE tsv IS NOT NULL")
            if kept != (int(truth[0]), int(truth[1])):
                found.append(
                    f"the kept full-text size of {table} {kept} differs from the rows {tuple(truth)}"
                )
            posted = self._one(f"SELECT COUNT(*) FROM {table}_postings")[0]
            terms = self._one(f"SELECT COALESCE(SUM(length(tsv)), 0) FROM {table}")[0]
            if posted != terms:
                found.append(f"the full-text postings of {table} ({posted}) differ from its terms ({terms})")
            kept_df = f"SELECT term, df FROM term_stats WHERE tbl = '{table}' AND df <> 0"
            true_df = f"SELECT word, ndoc FROM ts_stat('SELECT tsv FROM {table} WHERE tsv IS NOT NULL')"
            miscounted = self._one(
                f"SELECT COUNT(DISTINCT term) FROM (({kept_df} EXCEPT {true_df})"
                f" UNION ALL ({true_df} EXCEPT {kept_df})) x"
            )[0]
            if miscounted:
                found.append(f"{miscounted} kept term counts of {table} differ from its full-text index")
        for table, space, label in (
            ("vectors", self.space, "vectors"),
            ("tier_vectors", self.tier_space, "quality-tier vectors"),
        ):
            if space is not None and space.dimensions:
                bad = self._one(
                    f"SELECT COUNT(*) FROM {table} WHERE vector_dims(vec) != %s", (space.dimensions,)
                )[0]
                if bad:
                    found.append(f"{bad} {label} with the wrong dimension")
        return found

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

    # ---- full text ----------------------------------------------------------------------------
    def lexical_chunks(self, terms: Sequence[str], limit: int) -> dict[int, float]:
        """BM25 of chunks as FTS5 computes it, divided by the query's idf mass (see
        :mod:`vaultlens.index.postgres.fulltext`); terms in more than half the chunks are left out of
        the match, the rarest kept, and past bm25_top.PRUNE_FROM_ROWS matching rows the rows holding
        only common terms are not scored (bm25_top.best_rows), as in the SQLite store."""
        with self.snapshot():
            q = self._weigh(terms)
            if q is None:
                return {}
            run = self._bm25_rows("chunks", "key", q.held)
            best = bm25_top.top(run, q.held, limit, q.plain)
            return {int(k): float(v) / q.mass for k, v in best}

    def lexical_notes(self, terms: Sequence[str], limit: int) -> NoteScores:
        """BM25 of whole notes over the terms some chunk holds, divided by the same mass (the terms in
        more than half the notes left out of the match the same way)."""
        with self.snapshot():
            q = self._weigh(terms)
            if q is None:
                return NoteScores()
            n_notes = self._size("files")
            note_dfs = self._doc_freqs("files", list(q.held))
            note_idf = bm25_top.note_weights(n_notes, note_dfs)
            run = self._bm25_rows("files", "path", note_idf)
            top = bm25_top.top(run, note_idf, limit, q.plain)
            return NoteScores([str(p) for p, _ in top], [float(v) / q.mass for _, v in top])

    def _weigh(self, terms: Sequence[str]) -> bm25_top.Weighed | None:
        return bm25_top.weigh(self._size("chunks"), self._doc_freqs("chunks", list(dict.fromkeys(terms))))

    def _bm25_rows(self, table: str, key: str, idf: dict[str, float]) -> Query:
        """bm25_top's query over ``table``: the best (key, BM25) rows holding a term of ``match``, each
        scored over ``match`` and ``also`` (one query: the score's terms need not be the match's)."""

        def run(match: list[str], also: list[str], limit: int) -> list[tuple[Any, float]]:
            df = self._doc_freqs(table, match + also) if also else {}
            joined, probe = fulltext.probed(also, sum(df.get(t, 0) for t in match), df, limit)
            return [
                (k, float(v))
                for k, v in self._rows(
                    fulltext.bm25_sql(table, key, bool(joined), bool(probe)),
                    {
                        "match": match,
                        "match_idf": [idf[t] for t in match],
                        "also": joined,
                        "also_idf": [idf[t] for t in joined],
                        "probe": probe,
                        "probe_idf": [idf[t] for t in probe],
                        "avgdl": self._avgdl(table),
                        "limit": limit,
                        "bound": (bm25_top.K1 + 1) * sum(idf[t] for t in also),
                    },
                )  # fmt: skip
            ]

        return run

    def _doc_freqs(self, table: str, terms: list[str]) -> dict[str, int]:
        """Rows of ``table`` (``chunks`` or note-level ``files``) holding each term, capped just over
        half of them (past it FTS5's idf is floored, whatever the count): the counts `apply` keeps
        (migration 0003). The terms not cached for this generation are read in one statement for
        both tables: a search weighs its terms over the chunks, then over the notes."""
        gen = self.generation
        known = {t: self._stats.get((gen, "df:" + table, t)) for t in terms}
        missing = [t for t, df in known.items() if df is None]
        if missing:
            counted = dict.fromkeys(((tbl, t) for tbl in _COUNTED for t in missing), 0)
            for tbl, term, df in self._rows(
                "SELECT tbl, term, df FROM term_stats WHERE tbl = ANY(%s) AND term = ANY(%s)",
                (list(_COUNTED), missing),
            ):
                counted[(tbl, term)] = df
            self._trim_stats()
            for (tbl, t), df in counted.items():
                self._stats[(gen, "df:" + tbl, t)] = float(min(df, self._size(tbl) // 2 + 1))
            known.update((t, self._stats[(gen, "df:" + table, t)]) for t in missing)
        return {t: int(df or 0) for t, df in known.items()}

    def _size(self, table: str) -> int:
        """Rows of ``table`` with full text (the counters the triggers keep)."""
        return self._counter(f"fts:{table}")

    def _avgdl(self, table: str) -> float:
        return max(self._counter(f"dl:{table}") / max(self._size(table), 1), 1e-9)

    def _counter(self, name: str) -> int:
        return int(
            self._cached("counter", name, "SELECT COALESCE(MAX(n), 0) FROM counters WHERE name = %s", (name,))
        )

    def _cached(self, what: str, key: str, sql: str, params: Any = None) -> float:
        gen = self.generation
        value = self._stats.get((gen, what, key))
        if value is None:
            value = float(self._one(sql, params)[0])
            self._trim_stats()
            self._stats[(gen, what, key)] = value
        return value

    def _trim_stats(self) -> None:
        if len(self._stats) > 100_000:
            self._stats.clear()
