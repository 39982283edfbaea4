"""The embedded store's connections: the main (writing) one, a read connection per thread whose
snapshot pins one committed generation (WAL), transactions, meta and the small keyed reads every
part of the store makes. :class:`SQLiteConnection` is the base the store's rooms build on."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vaultlens.errors import IndexNotFound, StoreError, translate_error
from vaultlens.index.connection_base import ConnectionBase
from vaultlens.index.sqlite.schema import DB_NAME, MIGRATIONS, SCHEMA, SCHEMA_VERSION, create_file
from vaultlens.index.sqlite.threads import free_threads


class SQLiteConnection(ConnectionBase[sqlite3.Connection]):
    """One store file's connections, transactions, snapshots and meta."""

    def __init__(self, directory: Path, create: bool) -> None:
        self.directory = directory
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
                self._conn.executescript(SCHEMA)  # idempotent; executescript commits on its own
                with self.transaction():
                    self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', '1')")
                    self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
            self._migrate()
        except sqlite3.Error as exc:  # damaged (rebuild), read-only, locked: each said as what it is
            raise translate_error(exc, "open the index", self.path) from exc
        self._chunk_count: tuple[int, int] | None = None  # (generation, chunks)

    def _connect(self, create: bool = False) -> sqlite3.Connection:
        """A connection to the store's file; only the opener that may create the store creates it.

        Any other connection (a reader, a snapshot) opens the file read-write but never creates it:
        a reader racing a rebuild's wipe must not leave an empty store where the new one is built."""
        if create:
            if not self.path.exists():
                create_file(self.path)
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

    def _rows_in(self, sql: str, keys: Iterable[Any]) -> Iterator[Any]:
        """Rows of ``sql`` (with one ``IN ({marks})``) for any number of keys, 500 at a time."""
        ids = list(keys)
        for i in range(0, len(ids), 500):
            part = ids[i : i + 500]
            yield from self.db.execute(sql.format(marks=",".join("?" * len(part))), part)

    def _pairs_in(self, table: str, key: str, value: str, keys: Iterable[Any]) -> dict[Any, Any]:
        """``{key: value}`` of the rows of ``table`` whose ``key`` is one of ``keys``, read as one JSON row
        per 500 keys. Read a row at a time, two threads of a search (services/finding/beside.py) handed each other
        the GIL on every row (it is let go while SQLite steps): 7 % of a search at 1,000,000 chunks."""
        out: dict[Any, Any] = {}
        sql = f"SELECT json_group_array(json_array({key}, {value})) FROM {table} WHERE {key} IN ({{marks}})"
        for (found,) in self._rows_in(sql, keys):
            out.update(json.loads(found))
        return out

    def _chunks_now(self) -> int:
        """Number of chunks in the current generation, from the counter the triggers keep (counting
        the rows took 35 ms at 1,000,000 chunks, paid again after every commit); cached for it."""
        gen = self.generation
        cached = self._chunk_count
        if cached is None or cached[0] != gen:
            row = self.db.execute("SELECT n FROM counters WHERE name = 'chunks'").fetchone()
            cached = self._chunk_count = (gen, int(row[0]) if row else 0)
        return cached[1]
