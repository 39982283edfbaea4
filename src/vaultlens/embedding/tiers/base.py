"""What a quality tier is: a second model whose vectors sit beside the main ones.

The bundled USE model stays the fast default; a tier adds a stronger, slower model's vectors,
filled after each index run (:mod:`vaultlens.index.tier_fill`) and mixed into search
(:mod:`vaultlens.services.search`). A tier embeds queries and passages separately because the
models worth having as a tier were trained with different prefixes for the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from vaultlens.embedding.base import EmbeddingSpace, Vectors


class TierProvider(Protocol):
    space: EmbeddingSpace
    batch_size: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of note passages, one row per text."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of search queries, one row per text."""
        ...
