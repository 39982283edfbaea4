"""Connections to the index's PostgreSQL server, and psycopg errors said as VaultlensErrors.

psycopg is imported here, inside functions: only a user who chose ``index.backend = "postgres"``
needs the ``vaultlens[postgres]`` extra, and ``vaultlens --help`` never loads it. The password
comes from libpq itself (``PGPASSWORD`` or a 600-mode ``~/.pgpass`` / ``PGPASSFILE``): settings
refuse a DSN that holds one (config/settings.py), and no message here ever shows the DSN.
:class:`PostgresConnection` is the store's base: its connections, transactions, snapshots and meta.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vaultlens.errors import (
    ConfigError,
    DiskFull,
    IndexNotFound,
    StoreBusy,
    StoreError,
    VaultlensError,
)
from vaultlens.index.connection_base import ConnectionBase
from vaultlens.index.postgres.schema import lock_key

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT_S = 10
LOCK_TIMEOUT_MS = 30_000  # as long as SQLite's busy timeout: a writer waits this long for another
DSN_HINT = "Check index.dsn (or VAULTLENS_INDEX__DSN); libpq's PGHOST, PGPORT, PGUSER and PGDATABASE fill in what it leaves out."
EXTRA_HINT = "Install the PostgreSQL extra: pip install 'vaultlens[postgres]'."

# psycopg logs "error ignored in rollback" when Ctrl-C left a connection mid-command; the store
# replaces that connection (PostgresStore._writer), so the warning is noise on a user's terminal.
# A NullHandler only stops Python's last-resort printing: an application's own logging still sees it.
logging.getLogger("psycopg").addHandler(logging.NullHandler())


def where(dsn: str) -> str:
    """The server a DSN names, for messages: host, port and database, never a user's password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:  # noqa: BLE001 - a DSN libpq cannot parse is reported by connect itself
        parts = {}
    import os

    host = parts.get("host") or os.environ.get("PGHOST") or "localhost"
    port = parts.get("port") or os.environ.get("PGPORT") or "5432"
    db = parts.get("dbname") or os.environ.get("PGDATABASE") or parts.get("user") or "(default database)"
    return f"{host}:{port}/{db}"


def connect(dsn: str, schema: str | None = None) -> psycopg.Connection[Any]:
    """An autocommit connection with the store's schema first on the search path (vector types from public)."""
    try:
        import psycopg
    except ImportError:
        raise ConfigError(
            "index.backend is postgres, but psycopg is not installed.", hint=EXTRA_HINT
        ) from None
    options = f"-c lock_timeout={LOCK_TIMEOUT_MS}"
    if schema is not None:
        options += f" -c search_path={schema},public"
    try:
        conn = psycopg.connect(
            dsn,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            options=options,
            application_name="vaultlens",
        )
    except psycopg.Error as exc:
        raise translate(exc, dsn, "connect to the index server") from None
    return conn


def register_vectors(conn: psycopg.Connection[Any]) -> None:
    """pgvector's binary adapter on ``conn`` (numpy arrays in and out)."""
    try:
        from pgvector.psycopg import register_vector
    except ImportError:
        raise ConfigError(
            "index.backend is postgres, but pgvector is not installed.", hint=EXTRA_HINT
        ) from None
    register_vector(conn)


_UNREACHABLE = re.compile(
    r"connection refused|could not connect|could not translate host|timeout expired|no route to host|"
    r"network is unreachable|server closed the connection|connection to server .* failed|name or service not known",
    re.IGNORECASE,
)
_AUTH = re.compile(r"password authentication failed|no password supplied|authentication failed|"
                   r"role .* does not exist|no pg_hba.conf entry", re.IGNORECASE)  # fmt: skip


