"""``embedding.tier`` -> the tier provider it names (None when off)."""

from __future__ import annotations

from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.tiers.base import TierProvider
from vaultlens.embedding.tiers.e5 import E5Tier
from vaultlens.embedding.tiers.remote import make_remote_tier


def make_tier(s: EmbeddingSettings) -> TierProvider | None:
    """The tier ``embedding.tier`` names, or None when it is off (the model loads on first use)."""
    if s.tier == "off":
        return None
    if ":" in s.tier:  # TEMPORARY (branch tremote): register_tier_form(kind, TIER_FORMS[kind]) replaces this
        return make_remote_tier(s)
    return E5Tier(threads=s.threads)
