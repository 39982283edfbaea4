"""Connections to the index's PostgreSQL server, and psycopg errors said as VaultlensErrors.

psycopg is imported here, inside functions: only a user who chose ``index.backend = "postgres"``
needs the ``vaultlens[postgres]`` extra, and ``vaultlens --help`` never loads it. The password
comes from libpq itself (``PGPASSWORD`` or a 600-mode ``~/.pgpass`` / ``PGPASSFILE``): settings
refuse a DSN that holds one (config/settings.py), and no message here ever shows the DSN.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from vaultlens.errors import (
    ConfigError,
    DiskFull,
    IndexNotFound,
    StoreBusy,
    StoreError,
    VaultlensError,
)

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