def translate(exc: BaseException, dsn: str, action: str) -> VaultlensError:
    """The VaultlensError for a psycopg error (unreachable, auth, disk full, lock timeout, a removed store)."""
    import psycopg
    from psycopg import errors as pe

    if isinstance(exc, VaultlensError):
        return exc
    server = where(dsn)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, pe.DiskFull | pe.OutOfMemory) or "No space left on device" in str(exc):
        return DiskFull(
            f"Could not {action}: the PostgreSQL server at {server} is out of disk space.",
            hint="Free space on the database server (or move its data directory), then run the command again.",
        )
    if isinstance(exc, pe.LockNotAvailable | pe.DeadlockDetected):
        return StoreBusy(
            f"Could not {action}: the index at {server} stayed locked by another writer for "
            f"{LOCK_TIMEOUT_MS // 1000} s.",
            hint="Another vaultlens process (a watcher or an index run) is writing this vault's index; "
            "wait for it, or stop it, and try again.",
        )
    if isinstance(exc, pe.UndefinedTable | pe.InvalidSchemaName):
        return IndexNotFound(
            f"The index at {server} was removed while it was in use.",
            hint="Run `vaultlens index` to build it.",
        )
    if isinstance(exc, pe.InsufficientPrivilege):
        return StoreError(
            f"Could not {action}: the PostgreSQL role has no permission for it ({text}).",
            hint="Grant the role CREATE on the database; the pgvector extension must be created once by a "
            "superuser: CREATE EXTENSION vector;",
        )
    if isinstance(exc, pe.InvalidAuthorizationSpecification | pe.InvalidPassword) or (
        isinstance(exc, psycopg.OperationalError) and _AUTH.search(str(exc))
    ):
        return ConfigError(
            f"Could not {action}: the PostgreSQL server at {server} refused the login ({_auth_reason(text)}).",
            hint="Put the password in PGPASSWORD or in a 600-mode ~/.pgpass (or the file PGPASSFILE names), "
            "never in index.dsn; check the user name in index.dsn or PGUSER.",
        )
    if isinstance(exc, psycopg.OperationalError) and (_UNREACHABLE.search(str(exc)) or exc.sqlstate is None):
        return StoreError(
            f"Could not {action}: the PostgreSQL server at {server} cannot be reached.",
            hint="Is the server running and listening there? " + DSN_HINT,
        )
    if isinstance(exc, pe.InvalidCatalogName):
        return ConfigError(f"Could not {action}: {text}.", hint=DSN_HINT)
    return StoreError(f"Could not {action}: PostgreSQL said: {text}.")


def _auth_reason(text: str) -> str:
    """libpq's reason without the connection string it sometimes quotes."""
    reason = text.split("FATAL:")[-1].strip()
    return reason or "authentication failed"


@contextmanager
def translated(dsn: str, action: str) -> Iterator[None]:
    """Raise any psycopg error of the block as the VaultlensError :func:`translate` gives."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        # Ctrl-C in a query: psycopg cancels it, and the cancel (or the rollback after it) surfaces as
        # an error; the user's interruption, not the server, is what happened
        if isinstance(exc, psycopg.errors.QueryCanceled) or isinstance(exc.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from exc
        raise translate(exc, dsn, action) from exc


# a snapshot's start and its generation, one round trip (the simple protocol runs both statements)
_BEGIN_SNAPSHOT = (
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT value FROM meta WHERE key = 'generation'"
)


class PostgresConnection(ConnectionBase["psycopg.Connection[Any]"]):
    """One store schema's connections, transactions, snapshots, meta and kept counters: the base the
    store's rooms (vectors.py, fulltext.py, store.py) build on."""

    reads_in_server = True

    def __init__(self, dsn: str, schema: str, location: Path) -> None:
        self.dsn = dsn
        self.schema = schema
        self.location = location
        self._lock_key = lock_key(schema)
        self._local = threading.local()  # .conn: this thread's read connection, .snap: True inside a snapshot
        self._readers: list[psycopg.Connection[Any]] = []
        self._readers_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._writing = 0  # depth of transaction() on this store (nested blocks are savepoints)
        self._conn = self._connect("open the index")
        self._stats: dict[tuple[int, str, str], float] = {}  # (generation, what, term) -> df or size

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

    # ---- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self._one("SELECT value FROM meta WHERE key = %s", (key,))
        return None if row is None else str(row[0])

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

    def _size(self, table: str) -> int:
        """Rows of ``table`` with full text (the counters the triggers keep)."""
        return self._counter(f"fts:{table}")

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
