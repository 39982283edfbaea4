"""``embedding.tier`` -> the tier provider it names (None when off)."""

from __future__ import annotations

from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.tiers.base import TierProvider
from vaultlens.embedding.tiers.e5 import E5Tier


def make_tier(s: EmbeddingSettings) -> TierProvider | None:
    """The tier ``embedding.tier`` names, or None when it is off (the model loads on first use)."""
    if s.tier == "off":
        return None
    return E5Tier(threads=s.threads)
