"""What a quality tier is: a second model whose vectors sit beside the main ones.

The bundled USE model stays the fast default; a tier adds a stronger, slower model's vectors,
filled after each index run (:mod:`vaultlens.index.indexing.tier_fill`) and mixed into search
(:mod:`vaultlens.services.finding.search`). A tier embeds queries and passages separately because the
models worth having as a tier were trained with different prefixes for the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from vaultlens.chunking.scripts import script_mix
from vaultlens.embedding.base import EmbeddingSpace, Vectors


class TierProvider(Protocol):
    """A second model. A tier that reads one language only also sets ``english_only = True``
    (optional: see :func:`reads`)."""

    space: EmbeddingSpace
    batch_size: int

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of note passages, one row per text."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of search queries, one row per text."""
        ...


def one_language(tier: TierProvider) -> bool:
    """Whether ``tier``'s model reads one language only (``english_only``): a specialist of it."""
    return bool(getattr(tier, "english_only", False))


def reads(tier: TierProvider, query: str) -> bool:
    """Whether ``tier``'s model understands ``query``: an English-only model does not read a query
    written mostly in Cyrillic (its vector would be noise, so search leaves the tier out for it)."""
    return not one_language(tier) or script_mix(query).cyrillic_share < 0.5
