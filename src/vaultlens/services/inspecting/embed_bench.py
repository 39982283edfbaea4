"""What the embedding model does on this machine: `vaultlens bench embed`.

A built-in sample (no vault, no network): note-like passages of 1 to 12 sentences in English and
Russian, about the lengths the chunker makes. Reported: passages per second through the provider
(``embed`` in its batches, as the indexer calls it), chunks per second counted in index chunks of
~600 characters, and the ratio of that time to the model-only time on the same texts (the forward
pass over already-made tokens for the bundled model, the engine's own encode for the e5 tier):
how much the wrapper around the model costs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from vaultlens.embedding.base import EmbeddingSpace, Vectors
from vaultlens.services.serial import AsDict

SENTENCES = (
    "The backup script copies the vault to the external drive every night at two.",
    "Meeting notes from the planning session: the release moves to the second week of March.",
    "Sourdough needs a starter fed twelve hours before mixing, then a long cold proof.",
    "A graph view shows which notes link to this one and which tags they share.",
    "The hiking trail climbs eight hundred metres through pine forest to the ridge.",
    "Spaced repetition works best with short cards that ask one thing each.",
    "Резервная копия хранилища делается каждую ночь на внешний диск.",
    "На встрече решили перенести выпуск на вторую неделю марта.",
    "Тропа поднимается на восемьсот метров через сосновый лес к перевалу.",
    "Карточки для повторения лучше делать короткими, по одному вопросу в каждой.",
    "Index the vault once, then only changed notes are embedded again.",
    "Заметки о книге: главная мысль в том, что привычки складываются из мелких шагов.",
)
SAMPLE_SIZE = 96
CHUNK_CHARS = 600  # about an index chunk's embedded text (docs/benchmarks.md: 643 on average)


def sample_texts(n: int = SAMPLE_SIZE) -> list[str]:
    """``n`` passages of 1 to 12 sentences, the same on every machine."""
    out = []
    for i in range(n):
        length = 1 + (i * 7) % 12
        out.append(" ".join(SENTENCES[(i + k) % len(SENTENCES)] for k in range(length)))
    return out


class Embedder(Protocol):
    """What is timed: the main provider or the quality tier (both embed passages in batches)."""

    space: EmbeddingSpace
    batch_size: int

    def embed(self, texts: Sequence[str]) -> Vectors: ...


@runtime_checkable
class ModelTimed(Protocol):
    """A local provider that can time its model alone on ``texts`` (seconds)."""

    def model_seconds(self, texts: Sequence[str]) -> float: ...


@dataclass(frozen=True, slots=True)
class EmbedBench(AsDict):
    model: str
    texts: int
    characters: int
    threads: int
    batch_size: int
    seconds: float
    docs_per_s: float
    chunks_per_s: float  # characters / CHUNK_CHARS per second
    model_seconds: float | None  # the model alone on the same texts; None when it cannot be timed
    ratio_to_model: float | None  # seconds / model_seconds
    load_average: float


def bench_embed(provider: Embedder, threads: int, texts: Sequence[str]) -> EmbedBench:
    """Time ``provider`` on ``texts`` (after one warm-up call that loads the model), then its model alone."""
    provider.embed(list(texts[:1]))
    step = max(1, provider.batch_size)
    started = time.perf_counter()
    for i in range(0, len(texts), step):
        provider.embed(list(texts[i : i + step]))
    seconds = time.perf_counter() - started
    model_s = provider.model_seconds(texts) if isinstance(provider, ModelTimed) else None
    chars = sum(len(t) for t in texts)
    return EmbedBench(
        model=provider.space.model,
        texts=len(texts),
        characters=chars,
        threads=threads,
        batch_size=provider.batch_size,
        seconds=round(seconds, 3),
        docs_per_s=round(len(texts) / seconds, 1),
        chunks_per_s=round(chars / CHUNK_CHARS / seconds, 1),
        model_seconds=round(model_s, 3) if model_s is not None else None,
        ratio_to_model=round(seconds / model_s, 3) if model_s else None,
        load_average=round(os.getloadavg()[0], 2),
    )
