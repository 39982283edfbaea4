"""The embedded store: one SQLite file (WAL) holding notes, chunks, FTS5 terms and vectors.

SQLite is the source of truth and every batch is one transaction, so a killed process
leaves the last committed batch and nothing half-written. Vectors are float32 blobs keyed by
the hash of the text that was embedded, so moved or unchanged chunks never cost an
embedding. For fast scans the vector matrix is mirrored in a ``.npy`` cache stamped with the
store's generation; a stale or missing cache is rebuilt from SQLite, never trusted. Arrays
callers derive from one generation (the text scan of `similar` / `duplicates`) are kept beside
it the same way (:meth:`SQLiteStore.save_derived`), and dropped with it.

Readers work inside :meth:`SQLiteStore.snapshot`: one read transaction on a per-thread
connection, so WAL pins a single committed generation for every read (matrix, FTS, chunk
rows) while writers keep committing on the main connection without waiting for them.
"""

from __future__ import annotations

import heapq
import json
import os
import sqlite3
import threading
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultlens.chunking.chunker import Chunk
from vaultlens.config.settings import SearchSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors
from vaultlens.errors import IndexNotFound, StoreError, translate_error
from vaultlens.fsutil import atomic_file
from vaultlens.index import bm25_top, rows, term_counts
from vaultlens.index.bm25_top import K1, B, Query
from vaultlens.index.estimate import RebuildEstimate
from vaultlens.index.runs import RunRecord
from vaultlens.index.sqlite import fts_tokens
from vaultlens.index.sqlite.ann import AnnKeeper, AnnTier
from vaultlens.index.sqlite.threads import free_threads
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
from vaultlens.index.vector_file import VectorFile, cached_matrix, write_matrix
from vaultlens.vault.model import Link

if TYPE_CHECKING:  # numpy loads in the methods that handle vectors: status and note lists skip it
    import numpy as np
    import numpy.typing as npt

    from vaultlens.index.progress import Progress

SCHEMA_VERSION = 8
DB_NAME = "index.sqlite"
NEIGHBOUR_BATCH = 4096  # keys per ANN batch search in neighbours()
ANN_CANDIDATES = 200  # the fewest ANN candidates re-scored exactly (recall@10 >= 0.95: bench/ann_scale.py)
# vectors read from SQLite kept per generation (2 KB each at 512 dimensions): a search past the ANN
# threshold reads its candidates' vectors up to three times (re-score, fusion, note penalties)
VECTOR_CACHE = 4096
PROBE_HEAD = 2000  # rows a pruned FTS5 query's probe fetches, so the pruned query rarely scores them again

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, kind TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    file_hash TEXT, status TEXT NOT NULL, reason TEXT, title TEXT, aliases TEXT, tags TEXT,
    n_chunks INTEGER NOT NULL DEFAULT 0, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL, ordinal INTEGER NOT NULL,
    heading_path TEXT NOT NULL, text TEXT NOT NULL, content_hash TEXT NOT NULL, embed_hash TEXT NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_by_embed ON chunks(embed_hash);
