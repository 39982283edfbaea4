"""The PostgreSQL + pgvector backend: a store per schema in one database shared by many vaults.

``connection`` connects and translates psycopg errors, ``schema`` names a store's schema and holds
the migrations, ``fulltext`` scores BM25 from posting tables on the contract's lexical scale, ``store`` is
the :class:`~vaultlens.index.store.Store`. The index lifecycle (index/lifecycle.py) is unchanged:
its folders stay on this machine (the writer lock, the ``current`` pointer) and each folder's store
is a schema, so a background rebuild builds a new schema and the switch is the pointer's.
"""

from __future__ import annotations

from pathlib import Path

from vaultlens.errors import IndexNotFound
from vaultlens.index.postgres.connection import connect, translated
from vaultlens.index.postgres.schema import MIGRATIONS, lock_key, schema_name
from vaultlens.index.postgres.store import PostgresStore
from vaultlens.index.postgres.vectors import EXACT_BELOW


class PostgresBackend:
    """Stores in schemas of the database ``dsn`` names (libpq's PG* variables fill in the rest)."""

    name = "postgres"

    def __init__(self, dsn: str = "", vault_id: str = "", exact_below: int = EXACT_BELOW) -> None:
        self.dsn = dsn
        self.vault_id = vault_id
        self.exact_below = exact_below

    def schema(self, location: Path) -> str:
        return schema_name(location, self.vault_id)

    def exists(self, location: Path) -> bool:
        conn = connect(self.dsn)
        try:
            with translated(self.dsn, "look for the index"):
                row = conn.execute(
                    "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'meta'",
                    (self.schema(location),),
                ).fetchone()
        finally:
            conn.close()
        return row is not None

    def open(self, location: Path, create: bool = True) -> PostgresStore:
        schema = self.schema(location)
        if create:
            location.mkdir(parents=True, exist_ok=True)  # the lifecycle's folder: lock and slot live there
            self.migrate(schema)
        elif not self.exists(location):
            raise IndexNotFound(
                "There is no index for this vault yet.", hint="Run `vaultlens index` to build it."
            )
        return PostgresStore(self.dsn, schema, location, self.exact_below)

    def migrate(self, schema: str) -> list[str]:
        """Create the schema and apply the migrations it lacks, in order; returns the names applied."""
        conn = connect(self.dsn)
        applied: list[str] = []
        try:
            with translated(self.dsn, "create the index"):
                if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(schema),))
                    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                    conn.execute(f"SET LOCAL search_path = {schema}, public")
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS schema_migrations"
                        " (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                    )
                    done = {r[0] for r in conn.execute("SELECT name FROM schema_migrations").fetchall()}
                    for name, sql in MIGRATIONS:
                        if name in done:
                            continue
                        conn.execute(sql)
                        conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
                        applied.append(name)
        finally:
            conn.close()
        return applied

    def wipe(self, location: Path) -> None:
        """Drop the store's schema (its readers' open snapshots finish first) and its vector cache files."""
        schema = self.schema(location)
        conn = connect(self.dsn)
        try:
            with translated(self.dsn, "delete the index"), conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(schema),))
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        finally:
            conn.close()
        for cache in location.glob("matrix-*.npy"):
            cache.unlink(missing_ok=True)
