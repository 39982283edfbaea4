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

The store is built from rooms: ``schema`` (tables, migrations, a new file), ``connection`` (the
base: connections, transactions, snapshots, meta), ``fulltext`` (FTS5 BM25), ``vectors`` (the
matrix, its caches and the store's side of the ANN tier, ``ann``); this module holds the writes,
the catalog reads, doctor's checks and the backend.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultlens.chunking.chunker import Chunk
from vaultlens.config.settings import SearchSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors
from vaultlens.index import rows, term_counts
from vaultlens.index.estimate import RebuildEstimate
from vaultlens.index.runs import RunRecord
from vaultlens.index.sqlite import fts_tokens
from vaultlens.index.sqlite.ann import AnnKeeper
from vaultlens.index.sqlite.fulltext import SQLiteFullText
from vaultlens.index.sqlite.schema import DB_NAME, FTS_OWNER
from vaultlens.index.sqlite.vectors import SQLiteVectors
from vaultlens.index.store import ChunkKeys, FileRecord, NoteText, NoteUpdate, StoreCounts, tier_switch
from vaultlens.index.vector_file import VectorFile
from vaultlens.vault.model import Link

if TYPE_CHECKING:  # numpy loads in the methods that handle vectors: status and note lists skip it
    import numpy as np
    import numpy.typing as npt

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


class SQLiteStore(SQLiteFullText, SQLiteVectors):
    def __init__(
        self, directory: Path, create: bool = True, ann_threshold: int = SearchSettings.ann_threshold
    ) -> None:
        super().__init__(directory, create)
        self.ann_threshold = ann_threshold  # chunks from which top_k asks the ANN tier (index/sqlite/ann.py)
        # per vector table (main, tier): (generation, rowids, vectors)
        self._matrix: dict[bool, tuple[int, npt.NDArray[np.int64], Vectors]] = {}
        # one thread builds the matrix of a new generation; the others wait and take it (a server's
        # 40 worker threads each reading 20 MB of vectors after every commit held ~1 GB at once)
        self._matrix_lock = threading.Lock()
        self._df_cache: dict[tuple[int, str, str], int] = {}  # (generation, table, term) -> rows holding it
        self._vec_cache: dict[tuple[int, int], bytes] = {}  # (generation, chunk rowid) -> its float32 vector
        # (snapshot generation, the generation the vector cache file rows are read from was written at,
        # that file, the keys changed since): a newer snapshot keeps the file open and adds only the
        # keys its new generations changed (opening checks every key, 8 MB at 1,000,000 chunks, and
        # the changed keys were 20,000 after 1,000 edits: 25 ms that every commit made a search redo)
        self._vec_file: tuple[int, int, VectorFile, ChunkKeys] | None = None
        self.store_id = self.get_meta("store_id") or "0"
        self._ann = AnnKeeper(self)

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
                for table in FTS_OWNER
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
                f"INSERT INTO chunks(rowid, {rows.CHUNK_INSERT_COLUMNS}) VALUES (?{',?' * 15})",
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
            arriving = dict(zip(FTS_OWNER, term_counts.added(updates, fts_tokens.tokens), strict=True))
            db.executemany(
                "INSERT INTO term_stats VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET df = df + excluded.df",
                [
                    (table, term, n)
                    for table in FTS_OWNER
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
            f"SELECT t.terms FROM {FTS_OWNER[table]} o JOIN {table} t ON t.rowid = o.rowid"
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

    # ---- chunks -------------------------------------------------------------------------------
    def chunks(self, keys: Iterable[int]) -> dict[int, Chunk]:
        sql = f"SELECT {rows.chunk_columns('rowid')} FROM chunks WHERE rowid IN ({{marks}})"
        return {int(r[0]): rows.chunk(r) for r in self._rows_in(sql, keys)}

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        row = self.db.execute(
            f"SELECT {rows.chunk_columns('rowid')} FROM chunks WHERE id = ?", (chunk_id,)
        ).fetchone()
        return None if row is None else rows.chunk(row)

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

    def restore_pair(self, a: str, b: str) -> bool:
        a, b = sorted((a, b))
        with self.transaction() as db:
            return db.execute("DELETE FROM dismissed_pairs WHERE a = ? AND b = ?", (a, b)).rowcount > 0

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
        for table in FTS_OWNER:
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
