"""Part of a search on another thread while the search's own thread does the rest: on a large index
the lexical stage's chunk rows cost about what the dense stage and the note rows cost together, and
neither needs the other's result.

Both backends read through a connection per thread, and their SQL runs without the GIL (SQLite's
without its allocation mutex too: index/sqlite/threads.py), so the two overlap on two cores. The
worker opens its own snapshot; it answers only if that snapshot holds the caller's generation (every
commit moves the generation on), so a search still reads one committed state. When a writer
committed between the two, the caller's thread does the work itself in its own snapshot, as it would
have without the worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from vaultlens.index.store import StoreState

T = TypeVar("T")

# Chunks from which the work runs beside. Below, the whole search takes a few milliseconds and the
# hand-over to a worker is not worth it (docs/benchmarks.md, "The lexical stage beside the dense one").
BESIDE_FROM_CHUNKS = 50_000
WORKERS = 4  # searches in flight at once on a server; a fifth waits for a worker, never fails

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="vaultlens-beside")
        return _pool


def _in_generation(store: StoreState, generation: int, work: Callable[[], T]) -> tuple[T] | None:
    with store.snapshot() as seen:
        return (work(),) if seen == generation else None


def beside(store: StoreState, generation: int, work: Callable[[], T]) -> Callable[[], T]:
    """``work()`` (store reads) in the caller's snapshot, of ``generation``: started now on a worker when
    the index is large enough, else left to the returned call, which gives its result either way."""
    if store.counts().chunks < BESIDE_FROM_CHUNKS:
        return work
    job: Future[tuple[T] | None] = _workers().submit(_in_generation, store, generation, work)

    def result() -> T:
        answer = job.result()
        return work() if answer is None else answer[0]

    return result
