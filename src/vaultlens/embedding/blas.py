"""BLAS threads of a process that answers searches (`serve`).

A search is a query's embedding and a few matrix-vector products over the index's vectors. On
all cores, each product waits for its slowest BLAS thread, and idle OpenBLAS threads spin: on a
busy machine a search then waits for descheduled siblings (issue 26). The bundled model's query
path already runs on ``embedding.query_threads``; this puts the rest of the process there too.
"""

from __future__ import annotations

import os

from vaultlens.config.settings import EmbeddingSettings


def answer_queries(s: EmbeddingSettings) -> int:
    """From now on, this process's BLAS calls run on ``embedding.query_threads`` threads (0: as many
    as ``embedding.threads``), except the bundled model's batches, which set theirs per call and
    restore these. Returns the thread count."""
    import numpy  # noqa: F401  (its BLAS library must be loaded to be limited)
    from threadpoolctl import threadpool_limits

    threads = s.query_threads or s.threads or os.cpu_count() or 1
    threadpool_limits(limits=threads, user_api="blas")
    return threads
