"""Follow a vault's file events and keep the index current: coalesce, debounce, flush.

Events only say *which* paths to look at; what the index gets is read from disk at flush
time, so a burst of saves costs one update with the last saved version, and a path that
was created and removed again costs nothing. Folder events are kept as folders and
listed at flush time (a moved folder = every note under the old prefix gone, every note
under the new one found). When events may have been lost (kernel queue overflow, a dead
observer thread, a failed flush) the watcher does a full reconcile instead of guessing.

A batch is flushed after ``debounce`` of quiet, or at the latest ``max_wait`` after its first
event, so a note saved again and again (an editor's autosave) still reaches the index. A quality
tier fill (minutes on a large vault) lets a due batch in between two of its batches, so edits and
deletions never wait for the whole fill; setting the stop event ends a fill at its next model call.

Symlinked folders are not followed (each would be watched, and reported, a second time; a link
to an enclosing folder would be followed without end). The vault folder itself is checked every
second: once it was moved away, deleted or replaced, events no longer describe the path the
index belongs to, so the watcher stops with a :class:`VaultError` instead of guessing (see
:meth:`Watcher.run`).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

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

from vaultlens.chunking.attachments import KINDS
from vaultlens.errors import TRANSLATED, Cancelled, VaultError, VaultlensError, translate_error
from vaultlens.index.indexing.indexer import Indexer
from vaultlens.index.progress import NoProgress
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
# a batch waits at most this long after its first event (the default of watch.max_wait_ms)
DEFAULT_MAX_WAIT_S = 10.0
# never follow a symlinked folder: it would be watched twice, or without end for a link to a parent
FOLLOW_SYMLINKS = False
# a flush that fails with one of these waits and reconciles; anything else is a bug and stops watch
RECOVERABLE: tuple[type[Exception], ...] = (VaultlensError, *TRANSLATED)

# the files an event may change in the index: notes, and the attachments index.attachments may name
_READ_SUFFIXES = (".md", *KINDS)


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
        self._first = 0.0  # when the oldest pending change arrived
        self._last = 0.0  # when the newest one did
        self.root_deleted = False  # the watched folder itself was deleted

    def _pending(self) -> bool:
        return bool(self._intents or self._folders or self._full)

    def _touch(self) -> None:
        """Note the time of a change (call before recording it)."""
        now = self._clock()
        if not self._pending():
            self._first = now
        self._last = now

    def _rel(self, path: bytes | str) -> str | None:
        rel = os.path.relpath(os.fsdecode(path), self.root)
        if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
            return None
        return rel.replace(os.sep, "/")

    def add(self, event: FileSystemEvent) -> None:
        src = self._rel(event.src_path)
        if src is None and event.is_directory and event.event_type == "deleted":
            if os.path.realpath(os.fsdecode(event.src_path)) == self.root:
                self.root_deleted = True  # inotify's IN_DELETE_SELF: a new folder there is not watched
            return
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
        if _hidden(parts[:-1]) or not rel.lower().endswith(_READ_SUFFIXES):
            return
        self._touch()
        self._intents[rel] = intent

    def _folder(self, rel: str | None) -> None:
        if rel is None or _hidden(rel.split("/")):
            return
        self._touch()
        self._folders.add(rel)

    def request_full(self, reason: str) -> None:
        """Ask for a full reconcile at the next flush (events may have been lost)."""
        with self._lock:
            self._request_full(reason)

    def _request_full(self, reason: str) -> None:
        self._touch()
        self._full = self._full or reason

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

    def due(self, debounce_s: float, max_wait_s: float | None = None) -> float | None:
        """When (on the coalescer's clock) the pending batch is ready: ``debounce_s`` after its
        last event, but never later than ``max_wait_s`` after its first; None if nothing is pending."""
        with self._lock:
            return self._due(debounce_s, max_wait_s)

    def _due(self, debounce_s: float, max_wait_s: float | None) -> float | None:
        if not self._pending():
            return None
        due = self._last + debounce_s
        return due if max_wait_s is None else min(due, self._first + max_wait_s)

    def ready(self, debounce_s: float, max_wait_s: float | None = None) -> Batch | None:
        """The pending batch if it is :meth:`due` now and needs no full reconcile (None otherwise,
        and nothing is drained): what a flush between two batches of a tier fill may take."""
        with self._lock:
            due = self._due(debounce_s, max_wait_s)
            if due is None or self._full or self._clock() < due:
                return None
            return self._drain()

    def wait(
        self,
        debounce_s: float,
        stop: threading.Event,
        timeout: float = 1.0,
        max_wait_s: float | None = None,
    ) -> Batch | None:
        """The pending batch once it is :meth:`due` (events that keep coming delay it by at most
        ``max_wait_s``); None after ``timeout`` with nothing ready, or when ``stop`` is set."""
        deadline = self._clock() + timeout
        while not stop.is_set():
            with self._lock:
                now = self._clock()
                due = self._due(debounce_s, max_wait_s)
                if due is not None and now >= due:
                    return self._drain()
                left = (deadline if due is None else due) - now
            if due is None and left <= 0:
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
            _Forward(self.coalescer),
            str(self.root),
            recursive=True,
            event_filter=WATCHED_EVENTS,
            follow_symlink=FOLLOW_SYMLINKS,
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

    def as_dict(self) -> dict[str, Any]:
        """One JSON object per flush: kind, unix time, the run's counters (None for an error),
        the reason of a reconcile or an error, and the seconds until an error's retry."""
        return {
            "kind": self.kind,
            "time": self.at,
            "stats": self.stats.as_dict() if self.stats is not None else None,
            "reason": self.reason,
            "retry_s": self.retry_s,
        }


def root_identity(root: Path) -> tuple[int, int] | None:
    """(st_dev, st_ino) of the folder at ``root`` now; None when nothing (or no folder) is there."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


class VaultMoved(VaultError):
    """The watched vault folder was moved away, deleted or replaced (same code as VaultError:
    callers that follow the folder, like ``serve``, tell it from other refusals by its type)."""


def vault_moved(root: Path) -> VaultMoved:
    return VaultMoved(
        f"The vault folder {root} was moved or deleted while watching it; stopped watching "
        "(the index is up to date with the last flush).",
        hint="Restart `vaultlens watch` (with --vault pointing at the folder's new place).",
    )


class Watcher:
    """Reconcile at start, then flush coalesced events after ``debounce_s`` of quiet (or at the
    latest ``max_wait_s`` after the first of them) until ``stop``.

    The observer starts before the startup reconcile, so edits made during it are not lost.
    The caller holds the writer lock for the watcher's lifetime.

    The vault folder's identity (device and inode) is checked before every flush and at least
    every second. When the folder was moved away, deleted or replaced by another one, the
    watcher raises :class:`VaultError` ("moved or deleted; restart watch") rather than follow
    the path again: the kernel watches follow the moved folder (its events would be applied to
    the old path), a folder that appears at the old path may be another vault (a full reconcile
    would silently swap the whole index, and send its text to the provider), and an index
    belongs to a vault's path, not to the folder that was there. Stopping loses nothing: the index is what the last flush
    left, and the next `watch` or `index` reconciles.
    """

    def __init__(
        self,
        indexer: Indexer,
        debounce_s: float,
        on_flush: Callable[[FlushReport], None],
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
        progress_in_flushes: bool = False,
    ) -> None:
        self.indexer = indexer
        self.progress_in_flushes = progress_in_flushes  # a page follows every flush's tier fill
        self.debounce_s = debounce_s
        self.max_wait_s = max(max_wait_s, debounce_s)
        self.on_flush = on_flush
        self.coalescer = Coalescer(indexer.vault)
        self._failures = 0
        self._identity: tuple[int, int] | None = None

    def run(self, stop: threading.Event) -> None:
        """Watch until ``stop`` is set (a fill or a run in progress then ends at its next batch)."""
        self._identity = root_identity(self.indexer.vault)
        if self._identity is None:
            raise vault_moved(self.indexer.vault)
        self.indexer.stop = stop
        self.indexer.between_batches = lambda: self._between(stop)
        try:
            self._run(stop)
        except Cancelled:
            if not stop.is_set():
                raise
        finally:
            self.indexer.stop = self.indexer.between_batches = None

    def _run(self, stop: threading.Event) -> None:
        with VaultObserver(self.indexer.vault, self.coalescer) as observer:
            self.on_flush(FlushReport("startup", time.time(), self.indexer.run()))
            if not self.progress_in_flushes:
                self.indexer.progress = NoProgress()  # a terminal shows bars for the startup run only
            while not stop.is_set():
                self.check_root()
                self._check_observer(observer)
                batch = self.coalescer.wait(self.debounce_s, stop, max_wait_s=self.max_wait_s)
                if batch:
                    self.check_root()  # events from a moved folder must not touch the old path
                    self._flush(batch, stop)

    def _check_observer(self, observer: VaultObserver) -> None:
        """Restart a dead observer; the events it missed are found by a full reconcile."""
        if not observer.healthy():
            try:
                observer.restart()
            except OSError:
                self.check_root()  # the folder went away in between: say so
                raise
            self.coalescer.request_full("the file watcher stopped and was restarted")

    def _between(self, stop: threading.Event) -> None:
        """Between two batches of a tier fill: flush the changes that are due, so an edit or a
        deletion reaches search after one batch, however long the fill. The fill takes the new
        texts itself; a full reconcile waits for the fill's end."""
        if stop.is_set():
            return  # the fill checks ``stop`` itself
        self.check_root()
        batch = self.coalescer.ready(self.debounce_s, self.max_wait_s)
        if not batch:
            return
        # the fill's progress stays on screen (and on the page): this flush shows none
        progress, self.indexer.progress = self.indexer.progress, NoProgress()
        try:
            self._flush(batch, stop, retry_wait=False)
        finally:
            self.indexer.progress = progress

    def check_root(self) -> None:
        """Raise VaultError when the vault folder is no longer the one being watched."""
        if self.coalescer.root_deleted or root_identity(self.indexer.vault) != self._identity:
            raise vault_moved(self.indexer.vault)

    def _flush(self, batch: Batch, stop: threading.Event, retry_wait: bool = True) -> None:
        """Apply one batch and report it. A failure is reported and turned into a full reconcile,
        after a growing wait (``retry_wait``; a flush inside a fill leaves the wait to the loop)."""
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
            wait = min(MAX_RETRY_S, 2.0**self._failures) if retry_wait else 0.0
            self.on_flush(FlushReport("error", time.time(), reason=str(error), retry_s=wait))
            stop.wait(wait)
            self.coalescer.request_full(f"retry after: {error.message}")
            return
        self._failures = 0
        self.on_flush(report)
