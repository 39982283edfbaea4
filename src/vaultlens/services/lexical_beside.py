"""The lexical stage of a search on another thread, while the search's own thread finds the dense
candidates: on a large index the two cost about the same and neither needs the other's result.

Both backends read through a connection per thread, and their SQL runs without the GIL, so the
two stages overlap on two cores. The worker opens its own snapshot; it answers only if that
snapshot holds the caller's generation (every commit moves the generation on), so a search still
reads one committed state. When a writer committed between the two, the caller's thread runs the
stage itself in its own snapshot, as it would have without the worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from vaultlens.index.store import LexicalHits, Store

# Chunks from which the lexical stage runs beside the dense one. Below, the whole search takes a few
# milliseconds and the hand-over to a worker is not worth it (docs/benchmarks.md, "The lexical
# stage beside the dense one").
BESIDE_FROM_CHUNKS = 50_000
WORKERS = 4  # searches in flight at once on a server; a fifth waits for a worker, never fails

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="vaultlens-lexical")
        return _pool


def _in_generation(
    store: Store, generation: int, terms: Sequence[str], chunk_limit: int, note_limit: int
) -> LexicalHits | None:
    with store.snapshot() as seen:
        return store.lexical(terms, chunk_limit, note_limit) if seen == generation else None


def lexical_beside(
    store: Store, generation: int, terms: Sequence[str], chunk_limit: int, note_limit: int
) -> Callable[[], LexicalHits]:
    """``store.lexical(terms, chunk_limit, note_limit)`` of the caller's snapshot (of ``generation``),
    started now on a worker when the index is large enough; the returned call gives its result."""
    if store.counts().chunks < BESIDE_FROM_CHUNKS:
        return lambda: store.lexical(terms, chunk_limit, note_limit)
    job: Future[LexicalHits | None] = _workers().submit(
        _in_generation, store, generation, terms, chunk_limit, note_limit
    )

    def result() -> LexicalHits:
        hits = job.result()
        return store.lexical(terms, chunk_limit, note_limit) if hits is None else hits

    return result
