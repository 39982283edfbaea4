"""The life of one vault's index on disk: the live store, staging for a background rebuild, the
atomic switch, wipe, the writer lock, and leases that keep a store open while it is read.

The index root (``$VAULTLENS_HOME/indexes/<vault>-<hash>/``) holds ``writer.lock`` (the live
writer lock, stable across switches) and either the store itself (before any background
rebuild) or a ``current`` pointer naming the folder ``r<k>`` that holds it. Higher k = newer; a
folder above the live one is a rebuild in progress, one below it is left over from a switch.
The pointer is replaced atomically and durably, so a reader sees the old live store or the
new one, never neither.

:class:`LiveStore` is how one process shares the live store between threads: each use takes a
lease; when a background rebuild has switched the pointer, the next lease opens the new store
and the old one is closed only when its last lease ends, so an in-flight reader is never cut off.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from vaultlens.errors import IndexLocked, IndexNotFound, StoreError
from vaultlens.fsutil import atomic_write
from vaultlens.index.lock import WriterLock
from vaultlens.index.store import Store, StoreBackend

POINTER = "current"
GRACE_S = 0.5  # readers that resolved the old pointer just before a switch get this long to open it


class IndexHome:
    """One vault's index root and the backend whose stores live in it."""

    def __init__(self, root: Path, backend: StoreBackend) -> None:
        self.root = root
        self.backend = backend

    # ---- where the live store is ----------------------------------------------------------
    def _pointer(self) -> str | None:
        try:
            name = (self.root / POINTER).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):  # none yet, or a home that cannot be read (said elsewhere)
            return None
        return name if re.fullmatch(r"r\d+", name) else None

    def live_dir(self) -> Path:
        """The folder every command opens: the one the pointer names, else the root itself."""
        name = self._pointer()
        return self.root / name if name else self.root

    def has_index(self) -> bool:
        return self.backend.exists(self.live_dir())

    def writer_lock(self) -> WriterLock:
        """The one writer lock of the live index; every writer (index, watch, clear, rebuild) takes it."""
        return WriterLock(self.root)

    def open_live(self, create: bool = False) -> tuple[Path, Store]:
        """Open the live store; a pointer that moves while opening is re-read."""
        for _ in range(5):
            live = self.live_dir()
            if not create and not self.backend.exists(live):
                if self.live_dir() != live:
                    continue
                raise IndexNotFound(
                    "There is no index for this vault yet.", hint="Run `vaultlens index` to build it."
                )
            try:
                store = self.backend.open(live, create)
            except IndexNotFound:  # removed between the check and the open (a rebuild started over)
                if self.live_dir() != live:
                    continue
                raise
            if self.live_dir() == live:
                return live, store
            store.close()
        raise StoreError("The index keeps moving; another process is switching it.")

    def start_over(self) -> Path:
        """Make a new, empty folder live and delete the old store (a foreground rebuild's wipe).

        A store is never re-created where one was: a reader in another process may still hold the
        old files open, and SQLite works on a database's ``-wal`` and ``-shm`` by name, so a new
        store at the same path could be damaged by it (seen: "database disk image is malformed"
        and "disk I/O error" in a rebuild racing searches). Readers find no index until the
        rebuild creates it, as with a wipe in place."""
        self.collect_garbage()
        stage = self.staging_dir()
        with WriterLock(stage, "an unfinished background rebuild"):  # refused while one builds there
            self.backend.wipe(stage)
            old = self.switch_to(stage)
        self.retire(old)
        return stage

    # ---- background rebuilds ----------------------------------------------------------------
    def _number(self, directory: Path) -> int:
        """k of ``r<k>``; 0 for the root itself (an index from before any background rebuild)."""
        return 0 if directory == self.root else int(directory.name[1:])

    def _numbered(self) -> dict[int, Path]:
        if not self.root.is_dir():
            return {}
        return {
            int(p.name[1:]): p for p in self.root.iterdir() if p.is_dir() and re.fullmatch(r"r\d+", p.name)
        }

    def staging_dir(self) -> Path:
        """The folder a background rebuild builds in: an unfinished one if any, else the next number."""
        live_k = self._number(self.live_dir())
        above = [k for k in self._numbered() if k > live_k]
        return self.root / f"r{max(above) if above else live_k + 1}"

    def switch_to(self, stage: Path) -> Path:
        """Point the root at ``stage`` atomically and durably; returns the folder that was live."""
        old = self.live_dir()
        atomic_write(self.root / POINTER, stage.name + "\n")
        return old

    def retire(self, old: Path) -> None:
        """Delete a store that is no longer live, after a grace period for readers that just resolved it."""
        time.sleep(GRACE_S)
        self._remove(old)

    def _remove(self, directory: Path) -> None:
        """Wipe the store of a folder that is no longer live (a database backend keeps it elsewhere), then the folder."""
        self.backend.wipe(directory)
        if directory != self.root:
            shutil.rmtree(directory, ignore_errors=True)

    def collect_garbage(self) -> None:
        """Delete what a switch left behind (a kill between the pointer and the deletion)."""
        live = self.live_dir()
        live_k = self._number(live)
        for k, d in self._numbered().items():
            if k < live_k:
                self._remove(d)
        if live != self.root:
            self.backend.wipe(self.root)

    def discard_stale_staging(self) -> int:
        """Delete unfinished builds nobody is working on (``clear`` must not let one come back)."""
        live_k = self._number(self.live_dir())
        removed = 0
        for k, d in self._numbered().items():
            if k > live_k:
                try:
                    with WriterLock(d):
                        self.backend.wipe(d)
                except IndexLocked:
                    continue  # a rebuild is running there; it owns the folder
                shutil.rmtree(d, ignore_errors=True)
                removed += 1
        return removed

    @contextmanager
    def live_lock(self, wait: float) -> Iterator[None]:
        """The live writer lock, waiting up to ``wait`` seconds for its holder (e.g. `watch`)."""
        deadline = time.monotonic() + wait
        lock = self.writer_lock()
        while True:
            try:
                lock.acquire()
                break
            except IndexLocked as exc:
                if time.monotonic() >= deadline:
                    raise IndexLocked(
                        f"The new index is complete, but the live index is busy: {exc.message}",
                        hint="Stop that process (a running `vaultlens watch`?) and run `vaultlens rebuild "
                        "--background` again: it switches at once without re-embedding anything.",
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            lock.release()


@dataclass
class _Open:
    directory: Path
    store: Store
    leases: int = 0
    retired: bool = False


class LiveStore:
    """The live store of one index, shared by every thread of a process (readers and one writer)."""

    def __init__(self, home: IndexHome) -> None:
        self.home = home
        self._lock = threading.Lock()
        self._current: _Open | None = None
        self._retired: list[_Open] = []

    @contextmanager
    def lease(self, create: bool = False) -> Iterator[Store]:
        """The live store, kept open for the block even if a switch happens meanwhile."""
        entry = self._acquire(create)
        try:
            yield entry.store
        finally:
            self._release(entry)

    @contextmanager
    def reading(self) -> Iterator[Store]:
        """A lease plus a snapshot: every read in the block sees one committed generation."""
        with self.lease() as store, store.snapshot():
            yield store

    def _acquire(self, create: bool) -> _Open:
        with self._lock:
            live = self.home.live_dir()
            cur = self._current
            if cur is None or cur.directory != live or (create and not self.home.backend.exists(live)):
                if cur is not None:
                    self._retire(cur)
                directory, store = self.home.open_live(create)
                cur = self._current = _Open(directory, store)
            cur.leases += 1
            return cur

    def _release(self, entry: _Open) -> None:
        with self._lock:
            entry.leases -= 1
            if entry.retired and entry.leases == 0:
                entry.store.close()
                self._retired.remove(entry)

    def _retire(self, entry: _Open) -> None:
        self._current = None
        entry.retired = True
        if entry.leases == 0:
            entry.store.close()
        else:
            self._retired.append(entry)

    def reset(self) -> None:
        """Forget the open store (it is closed once its last lease ends): the next lease reopens."""
        with self._lock:
            if self._current is not None:
                self._retire(self._current)

    def close(self) -> None:
        self.reset()
