"""Follow a vault's file events and keep the index current: coalesce, debounce, flush.

Events only say *which* paths to look at; what the index gets is read from disk at flush
time, so a burst of saves costs one update with the last saved version, and a path that
was created and removed again costs nothing. Folder events are kept as folders and
listed at flush time (a moved folder = every note under the old prefix gone, every note
under the new one found). When events may have been lost (kernel queue overflow, a dead
observer thread, a failed flush) the watcher does a full reconcile instead of guessing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from vaultlens.errors import TRANSLATED, Cancelled, VaultlensError, translate_error
from vaultlens.index.indexer import Indexer, NoProgress
from vaultlens.index.runs import RunStats
from vaultlens.vault.scan import IGNORE_FILE

Intent = Literal["upsert", "delete"]

# Only what changes content or names; opens and read-only closes (the indexer's own reads)
# are filtered out by the kernel watch itself.
WATCHED_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]
_UPSERT_EVENTS = {"created", "modified", "closed"}
# a change here changes what is indexed anywhere in the vault
RULE_FILES = {IGNORE_FILE, ".obsidian/app.json"}
MAX_RETRY_S = 60.0
# a flush that fails with one of these waits and reconciles; anything else is a bug and stops watch
RECOVERABLE: tuple[type[Exception], ...] = (VaultlensError, *TRANSLATED)


@dataclass(frozen=True)
class Batch:
    """One flush worth of changes: note paths by their last intent, folders to list, or a full reconcile."""

    upserts: frozenset[str] = frozenset()
    deletes: frozenset[str] = frozenset()
    folders: frozenset[str] = frozenset()
    full: str | None = None  # why a full reconcile is needed instead

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes or self.folders or self.full)


def _hidden(parts: list[str]) -> bool:
    return any(p.startswith(".") for p in parts)


def _outermost(folders: Iterable[str]) -> frozenset[str]:
    """Drop folders inside another listed folder: listing the outer one covers them."""
    ordered = sorted(set(folders))
    kept: list[str] = []
    for f in ordered:
        if not any(f.startswith(k + "/") for k in kept):
            kept.append(f)
    return frozenset(kept)


class Coalescer:
    """Pending changes, last intent per path wins; thread-safe (the observer adds, the flusher drains).

    create/modify -> upsert, delete -> delete, file move -> delete old + upsert new, folder
    create/delete/move -> list that folder (both ends of a move) at flush time.
    """

    def __init__(self, root: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.root = os.path.realpath(root)
        self._clock = clock
        self._lock = threading.Lock()
        self._intents: dict[str, Intent] = {}
        self._folders: set[str] = set()
        self._full: str | None = None
        self._last = 0.0

    def _rel(self, path: bytes | str) -> str | None:
        rel = os.path.relpath(os.fsdecode(path), self.root)
        if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
            return None
        return rel.replace(os.sep, "/")

    def add(self, event: FileSystemEvent) -> None:
        src = self._rel(event.src_path)
        with self._lock:
            if event.event_type == "moved":
                dest = self._rel(event.dest_path)
                if event.is_directory:
                    self._folder(src)
                    self._folder(dest)
                else:
                    self._note(src, "delete")
                    self._note(dest, "upsert")
            elif event.is_directory:
                if event.event_type in ("created", "deleted"):
                    self._folder(src)
            elif event.event_type == "deleted":
                self._note(src, "delete")
            elif event.event_type in _UPSERT_EVENTS:
                self._note(src, "upsert")

    def _note(self, rel: str | None, intent: Intent) -> None:
        if rel is None:
            return
        if rel in RULE_FILES:
            self._request_full(f"{rel} changed")
            return
        parts = rel.split("/")
        if _hidden(parts[:-1]) or not rel.lower().endswith(".md"):
            return
        self._intents[rel] = intent
        self._last = self._clock()

    def _folder(self, rel: str | None) -> None:
        if rel is None or _hidden(rel.split("/")):
            return
        self._folders.add(rel)
        self._last = self._clock()

    def request_full(self, reason: str) -> None:
        """Ask for a full reconcile at the next flush (events may have been lost)."""
        with self._lock:
            self._request_full(reason)

    def _request_full(self, reason: str) -> None:
        self._full = self._full or reason
        self._last = self._clock()

    def drain(self) -> Batch:
        with self._lock:
            return self._drain()

    def _drain(self) -> Batch:
        batch = Batch(
            frozenset(p for p, i in self._intents.items() if i == "upsert"),
            frozenset(p for p, i in self._intents.items() if i == "delete"),
            _outermost(self._folders),
            self._full,
        )
        self._intents.clear()
        self._folders.clear()
        self._full = None
        return batch

    def wait(self, debounce_s: float, stop: threading.Event, timeout: float = 1.0) -> Batch | None:
        """The pending batch once ``debounce_s`` passed without a new event; None after ``timeout``
        with nothing ready, or when ``stop`` is set."""
        deadline = self._clock() + timeout
        while not stop.is_set():
            with self._lock:
                now = self._clock()
                pending = bool(self._intents or self._folders or self._full)
                if pending and now - self._last >= debounce_s:
                    return self._drain()
                left = (self._last + debounce_s if pending else deadline) - now
            if not pending and left <= 0:
                return None
            stop.wait(min(max(left, 0.005), 0.25))
        return None


class _Forward(FileSystemEventHandler):
    def __init__(self, coalescer: Coalescer) -> None:
        self.coalescer = coalescer

    def on_any_event(self, event: FileSystemEvent) -> None:
        self.coalescer.add(event)


class _LostEvents(logging.Handler):
    """watchdog logs, and otherwise swallows, a kernel queue overflow or a failed re-watch."""

    def __init__(self, coalescer: Coalescer) -> None:
        super().__init__(logging.WARNING)
        self.coalescer = coalescer

    def emit(self, record: logging.LogRecord) -> None:
        self.coalescer.request_full(f"file watcher: {record.getMessage()}")


class VaultObserver:
    """A recursive watchdog observer on the vault feeding a :class:`Coalescer`."""

    def __init__(self, root: Path, coalescer: Coalescer) -> None:
        self.root = root
        self.coalescer = coalescer
        self._observer: BaseObserver | None = None
        self._log = _LostEvents(coalescer)

    def start(self) -> None:
        logging.getLogger("watchdog").addHandler(self._log)
        observer = Observer()
        observer.schedule(
            _Forward(self.coalescer), str(self.root), recursive=True, event_filter=WATCHED_EVENTS
        )
        observer.daemon = True
        observer.start()
        self._observer = observer

    def healthy(self) -> bool:
        obs = self._observer
        return obs is not None and obs.is_alive() and all(e.is_alive() for e in obs.emitters)

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        logging.getLogger("watchdog").removeHandler(self._log)
        if self._observer is not None:
            self._observer.stop()
            if self._observer.is_alive():
                self._observer.join(timeout=5)
            self._observer = None

    def __enter__(self) -> VaultObserver:
        self.start()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


FlushKind = Literal["startup", "changes", "reconcile", "error"]


@dataclass(frozen=True)
class FlushReport:
    """What one flush did, for the one-line-per-flush output."""

    kind: FlushKind
    at: float  # wall-clock time.time()
    stats: RunStats | None = None
    reason: str = ""  # why a full reconcile, or the error
    retry_s: float = 0.0  # error: seconds until the retry


class Watcher:
    """Reconcile at start, then flush coalesced events after ``debounce_s`` of quiet until ``stop``.

    The observer starts before the startup reconcile, so edits made during it are not lost.
    The caller holds the writer lock for the watcher's lifetime.
    """

    def __init__(self, indexer: Indexer, debounce_s: float, on_flush: Callable[[FlushReport], None]) -> None:
        self.indexer = indexer
        self.debounce_s = debounce_s
        self.on_flush = on_flush
        self.coalescer = Coalescer(indexer.vault)
        self._failures = 0

    def run(self, stop: threading.Event) -> None:
        with VaultObserver(self.indexer.vault, self.coalescer) as observer:
            self.on_flush(FlushReport("startup", time.time(), self.indexer.run()))
            self.indexer.progress = NoProgress()
            while not stop.is_set():
                if not observer.healthy():
                    observer.restart()
                    self.coalescer.request_full("the file watcher stopped and was restarted")
                batch = self.coalescer.wait(self.debounce_s, stop)
                if batch:
                    self._flush(batch, stop)

    def _flush(self, batch: Batch, stop: threading.Event) -> None:
        try:
            if batch.full:
                report = FlushReport("reconcile", time.time(), self.indexer.run(), batch.full)
            else:
                stats = self.indexer.sync(batch.upserts, batch.deletes, batch.folders)
                report = FlushReport("changes", time.time(), stats)
        except Cancelled:
            raise
        except RECOVERABLE as exc:
            # the drained changes are lost with this flush: reconcile everything once it works again
            # (a full disk or a locked database is a reason to wait, never to stop watching)
            error = translate_error(exc)
            self._failures += 1
            wait = min(MAX_RETRY_S, 2.0**self._failures)
            self.on_flush(FlushReport("error", time.time(), reason=str(error), retry_s=wait))
            stop.wait(wait)
            self.coalescer.request_full(f"retry after: {error.message}")
            return
        self._failures = 0
        self.on_flush(report)
