"""What both SQL backends' connection bases do alike, over what each does its own way: its driver's
connection type, ``transaction`` and the meta and generation writes in its SQL dialect."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Generic, Protocol, TypeVar

from vaultlens.index import rows
from vaultlens.index.store_defaults import StoreDefaults


class DriverConnection(Protocol):
    """The part of a driver's connection (SQLite's, psycopg's) the shared members use."""

    def execute(self, sql: str, /) -> object: ...
    def close(self) -> None: ...


C = TypeVar("C", bound=DriverConnection)


class ConnectionBase(StoreDefaults, Generic[C]):
    """A backend's base: the main connection, the read connections of every thread, and the writes
    that are the same statements on both backends."""

    _conn: C
    _readers: list[C]  # each thread's read connection, closed with the store
    _readers_lock: threading.Lock

    def transaction(self) -> AbstractContextManager[C]:
        raise NotImplementedError

    def _set_meta(self, key: str, value: str) -> None:
        raise NotImplementedError

    def _bump_generation(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self._conn.close()

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._set_meta(key, value)

    def drop_tier(self) -> None:
        with self.transaction() as db:
            for sql in rows.DROP_TIER:
                db.execute(sql)
            self._bump_generation()
