"""Rebuilds: in place (foreground), or next to the live index while it keeps answering (background).

A background rebuild builds folder ``r<k>`` (k above the live index, see
:mod:`vaultlens.config.paths`) under its own writer lock, so the live index keeps its own lock
and its readers. Every batch commits as in a normal run, so a kill leaves the live index
untouched and the next ``rebuild --background`` resumes the same folder. When the build is
complete the live writer lock is taken (a running ``watch`` holds it: the switch waits up to
``switch_wait`` seconds, then reports and keeps the finished build), edits made meanwhile are
caught up, the ``current`` pointer is replaced atomically, and the old folder is deleted.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from vaultlens.config.paths import index_number, live_index_dir, numbered_dirs, write_pointer
from vaultlens.config.settings import Settings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.errors import IndexLocked
from vaultlens.index.indexer import Indexer, Progress, RunStats
from vaultlens.index.lock import WriterLock
from vaultlens.index.sqlite_store import DB_NAME, SQLiteStore, space_matches

# Readers that resolved the old pointer just before the switch get this long to open it.
GRACE_S = 0.5


@dataclass(frozen=True, slots=True)
class RebuildResult:
    stats: RunStats  # the build in the staging folder
    catch_up: RunStats  # edits made during the build, applied under the live lock
    index_dir: Path  # the new live folder
    resumed: bool  # an earlier, interrupted build was continued


def store_files(directory: Path) -> list[Path]:
    """The files one store consists of (never the lock, the pointer or other folders)."""
    if not directory.is_dir():
        return []
    return [
        p
        for p in directory.iterdir()
        if p.is_file() and (p.name.startswith(DB_NAME) or p.name.startswith(("matrix-", ".matrix-")))
    ]


def wipe_store(directory: Path) -> None:
    for p in store_files(directory):
        p.unlink(missing_ok=True)


def staging_dir(root: Path) -> Path:
    """The folder a background rebuild builds in: an unfinished one if any, else the next number."""
    live_k = index_number(root, live_index_dir(root))
    above = [k for k in numbered_dirs(root) if k > live_k]
    return root / f"r{max(above) if above else live_k + 1}"


def collect_garbage(root: Path) -> None:
    """Delete what a switch left behind (a kill between the pointer and the deletion)."""
    live = live_index_dir(root)
    live_k = index_number(root, live)
    for k, d in numbered_dirs(root).items():
        if k < live_k:
            shutil.rmtree(d, ignore_errors=True)
    if live != root:
        wipe_store(root)


def discard_stale_staging(root: Path) -> int:
    """Delete unfinished builds nobody is working on (``clear`` must not let one come back)."""
    live_k = index_number(root, live_index_dir(root))
    removed = 0
    for k, d in numbered_dirs(root).items():
        if k > live_k:
            try:
                with WriterLock(d):
                    wipe_store(d)
            except IndexLocked:
                continue  # a rebuild is running there; it owns the folder
            shutil.rmtree(d, ignore_errors=True)
            removed += 1
    return removed


@contextmanager
def live_lock(root: Path, wait: float) -> Iterator[None]:
    """The live writer lock, waiting up to ``wait`` seconds for its holder (e.g. `watch`)."""
    deadline = time.monotonic() + wait
    lock = WriterLock(root)
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


def rebuild_background(
    root: Path,
    vault: Path,
    provider: EmbeddingProvider,
    settings: Settings,
    progress: Progress | None = None,
    switch_wait: float = 30.0,
) -> RebuildResult:
    """Build the configured space next to the live index, then switch to it atomically."""
    collect_garbage(root)
    stage = staging_dir(root)
    with WriterLock(stage):  # one rebuild per staging folder; the live lock stays free meanwhile
        store = SQLiteStore(stage)
        if store.space is not None and not space_matches(store.space, provider.space):
            store.close()  # an unfinished build for yet another space: start over
            wipe_store(stage)
            store = SQLiteStore(stage)
        resumed = store.counts()["chunks"] > 0
        try:
            stats = Indexer(vault, store, provider, settings, progress).run()
            with live_lock(root, switch_wait):
                catch_up = Indexer(vault, store, provider, settings).run()
                old = live_index_dir(root)
                write_pointer(root, stage.name)
        finally:
            store.close()
    time.sleep(GRACE_S)
    if old == root:
        wipe_store(root)
    else:
        shutil.rmtree(old, ignore_errors=True)
    return RebuildResult(stats, catch_up, stage, resumed)
