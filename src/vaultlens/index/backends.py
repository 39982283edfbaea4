"""Store backends by name: the one place that knows which modules implement the store contract.

A backend is a module (or package) beside ``sqlite_store.py`` that passes
tests/test_store_contract.py, and one entry here. Backends are imported on first use, so a
backend's driver (psycopg for PostgreSQL) is only needed by users who choose it.
"""

from __future__ import annotations

from collections.abc import Callable

from vaultlens.config.settings import Settings
from vaultlens.errors import ConfigError
from vaultlens.index.store import StoreBackend


def _sqlite(settings: Settings) -> StoreBackend:
    from vaultlens.index.sqlite.store import SQLiteBackend

    return SQLiteBackend(settings.search.ann_threshold)


def _postgres(settings: Settings) -> StoreBackend:
    from vaultlens.index.postgres import PostgresBackend

    return PostgresBackend(settings.index.dsn, settings.index.vault_id, settings.search.ann_threshold)


_BACKENDS: dict[str, Callable[[Settings], StoreBackend]] = {"postgres": _postgres, "sqlite": _sqlite}


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def get_backend(name: str = "sqlite", settings: Settings | None = None) -> StoreBackend:
    """The backend ``name``, with the store settings of ``settings`` (the defaults when None)."""
    factory = _BACKENDS.get(name)
    if factory is None:
        raise ConfigError(
            f"Unknown store backend {name!r}.", hint=f"Known backends: {', '.join(backend_names())}."
        )
    return factory(settings or Settings())
