"""Store backends by name: the one place that knows which modules implement the store contract.

A backend is a module (or package) beside ``sqlite_store.py`` that passes
tests/test_store_contract.py, and one entry here. Backends are imported on first use, so a
backend's driver (psycopg for PostgreSQL) is only needed by users who choose it.
"""

from __future__ import annotations

from collections.abc import Callable

from vaultlens.config.settings import IndexSettings
from vaultlens.errors import ConfigError
from vaultlens.index.store import StoreBackend


def _sqlite(settings: IndexSettings) -> StoreBackend:
    from vaultlens.index.sqlite_store import SQLiteBackend

    return SQLiteBackend()


def _postgres(settings: IndexSettings) -> StoreBackend:
    from vaultlens.index.postgres import PostgresBackend

    return PostgresBackend(settings.dsn, settings.vault_id)


_BACKENDS: dict[str, Callable[[IndexSettings], StoreBackend]] = {"postgres": _postgres, "sqlite": _sqlite}


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def get_backend(name: str = "sqlite", settings: IndexSettings | None = None) -> StoreBackend:
    """The backend ``name`` configured from ``settings`` (the index group: a DSN, a vault id)."""
    factory = _BACKENDS.get(name)
    if factory is None:
        raise ConfigError(
            f"Unknown store backend {name!r}.", hint=f"Known backends: {', '.join(backend_names())}."
        )
    return factory(settings or IndexSettings())
