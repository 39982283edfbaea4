"""The process's BLAS thread count: one setting shared by every thread that needs one.

OpenBLAS has one thread pool per process, so its thread count is process-wide. Two callers that
each set and restore it (the bundled model's calls, of which the indexer keeps two in flight, or a
search beside a watcher's batch) would hand each other the wrong count: one call's restore gives
the other's single-threaded workers a full pool each. And threadpoolctl (3.8) lets only one
"controlling" thread change it, silently ignoring the others. Here every change is made under one
lock, after taking control: the first call in sets the count, the last one out restores it.

`serve` also pins the count for a search's products (:func:`answer_queries`): a search is a
query's embedding and a few matrix-vector products, and on all cores each product waits for its
slowest BLAS thread while idle OpenBLAS threads spin, so on a busy machine a search waits for
descheduled siblings (issue 26).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from vaultlens.config.settings import EmbeddingSettings

_LOCK = threading.Lock()
_users = 0  # calls inside blas_threads now
_outer: Any = None  # the first one's limiter: it holds the count to restore
_controller: list[Any] = []


def _set(threads: int) -> Any:
    """Set the count from this thread (taking control from whichever thread held it); the
    returned limiter restores the count found."""
    import numpy  # noqa: F401  (its BLAS library must be loaded to be limited)
    from threadpoolctl import ThreadpoolController

    if not _controller:
        _controller.append(ThreadpoolController())
    _take_control()
    return _controller[0].limit(limits=threads, user_api="blas")


def _take_control() -> None:
    from threadpoolctl import OpenBLASController

    clear = getattr(OpenBLASController, "clear_controlling_thread", None)  # threadpoolctl >= 3.8
    if clear is not None:
        clear(force=True)


@contextmanager
def blas_threads(threads: int) -> Iterator[None]:
    """BLAS on ``threads`` threads while inside; a call that starts while another is inside runs
    on the count the first one set (the cores are busy with that one's work anyway)."""
    global _users, _outer
    with _LOCK:
        if _users == 0:
            _outer = _set(threads)
        _users += 1
    try:
        yield
    finally:
        with _LOCK:
            _users -= 1
            if _users == 0:
                _take_control()
                _outer.restore_original_limits()
                _outer = None


def answer_queries(s: EmbeddingSettings) -> int:
    """From now on, this process's BLAS calls run on ``embedding.query_threads`` threads (0: as many
    as ``embedding.threads``), except the bundled model's batches, which set theirs while they run
    and restore these. Returns the thread count."""
    threads = s.query_threads or s.threads or os.cpu_count() or 1
    with _LOCK:
        _set(threads)
    return threads