CREATE TABLE IF NOT EXISTS vectors (embed_hash TEXT PRIMARY KEY, vec BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(terms, tokenize='unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS links (
    src TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL, heading TEXT, block TEXT,
    display TEXT, line INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS links_by_src ON links(src);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL, stats TEXT);
"""

# a path's rows, removed before it is written again or when it is gone (a batch: SQLiteStore.apply)
_DELETE_PATH = (
    "DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE path = ?)",
    "DELETE FROM chunks WHERE path = ?",
    "DELETE FROM links WHERE src = ?",
    "DELETE FROM notes_fts WHERE rowid IN (SELECT rowid FROM files WHERE path = ?)",
    "DELETE FROM files WHERE path = ?",
)
# an upsert keeps the row's rowid, which notes_fts uses as its key
_PUT_RECORD = (
    f"INSERT INTO files({rows.RECORD_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(path)"
    + rows.RECORD_UPSERT
)

_FILE_KEY = "'files:'||{row}.status||':'||{row}.kind"  # a counter per file status and kind
_FTS_OWNER = {"chunks_fts": "chunks", "notes_fts": "files"}  # the full-text tables and whose rowids key them

# Append-only: MIGRATIONS[n] brings a schema at version n to n + 1.
MIGRATIONS: dict[int, str] = {
    1: """CREATE TABLE IF NOT EXISTS dismissed_pairs (
        a TEXT NOT NULL, b TEXT NOT NULL, hash_a TEXT, hash_b TEXT, dismissed_at REAL NOT NULL,
        PRIMARY KEY (a, b));""",
    # note-level full text (rowid = files.rowid): BM25 of a whole note in one FTS5 query
    2: """CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(terms, tokenize='unicode61 remove_diacritics 2');
        INSERT INTO notes_fts(rowid, terms)
            SELECT f.rowid, group_concat(x.terms, ' ') FROM files f JOIN (
                SELECT c.path AS path, t.terms AS terms FROM chunks c JOIN chunks_fts t ON t.rowid = c.rowid
                ORDER BY c.path, c.ordinal) x ON x.path = f.path
            GROUP BY f.rowid;""",
    # front matter is a flag, not a heading named "front matter"; a store id names the vector cache
    3: """ALTER TABLE chunks ADD COLUMN frontmatter INTEGER NOT NULL DEFAULT 0;
        UPDATE chunks SET frontmatter = 1 WHERE ordinal = 0 AND heading_path = '["front matter"]';
        INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', lower(hex(randomblob(8))));""",
    # a split part's context is stored (a tier vector is embedded later, from the store alone); the
    # optional quality tier's vectors, keyed like the main ones by the embedded text's hash
    # (the chunker signature is forgotten, so the next run re-chunks every note and stores the
    # contexts; embed texts are unchanged, so nothing is embedded again)
    4: """ALTER TABLE chunks ADD COLUMN context TEXT NOT NULL DEFAULT '';
        CREATE TABLE IF NOT EXISTS tier_vectors (embed_hash TEXT PRIMARY KEY, vec BLOB NOT NULL);
        DELETE FROM meta WHERE key = 'chunker';""",
    # the chunks each generation added or removed, so the ANN tier catches up a note at a time
    5: """CREATE TABLE IF NOT EXISTS chunk_log (generation INTEGER NOT NULL, key INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS chunk_log_by_generation ON chunk_log(generation);""",
    # the counts `status` shows, kept by triggers (status answers from them, not by counting rows)
    6: """CREATE INDEX IF NOT EXISTS files_with_reason ON files(path) WHERE reason IS NOT NULL;
        CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
        INSERT OR REPLACE INTO counters SELECT 'chunks', COUNT(*) FROM chunks;
        INSERT OR REPLACE INTO counters SELECT 'vectors', COUNT(*) FROM vectors;
        INSERT OR REPLACE INTO counters SELECT 'files:' || status || ':' || kind, COUNT(*) FROM files
            GROUP BY status, kind;"""
    # terse: the schema's text must stay on SQLite's first page (tests/test_store.py damages the rest)
    + "".join(
        f"CREATE TRIGGER IF NOT EXISTS n_{table}_{event[0]} AFTER {event} ON {table} BEGIN "
        + "".join(
            f"INSERT INTO counters VALUES({key},{d})ON CONFLICT DO UPDATE SET n=n+{d};" for key, d in rows
        )
        + "END;"
        for table, event, rows in (
            ("chunks", "INSERT", [("'chunks'", 1)]),
            ("chunks", "DELETE", [("'chunks'", -1)]),
            ("vectors", "INSERT", [("'vectors'", 1)]),
            ("vectors", "DELETE", [("'vectors'", -1)]),
            ("files", "INSERT", [(_FILE_KEY.format(row="new"), 1)]),
            ("files", "DELETE", [(_FILE_KEY.format(row="old"), -1)]),
            ("files", "UPDATE", [(_FILE_KEY.format(row="old"), -1), (_FILE_KEY.format(row="new"), 1)]),
        )
    ),
    # each full-text token's rows (index/term_counts.py), kept by apply; filled from FTS5's own vocabulary
    7: """CREATE TABLE IF NOT EXISTS term_stats(tbl TEXT,term TEXT,df INT,PRIMARY KEY(tbl,term))WITHOUT ROWID;
        DELETE FROM term_stats;
        CREATE VIRTUAL TABLE temp.chunk_vocab USING fts5vocab(main, chunks_fts, row);
        CREATE VIRTUAL TABLE temp.note_vocab USING fts5vocab(main, notes_fts, row);
        INSERT INTO term_stats SELECT 'chunks_fts', term, doc FROM temp.chunk_vocab;
        INSERT INTO term_stats SELECT 'notes_fts', term, doc FROM temp.note_vocab;
        DROP TABLE temp.chunk_vocab;
        DROP TABLE temp.note_vocab;""",
}


def _any_of(terms: list[str]) -> str:
    """The FTS5 expression for rows holding any of ``terms`` (each quoted, so read as a word)."""
    return " OR ".join(f'"{t}"' for t in terms)


def _varints(blob: bytes) -> list[int]:
    """SQLite's big-endian varints (7 bits a byte, the 9th byte whole), as FTS5 writes its sizes."""
    out, value, used = [], 0, 0
    for byte in blob:
        used += 1
        if used == 9:
            out.append((value << 8) | byte)
            value, used = 0, 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            out.append((value << 7) | byte)
            value, used = 0, 0
    return out


def fts5_size(execute: Callable[[str, tuple[Any, ...]], list[Any]], table: str) -> tuple[int, int]:
    """(rows, tokens) of the single-column FTS5 ``table``, from FTS5's own averages record."""
    found = execute(f"SELECT block FROM {table}_data WHERE id = 1", ())
    sizes = _varints(found[0][0]) if found else []
    return (sizes[0], sizes[1]) if len(sizes) >= 2 else (0, 0)


