"""SQLite's memory statistics off before the first connection (index/sqlite/threads.py), and never a
shutdown of SQLite under a connection already open. Each case runs in a fresh interpreter: the switch
is once per process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MEMORY_USED = """
import ctypes, _sqlite3
def memory_used():
    used, highest = ctypes.c_int64(), ctypes.c_int64()
    ctypes.CDLL(_sqlite3.__file__).sqlite3_status64(0, ctypes.byref(used), ctypes.byref(highest), 0)
    return used.value
"""


def run(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_USED + code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.split()


def test_a_store_opened_first_turns_the_statistics_off(tmp_path: Path) -> None:
    out = run(
        f"""
from pathlib import Path
from vaultlens.index.sqlite.store import SQLiteStore
store = SQLiteStore(Path({str(tmp_path / "index")!r}))
store.set_meta("probe", "1")
print(memory_used(), store.get_meta("probe"))
"""
    )
    assert out == ["0", "1"]  # a store is open and SQLite no longer counts its memory


def test_a_connection_opened_before_keeps_sqlite_as_it_is(tmp_path: Path) -> None:
    out = run(
        f"""
import sqlite3
from pathlib import Path
from vaultlens.index.sqlite import threads
from vaultlens.index.sqlite.store import SQLiteStore
first = sqlite3.connect({str(tmp_path / "other.db")!r})
first.execute("CREATE TABLE t(x)")
first.execute("INSERT INTO t VALUES (42)")
store = SQLiteStore(Path({str(tmp_path / "index")!r}))
print(threads.free_threads(), memory_used() > 0, first.execute("SELECT x FROM t").fetchone()[0])
"""
    )
    assert out == ["False", "True", "42"]  # not shut down under the open connection, which still works
