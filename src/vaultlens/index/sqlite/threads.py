"""SQLite connections on several threads that really run at once.

SQLite counts every allocation under one process-wide mutex while its memory statistics are on (the
default, which Python's ``sqlite3`` keeps). FTS5 allocates for each row it scores, so two threads'
queries took turns on that mutex: measured on 2 cores, two threads each running FTS5 queries at
1,000,000 chunks were slower together than one after the other (493 against 367 ms a query), and
twice as fast with the statistics off (188 ms); docs/benchmarks.md. vaultlens reads no statistic, so
it turns them off, once per process, before its first connection.

SQLite takes that setting only between ``sqlite3_shutdown`` and ``sqlite3_initialize``, which must
not run under an open connection: it is done only while SQLite holds no memory at all (no connection
is open anywhere in the process), and is skipped (nothing but the speed lost) where the library's
functions cannot be reached, as when ``_sqlite3`` links SQLite in without exporting them. vaultlens's
own connections all open after it (``SQLiteStore`` calls it first, under a lock); code of an embedding
application opening its first SQLite connection on another thread at that same moment is not guarded.
"""

from __future__ import annotations

import threading

_SQLITE_CONFIG_MEMSTATUS = 9
_SQLITE_STATUS_MEMORY_USED = 0

_lock = threading.Lock()
_off: bool | None = None  # None until tried


def free_threads() -> bool:
    """Turn SQLite's memory statistics off if no connection is open yet; True when they are off now
    (by this call or an earlier one). Safe to call before every connection: the work is done once."""
    global _off
    with _lock:
        if _off is None:
            _off = _statistics_off()
        return _off


def _statistics_off() -> bool:
    import _sqlite3
    import ctypes  # loaded by the first store opened, not by every command that imports this

    try:
        lib = ctypes.CDLL(_sqlite3.__file__)  # its symbols and those of the SQLite it links
        status, shutdown, config, initialize = (
            lib.sqlite3_status64,
            lib.sqlite3_shutdown,
            lib.sqlite3_config,
            lib.sqlite3_initialize,
        )
    except (OSError, AttributeError):
        return False
    used, highest = ctypes.c_int64(), ctypes.c_int64()
    if status(_SQLITE_STATUS_MEMORY_USED, ctypes.byref(used), ctypes.byref(highest), 0) or used.value:
        return False  # a connection is open somewhere: shutting SQLite down under it is undefined
    if shutdown():
        return False
    turned_off: bool = config(_SQLITE_CONFIG_MEMSTATUS, ctypes.c_int(0)) == 0
    if initialize():  # never left uninitialised: the next connection would initialise it anyway
        return False
    return turned_off