def fts5_query(
    execute: Callable[[str, tuple[Any, ...]], list[Any]], table: str, idf: Mapping[str, float]
) -> Query:
    """bm25_top's query over the FTS5 ``table`` (single column): the best rows of ``match`` as
    (rowid, -bm25()), each scored with the terms of ``also`` (``idf``: theirs) too; FTS5 syntax
    errors become a StoreError.

    FTS5's bm25() counts every row of every term of its expression once per query (its idf), so the
    common ``also`` terms cannot be in it without costing what pruning saves. The rows of ``match``
    come best first by their score over ``match``; each then gets the common terms' shares computed
    here as bm25() computes them (its k1 and b, the row's token count and the mean from FTS5's own
    size records, the term counted in the row's stored terms), until no row left can reach the
    ``limit``-th best even with every common term at its bound. The counting is by exact term: a
    stored word that only FTS5's diacritic folding would equate with the query's is not counted.
    A call over only some of ``idf``'s terms and none ``also`` is bm25_top's probe, and its terms are
    often the pruned call's ``match``: it fetches PROBE_HEAD rows, and the pruned call scores those
    first; when no row past them can reach the best ``limit``, FTS5 does not score the rows of
    ``match`` a second time (~4 ms at 1,000,000 chunks).
    """
    heads: dict[str, tuple[int, list[tuple[Any, float]]]] = {}  # expression -> (limit, its best rows)

    def best(expression: str, limit: int | None) -> list[tuple[Any, float]]:
        # one row, as SQLiteStore._pairs_in reads; 21 digits give each double back exactly (measured:
        # 0 of 900,000 differed; 15 or 17 did not)
        sql = (
            f"SELECT group_concat(r), group_concat(printf('%!.20e', s)) FROM (SELECT rowid AS r,"
            f" -bm25({table}) AS s FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table})"
        )
        try:
            ((keys, scores),) = (
                execute(sql + " LIMIT ?)", (expression, limit))
                if limit is not None
                else execute(sql + ")", (expression,))
            )
        except sqlite3.OperationalError as exc:
            raise StoreError(f"Full-text query failed: {exc}") from None
        found = (
            list(zip(map(int, keys.split(",")), map(float, scores.split(",")), strict=True)) if keys else []
        )
        if limit is not None:
            heads[expression] = (limit, found)
        return found

    def run(match: list[str], also: list[str], limit: int) -> list[tuple[Any, float]]:
        if not match:
            return []
        if not also:
            probe = len(match) < len(idf)
            return best(_any_of(match), max(limit, PROBE_HEAD) if probe else limit)[:limit]
        rows_n, tokens = fts5_size(execute, table)
        avgdl = tokens / max(rows_n, 1)
        reach = sum(idf[t] for t in also) * (K1 + 1)
        common = set(also)
        # which rows hold a common term at all: FTS5 finds them fast while no bm25() asks for counts
        sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
        holding = {r for (r,) in execute(sql, (f"({_any_of(match)}) AND ({_any_of(also)})",))}

        def with_common(ranked: list[tuple[Any, float]]) -> tuple[list[tuple[Any, float]], bool]:
            """The best ``limit`` of ``ranked`` (rows of match, best first) with the common terms' shares
            added, and whether it stopped before a row that could not enter them any more."""
            top: list[tuple[float, Any]] = []  # a min-heap of the best full scores
            for start in range(0, len(ranked), 256):
                part = ranked[start : start + 256]
                if len(top) >= limit and part[0][1] + reach < top[0][0]:
                    return [(key, full) for full, key in sorted(top, key=lambda fk: -fk[0])], True
                keys = tuple(r for r, _ in part if r in holding)
                marks = ",".join("?" * len(keys))
                texts = (
                    dict(execute(f"SELECT rowid, terms FROM {table} WHERE rowid IN ({marks})", keys))
                    if keys
                    else {}
                )
                sizes = (
                    dict(execute(f"SELECT id, sz FROM {table}_docsize WHERE id IN ({marks})", keys))
                    if keys
                    else {}
                )
                for key, score in part:
                    full = score
                    if key in texts:
                        counts = Counter(w for w in str(texts[key]).split() if w in common)
                        norm = K1 * (1 - B + B * _varints(sizes.get(key, b"\x00"))[0] / avgdl)
                        full += sum(idf[t] * n * (K1 + 1) / (n + norm) for t, n in counts.items())
                    if len(top) < limit:
                        heapq.heappush(top, (full, key))
                    elif full > top[0][0]:
                        heapq.heapreplace(top, (full, key))
            return [(key, full) for full, key in sorted(top, key=lambda fk: -fk[0])], False

        expression = _any_of(match)
        head_limit, head = heads.get(expression, (0, []))
        if head_limit and len(head) == head_limit:  # the head holds not every row of match
            found, stopped = with_common(head)
            # a row past the head scores at most the head's last over match
            if stopped or (len(found) >= limit and head[-1][1] + reach < found[-1][1]):
                return found
        return with_common(head if len(head) < head_limit else best(expression, None))[0]

    return run


class SQLiteStore(StoreDefaults):
    def __init__(
        self, directory: Path, create: bool = True, ann_threshold: int = SearchSettings.ann_threshold
    ) -> None:
        self.directory = directory
        self.ann_threshold = ann_threshold  # chunks from which top_k asks the ANN tier (index/sqlite/ann.py)
        if create:
            directory.mkdir(parents=True, exist_ok=True)
        elif not (directory / DB_NAME).is_file():
            raise IndexNotFound(
                f"There is no index in {directory}.", hint="Run `vaultlens index` to build it."
            )
        self.path = directory / DB_NAME
        free_threads()  # before this process's first connection
        self._local = threading.local()  # .snap: this thread's open snapshot connection
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        try:
            self._conn = self._connect(create)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            version = self.get_meta("schema_version")
            if version is not None and int(version) > SCHEMA_VERSION:
                raise StoreError(
                    f"The index at {directory} was written by a newer vaultlens (schema {version}).",
                    hint="Upgrade vaultlens, or run `vaultlens rebuild` to start over.",
                )
            if version is None:
                self._conn.executescript(_SCHEMA)  # idempotent; executescript commits on its own
                with self.transaction():
                    self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', '1')")
                    self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
            self._migrate()
        except sqlite3.Error as exc:  # damaged (rebuild), read-only, locked: each said as what it is
            raise translate_error(exc, "open the index", self.path) from exc
        # per vector table (main, tier): (generation, rowids, vectors)
        self._matrix: dict[bool, tuple[int, npt.NDArray[np.int64], Vectors]] = {}
        # one thread builds the matrix of a new generation; the others wait and take it (a server's
        # 40 worker threads each reading 20 MB of vectors after every commit held ~1 GB at once)
        self._matrix_lock = threading.Lock()
        self._chunk_count: tuple[int, int] | None = None  # (generation, chunks)
        self._df_cache: dict[tuple[int, str, str], int] = {}  # (generation, table, term) -> rows holding it
        self._vec_cache: dict[tuple[int, int], bytes] = {}  # (generation, chunk rowid) -> its float32 vector
        # (snapshot generation, the generation the vector cache file rows are read from was written at,
        # that file, the keys changed since): a newer snapshot keeps the file open and adds only the
        # keys its new generations changed (opening checks every key, 8 MB at 1,000,000 chunks, and
        # the changed keys were 20,000 after 1,000 edits: 25 ms that every commit made a search redo)
        self._vec_file: tuple[int, int, VectorFile, ChunkKeys] | None = None
        self.store_id = self.get_meta("store_id") or "0"
        self._ann = AnnKeeper(self)

    def _migrate(self) -> None:
        version = int(self.get_meta("schema_version") or 1)
        while version < SCHEMA_VERSION:
            with self.transaction() as db:
                if int(self.get_meta("schema_version") or 1) == version:  # another process may have won
                    statement = ""
                    for piece in MIGRATIONS[version].split(";"):  # a trigger's body holds ";" too
                        statement += piece + ";"
                        if sqlite3.complete_statement(statement):
                            if statement.strip(" \n;"):
                                db.execute(statement)
                            statement = ""
                    self._set_meta("schema_version", str(version + 1))
            version = int(self.get_meta("schema_version") or 1)

    def _create_file(self) -> None:
        """A new store's file appears whole: WAL mode and the base schema are set on a temporary file,
        which is then linked into place (never over a file another opener made meanwhile). A reader
        that opened a file still in rollback mode held a lock that kept its creator from switching it
        to WAL: a search racing a foreground rebuild failed it with "database is locked"."""
        tmp = self.path.with_name(f"{DB_NAME}.new-{os.getpid()}-{threading.get_ident()}")
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', '1'), ('generation', '0')")
        finally:
            conn.close()  # the last connection: the WAL is checkpointed and removed
        try:
            os.link(tmp, self.path)
        except FileExistsError:
            pass  # another opener created it first: theirs is used
        except OSError:  # a file system without hard links: a rename, unless one appeared meanwhile
            if not self.path.exists():
                os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)

    def _connect(self, create: bool = False) -> sqlite3.Connection:
        """A connection to the store's file; only the opener that may create the store creates it.

        Any other connection (a reader, a snapshot) opens the file read-write but never creates it:
        a reader racing a rebuild's wipe must not leave an empty store where the new one is built."""
        if create:
            if not self.path.exists():
                self._create_file()
            return sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        uri = self.path.absolute().as_uri() + "?mode=rw"
        try:
            return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=30)
        except sqlite3.OperationalError as exc:
            if self.path.exists():
                raise
            raise IndexNotFound(
                f"There is no index in {self.directory} (it was just removed).",
                hint="Run `vaultlens index` to build it.",
            ) from exc

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self._conn.close()

    @property
    def db(self) -> sqlite3.Connection:
        """The connection reads go through: this thread's snapshot if one is open, else the main one."""
        snap: sqlite3.Connection | None = getattr(self._local, "snap", None)
        return snap if snap is not None else self._conn

    # ---- transactions, snapshots and meta -------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the main connection (BEGIN IMMEDIATE: one writer at a time).

        Ctrl-C is raised between two statements, so it can leave a transaction open where no handler
        sees it: BEGIN returned but the block not entered, or the block done but COMMIT not sent. Such
        a transaction committed nothing; it is rolled back here, before the next one begins (else the
        run's own "cancelled" record failed with "cannot start a transaction within a transaction")."""
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            yield self._conn
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[int]:
        """Freeze one committed generation for every read in the block; yields that generation.

        BEGIN DEFERRED plus a first read makes WAL pin the state committed at that moment;
        later commits by any writer stay invisible until the block ends, and the writer never
        waits for this reader. Each thread gets its own read connection (a sqlite3 connection
        cannot hold transactions for several threads). Re-entrant within a thread.
        """
        if getattr(self._local, "snap", None) is not None:
            yield self.generation
            return
        conn = self._reader()
        try:
            conn.execute("BEGIN DEFERRED")
            row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StoreError(f"The index at {self.path} cannot be read: {exc}.") from None
        self._local.snap = conn
        try:
            yield int(row[0]) if row else 0
        finally:
            self._local.snap = None
            conn.execute("COMMIT")

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "reader", None)
        if conn is None:
            try:
                conn = self._connect()
                conn.execute("PRAGMA query_only=ON")
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"The index at {self.path} cannot be read: {exc}.") from None
            self._local.reader = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def get_meta(self, key: str) -> str | None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError:  # brand-new file, no tables yet
            return None
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._set_meta(key, value)

    def delete_meta(self, key: str) -> None:
        with self.transaction():
            self._conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    @property
    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def _bump_generation(self) -> None:
        self._conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")

    # ---- embedding space ------------------------------------------------------------------
    def rebuild_estimate(self, target: EmbeddingSpace) -> RebuildEstimate:
        """Chunks, characters and measured rate for re-embedding everything into ``target``."""
        row = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM (SELECT MAX(length(text) + length(heading_path)) AS n"
            " FROM chunks GROUP BY embed_hash)"
        ).fetchone()
        return RebuildEstimate(int(row[0]), int(row[1]), self.embed_rate(), target.provider != "local")

    def embed_rate(self, runs: int = 10) -> float | None:
        """Chunks embedded per second over the recent runs that embedded anything."""
        sql = "SELECT stats FROM runs WHERE stats IS NOT NULL ORDER BY id DESC LIMIT ?"
        return rows.embed_rate(raw for (raw,) in self.db.execute(sql, (runs,)))

    # ---- the optional quality tier ----------------------------------------------------------
    def tier_missing(self, limit: int) -> list[tuple[str, str, Chunk]]:
        found = self.db.execute(
            f"SELECT c.embed_hash, f.title, {rows.chunk_columns('rowid', 'c')} FROM chunks c"
            " JOIN files f ON f.path = c.path"
            " WHERE c.embed_hash NOT IN (SELECT embed_hash FROM tier_vectors)"
            " GROUP BY c.embed_hash ORDER BY MIN(c.rowid) LIMIT ?",
            (limit,),
        ).fetchall()
        return [(r[0], r[1] or "", rows.chunk(r[2:])) for r in found]

    def add_tier_vectors(self, space: EmbeddingSpace, vectors: dict[str, Vectors]) -> None:
        import numpy as np

        with self.transaction() as db:
            drop, record = tier_switch(self.tier_space, space)
            if drop:
                db.execute("DELETE FROM tier_vectors")
            if record:
                self._set_meta("tier_space", space.to_json())
            db.executemany(
                "INSERT OR IGNORE INTO tier_vectors(embed_hash, vec) VALUES (?, ?)",
                [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()],
            )
            self._bump_generation()

    def drop_tier(self) -> None:
        with self.transaction() as db:
            for sql in rows.DROP_TIER:
                db.execute(sql)
            self._bump_generation()

    def tier_coverage(self) -> tuple[int, int]:
        row = self.db.execute(rows.TIER_COVERAGE).fetchone()
        return int(row[1]), int(row[0])

    # ---- writes -----------------------------------------------------------------------------

    def file_records(self) -> dict[str, FileRecord]:
        return {r.path: r for r in self._records()}

    def _records(self, where: str = "") -> Iterator[FileRecord]:
        return (rows.record(r) for r in self.db.execute(f"SELECT {rows.FILE_COLUMNS} FROM files " + where))

    def known_embed_hashes(self, hashes: Iterable[str]) -> set[str]:
        sql = "SELECT embed_hash FROM vectors WHERE embed_hash IN ({marks})"
        return {r[0] for r in self._rows_in(sql, dict.fromkeys(hashes))}

    def chunk_keys(self, path: str) -> set[tuple[str, str]]:
        rows = self.db.execute("SELECT id, content_hash FROM chunks WHERE path = ?", (path,))
        return {(r[0], r[1]) for r in rows}

    def apply(
        self,
        updates: Sequence[NoteUpdate] = (),
        vectors: dict[str, npt.NDArray[np.float32]] | None = None,
        deletes: Sequence[str] = (),
        touch: Sequence[FileRecord] = (),
    ) -> None:
        """Apply one batch atomically: new vectors, replaced notes, deleted paths, refreshed stamps."""
        with self.transaction() as db:
            logged = self.generation + 1  # the generation this batch commits (when it changes notes)
            if vectors:  # numpy only when there are vectors: a no-change run does not import it
                import numpy as np

                db.executemany(
                    "INSERT OR IGNORE INTO vectors(embed_hash, vec) VALUES (?, ?)",
                    [(h, np.asarray(vec, dtype=np.float32).tobytes()) for h, vec in vectors.items()],
                )
            # one executemany per statement: each table sees the rows in the order a per-row loop gave
            # them, and each chunk gets the rowid SQLite would have picked (the next after the largest)
            paths = [(p,) for p in dict.fromkeys([*deletes, *(u.record.path for u in updates)])]
            db.executemany(
                "INSERT INTO chunk_log SELECT ?, rowid FROM chunks WHERE path = ?",
                [(logged, *p) for p in paths],
            )
            leaving = {
                table: term_counts.rows_holding(self._terms_of(table, paths), fts_tokens.tokens)
                for table in _FTS_OWNER
            }
            for sql in _DELETE_PATH:
                db.executemany(sql, paths)
            db.executemany(
                _PUT_RECORD, [rows.record_params(r) for r in [*(u.record for u in updates), *touch]]
            )
            (top,) = db.execute("SELECT coalesce(max(rowid), 0) FROM chunks").fetchone()
            chunks = [item for u in updates for item in u.chunks]
            keys = range(top + 1, top + 1 + len(chunks))
            db.executemany(
                f"INSERT INTO chunks(rowid, {rows.CHUNK_INSERT_COLUMNS}) VALUES (?{',?' * 13})",
                [(key, *rows.chunk_params(item)) for key, item in zip(keys, chunks, strict=True)],
            )
            db.executemany(
                "INSERT INTO chunks_fts(rowid, terms) VALUES (?, ?)",
                [(key, item.terms) for key, item in zip(keys, chunks, strict=True)],
            )
            db.executemany("INSERT INTO chunk_log VALUES (?, ?)", [(logged, key) for key in keys])
            db.executemany(
                "INSERT INTO notes_fts(rowid, terms) SELECT rowid, ? FROM files WHERE path = ?",
                [(" ".join(item.terms for item in u.chunks), u.record.path) for u in updates if u.chunks],
            )
            arriving = dict(zip(_FTS_OWNER, term_counts.added(updates, fts_tokens.tokens), strict=True))
            db.executemany(
                "INSERT INTO term_stats VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET df = df + excluded.df",
                [
                    (table, term, n)
                    for table in _FTS_OWNER
                    for term, n in term_counts.change(arriving[table], leaving[table]).items()
                ],
            )
            db.executemany(
                f"INSERT INTO links({rows.LINK_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
                [params for u in updates for params in rows.link_params(u.record.path, u.links)],
            )
            if updates or deletes:
                self._bump_generation()

    def _terms_of(self, table: str, paths: Iterable[tuple[str]]) -> Iterator[str]:
        """The stored terms of ``table``'s rows (full text) for these paths' chunks or notes."""
        sql = (
            f"SELECT t.terms FROM {_FTS_OWNER[table]} o JOIN {table} t ON t.rowid = o.rowid"
            " WHERE o.path IN ({marks})"
        )
        return (str(r[0]) for r in self._rows_in(sql, (p for (p,) in paths)))

    def drop_orphan_vectors(self) -> int:
        """Drop vectors no chunk uses, and the change log the ANN tier's newest file no longer needs."""
        with self.transaction() as db:
            self._prune_chunk_log()
            db.execute("DELETE FROM tier_vectors WHERE embed_hash NOT IN (SELECT embed_hash FROM chunks)")
            cur = db.execute("DELETE FROM vectors WHERE embed_hash NOT IN (SELECT embed_hash FROM chunks)")
            return cur.rowcount

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

    def clear(self) -> None:
        """Remove every indexed note and vector but keep the file, so a cleared index stays cleared."""
        with self.transaction() as db:
            tables = (
                "chunks_fts",
                "notes_fts",
                "chunks",
                "vectors",
                "tier_vectors",
                "links",
                "files",
                "chunk_log",
                "term_stats",
            )
            for table in tables:
                db.execute(f"DELETE FROM {table}")
            self._set_meta("ann_floor", str(self.generation + 1))
            db.execute("DELETE FROM meta WHERE key IN ('space', 'tier_space')")
            self._set_meta("cleared_at", str(time.time()))
            self._bump_generation()
        self._drop_caches(keep=None)

    # ---- runs -------------------------------------------------------------------------------
    def start_run(self) -> int:
        with self.transaction() as db:
            cur = db.execute("INSERT INTO runs(started, status) VALUES (?, 'running')", (time.time(),))
            return int(cur.lastrowid or 0)

    def finish_run(self, run_id: int, status: str, stats: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE runs SET finished = ?, status = ?, stats = ? WHERE id = ?",
                (time.time(), status, json.dumps(stats), run_id),
            )

    def last_run(self) -> RunRecord | None:
        sql = "SELECT started, finished, status, stats FROM runs ORDER BY id DESC LIMIT 1"
        return rows.run_record(self.db.execute(sql).fetchone())

    # ---- reads ------------------------------------------------------------------------------
    def counts(self) -> StoreCounts:
        """From the counters the store's triggers keep (doctor compares them with the rows)."""
        return rows.store_counts(self.db.execute("SELECT name, n FROM counters"))

    def _counted(self) -> StoreCounts:
        return rows.counted(lambda sql: self.db.execute(sql).fetchall())

    def file_problems(self) -> list[FileRecord]:
        """Records that carry a reason (skipped, failed), by path: one indexed lookup, not every file."""
        return list(self._records("WHERE reason IS NOT NULL ORDER BY path"))

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.directory.iterdir() if p.is_file())

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

    # ---- full text ----------------------------------------------------------------------------
    def lexical_chunks(self, terms: Sequence[str], limit: int) -> dict[int, float]:
        """FTS5 BM25 of chunks divided by the query's idf mass (:func:`bm25_top.weigh`).

        The idf is FTS5's own (``log((N - df + 0.5) / (df + 0.5))``, floored at ~0), so the mass
        is roughly the BM25 of a chunk holding every term once. Past PRUNE_FROM_ROWS matching rows
        the best rows come from :func:`bm25_top.best_rows`, which skips scoring the rows that hold
        only the query's common terms (the same rows and scores; below, its probe costs more than it
        saves).
        """
        with self.snapshot():
            q = self._weigh(terms)
            if q is None:
                return {}
            run = self._bm25_rows("chunks_fts", q.held)
            best = bm25_top.top(run, q.held, limit, q.plain)
            return {int(r): float(v) / q.mass for r, v in best}

    def lexical_notes(self, terms: Sequence[str], limit: int) -> NoteScores:
        """FTS5 BM25 of whole notes over the terms some chunk holds, divided by the same mass; the
        terms in more than half the notes are left out of the match as the chunk query does."""
        with self.snapshot():
            q = self._weigh(terms)
            if q is None:
                return NoteScores()
            n_notes = self._notes_now()
            note_dfs = self._doc_freqs("notes_fts", q.held, n_notes)
            note_idf = bm25_top.note_weights(n_notes, note_dfs)
            run = self._bm25_rows("notes_fts", note_idf)
            top = bm25_top.top(run, note_idf, limit, q.plain)
            return NoteScores(
                [r for r, _ in top],
                [float(v) / q.mass for _, v in top],
                lambda keys: self._pairs_in("files", "rowid", "path", keys),
                lambda paths: self._pairs_in("files", "path", "rowid", paths),
            )

    def _weigh(self, terms: Sequence[str]) -> bm25_top.Weighed | None:
        n_chunks = self._chunks_now()
        return bm25_top.weigh(n_chunks, self._doc_freqs("chunks_fts", dict.fromkeys(terms), n_chunks))

    def _bm25_rows(self, table: str, idf: Mapping[str, float]) -> Query:
        return fts5_query(lambda sql, params: self.db.execute(sql, params).fetchall(), table, idf)

    def _doc_freqs(self, table: str, terms: Iterable[str], rows: int) -> dict[str, int]:
        """Rows of ``table`` holding each term, capped just over half of ``rows`` (past it FTS5's idf
        is floored, whatever the count): the counts ``apply`` keeps (index/term_counts.py), one
        lookup for the terms not cached for this generation. A term FTS5 stores as more than one
        token (or none) is matched as a phrase, so its rows are counted."""
        gen = self.generation
        if len(self._df_cache) > 100_000:
            self._df_cache.clear()
        cap = rows // 2 + 1
        out = {t: self._df_cache.get((gen, table, t)) for t in terms}
        stored = {t: fts_tokens.word_tokens(t) for t, df in out.items() if df is None}
        sql = f"SELECT term, df FROM term_stats WHERE tbl = '{table}' AND term IN ({{marks}})"
        kept = dict(self._rows_in(sql, {tokens[0] for tokens in stored.values() if len(tokens) == 1}))
        for t, tokens in stored.items():
            if len(tokens) == 1:
                df = kept.get(tokens[0], 0)
            else:
                sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"
                (df,) = self.db.execute(sql, (f'"{t}"', cap)).fetchone()
            out[t] = self._df_cache[(gen, table, t)] = int(df)
        return {t: min(int(df or 0), cap) for t, df in out.items()}

    def _miscounted_terms(self, table: str) -> int:
        """Tokens whose kept row count (``term_stats``) is not FTS5's own (its vocabulary's). On the main
        connection: a reader's may not even create the temporary vocabulary table."""
        self._conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_vocab USING fts5vocab(main, {table}, row)"
        )
        kept = f"SELECT term, df FROM term_stats WHERE tbl = '{table}' AND df <> 0"
        vocab = f"SELECT term, doc FROM temp.{table}_vocab"
        sql = (
            f"SELECT COUNT(DISTINCT term) FROM (SELECT term FROM ({kept} EXCEPT {vocab})"
            f" UNION ALL SELECT term FROM ({vocab} EXCEPT {kept}))"
        )
        return int(self._conn.execute(sql).fetchone()[0])

    def _notes_now(self) -> int:
        """Rows of notes_fts (one per note with chunks), as FTS5 counts them for its idf."""
        return fts5_size(lambda sql, params: self.db.execute(sql, params).fetchall(), "notes_fts")[0]

    def _chunks_now(self) -> int:
        """Number of chunks in the current generation, from the counter the triggers keep (counting
        the rows took 35 ms at 1,000,000 chunks, paid again after every commit); cached for it."""
        gen = self.generation
        cached = self._chunk_count
        if cached is None or cached[0] != gen:
            row = self.db.execute("SELECT n FROM counters WHERE name = 'chunks'").fetchone()
            cached = self._chunk_count = (gen, int(row[0]) if row else 0)
        return cached[1]

    # ---- chunks -------------------------------------------------------------------------------
    def chunks(self, keys: Iterable[int]) -> dict[int, Chunk]:
        sql = f"SELECT {rows.chunk_columns('rowid')} FROM chunks WHERE rowid IN ({{marks}})"
        return {int(r[0]): rows.chunk(r) for r in self._rows_in(sql, keys)}

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        row = self.db.execute(
            f"SELECT {rows.chunk_columns('rowid')} FROM chunks WHERE id = ?", (chunk_id,)
        ).fetchone()
        return None if row is None else rows.chunk(row)

    def _rows_in(self, sql: str, keys: Iterable[Any]) -> Iterator[Any]:
        """Rows of ``sql`` (with one ``IN ({marks})``) for any number of keys, 500 at a time."""
        ids = list(keys)
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            yield from self.db.execute(sql.format(marks=",".join("?" * len(part))), part)

    def _pairs_in(self, table: str, key: str, value: str, keys: Iterable[Any]) -> dict[Any, Any]:
        """``{key: value}`` of the rows of ``table`` whose ``key`` is one of ``keys``, read as one JSON row
        per 500 keys. Read a row at a time, two threads of a search (services/beside.py) handed each other
        the GIL on every row (it is let go while SQLite steps): 7 % of a search at 1,000,000 chunks."""
        out: dict[Any, Any] = {}
        sql = f"SELECT json_group_array(json_array({key}, {value})) FROM {table} WHERE {key} IN ({{marks}})"
        for (found,) in self._rows_in(sql, keys):
            out.update(json.loads(found))
        return out

    def chunk_paths(self, keys: Iterable[int]) -> dict[int, str]:
        """Note path of each chunk rowid (cheap: the chunk rows' text is not read)."""
        return self._pairs_in("chunks", "rowid", "path", keys)

    def note_chunk_keys(self, paths: Iterable[str]) -> dict[str, list[int]]:
        """A row per note, not per chunk (a search asks for a few hundred chunks' worth)."""
        sql = "SELECT path, group_concat(rowid) FROM chunks WHERE path IN ({marks}) GROUP BY path"
        return {path: sorted(map(int, keys.split(","))) for path, keys in self._rows_in(sql, paths)}

    def chunk_layout(self) -> tuple[ChunkKeys, list[str], npt.NDArray[np.bool_]]:
        """(rowids, note path, is-front-matter) of every chunk, ordered by rowid like :meth:`matrix`."""
        import numpy as np

        data = self.db.execute("SELECT rowid, path, frontmatter FROM chunks ORDER BY rowid").fetchall()
        rowids = np.fromiter((r[0] for r in data), dtype=np.int64, count=len(data))
        frontmatter = np.fromiter((bool(r[2]) for r in data), dtype=np.bool_, count=len(data))
        return rowids, [r[1] for r in data], frontmatter

    def note_texts(self) -> Iterator[NoteText]:
        """Each note's chunk texts joined in order, with and without its front matter chunk."""
        yield from rows.note_texts(
            self.db.execute("SELECT path, text, frontmatter FROM chunks ORDER BY path, ordinal")
        )

    def links(self, paths: Iterable[str] | None = None) -> dict[str, list[Link]]:
        cols = rows.LINK_COLUMNS
        if paths is None:
            return rows.links_by_src(self.db.execute(f"SELECT {cols} FROM links ORDER BY src, line, rowid"))
        return rows.links_by_src(
            self._rows_in(f"SELECT {cols} FROM links WHERE src IN ({{marks}}) ORDER BY src, line", paths)
        )

    def file_hashes(self, paths: Iterable[str]) -> dict[str, str | None]:
        return dict(self._rows_in("SELECT path, file_hash FROM files WHERE path IN ({marks})", paths))

    def dismiss_pair(self, a: str, b: str) -> None:
        a, b = sorted((a, b))
        hashes = self.file_hashes([a, b])
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO dismissed_pairs(a, b, hash_a, hash_b, dismissed_at) VALUES (?,?,?,?,?)",
                (a, b, hashes.get(a), hashes.get(b), time.time()),
            )

    def dismissed_pairs(self) -> set[tuple[str, str]]:
        """Dismissed pairs whose two notes are byte-identical to when they were dismissed."""
        rows = self.db.execute(
            "SELECT d.a, d.b FROM dismissed_pairs d JOIN files fa ON fa.path = d.a JOIN files fb ON fb.path = d.b"
            " WHERE fa.file_hash IS d.hash_a AND fb.file_hash IS d.hash_b"
        )
        return {(r[0], r[1]) for r in rows}

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        return dict(self._rows_in("SELECT path, title FROM files WHERE path IN ({marks})", paths))

    def unused_vectors(self) -> int:
        """Vectors no chunk uses. Normal between runs after a crash: they are kept so a moved or
        restored chunk costs no embedding, and the next completed run drops them."""
        row = self.db.execute(
            "SELECT COUNT(*) FROM vectors WHERE embed_hash NOT IN (SELECT embed_hash FROM chunks)"
        )
        return int(row.fetchone()[0])

    def problems(self) -> list[str]:
        """Integrity and consistency findings; empty means healthy."""
        q = self.db.execute
        found: list[str] = []
        result = [r[0] for r in q("PRAGMA integrity_check")]
        if result != ["ok"]:
            found.append("SQLite integrity check failed: " + "; ".join(result[:5]))
            return found
        try:
            # a command spelled as an INSERT: it needs the writable main connection, though it writes nothing
            self._conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
        except sqlite3.DatabaseError as exc:
            found.append(f"full-text index is damaged: {exc}")
        checks = {
            "chunks without a vector": "SELECT COUNT(*) FROM chunks c LEFT JOIN vectors v"
            " ON v.embed_hash = c.embed_hash WHERE v.embed_hash IS NULL",
            "chunks without full-text terms": "SELECT COUNT(*) FROM chunks WHERE rowid NOT IN"
            " (SELECT rowid FROM chunks_fts)",
            "full-text rows without a chunk": "SELECT COUNT(*) FROM chunks_fts WHERE rowid NOT IN"
            " (SELECT rowid FROM chunks)",
            "notes with chunks but no note-level full text": "SELECT COUNT(*) FROM files WHERE n_chunks > 0"
            " AND status = 'indexed' AND rowid NOT IN (SELECT rowid FROM notes_fts)",
            "note-level full-text rows without a note": "SELECT COUNT(*) FROM notes_fts WHERE rowid NOT IN"
            " (SELECT rowid FROM files WHERE n_chunks > 0)",
            **rows.SHARED_CHECKS,
        }
        for label, sql in checks.items():
            n = q(sql).fetchone()[0]
            if n:
                found.append(f"{n} {label}")
        for table in _FTS_OWNER:
            n = self._miscounted_terms(table)
            if n:
                found.append(f"{n} kept term counts of {table} differ from its full-text index")
        if self.counts() != self._counted():
            found.append(f"the kept counts {self.counts()} differ from the rows {self._counted()}")
        for table, space, label in (
            ("vectors", self.space, "vectors"),
            ("tier_vectors", self.tier_space, "quality-tier vectors"),
        ):
            if space is not None and space.dimensions:
                sql = f"SELECT COUNT(*) FROM {table} WHERE length(vec) != ?"
                bad = q(sql, (space.dimensions * 4,)).fetchone()[0]
                if bad:
                    found.append(f"{bad} {label} with the wrong dimension")
        return found + self.cache_problems() + self.ann_problems()


class SQLiteBackend:
    """The embedded default: one SQLite file (plus its WAL and the vector cache) in a folder."""

    name = "sqlite"

    def __init__(self, ann_threshold: int = SearchSettings.ann_threshold) -> None:
        self.ann_threshold = ann_threshold

    def exists(self, location: Path) -> bool:
        return (location / DB_NAME).exists()

    def open(self, location: Path, create: bool = True) -> SQLiteStore:
        return SQLiteStore(location, create, self.ann_threshold)

    def wipe(self, location: Path) -> None:
        """Delete the store's files only (never the writer lock, a pointer or other folders)."""
        if not location.is_dir():
            return
        for p in location.iterdir():
            if p.is_file() and p.name.startswith((DB_NAME, "matrix-", ".matrix-")):
                p.unlink(missing_ok=True)
