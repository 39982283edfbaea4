"""The script a text is written in: Cyrillic (``ru``) or Latin (``en``) letters of its prose.

One rule for the two places that ask: the duplicate finder (a note's language, to tell a translation
from a copy: :mod:`vaultlens.services.finding.note_profile`) and ``embedding.tier = auto`` (the vault's mix, to
pick an English-only or a multilingual second model: :mod:`vaultlens.index.indexing.tier_fill`). Code spans,
link targets, tags and URLs are not prose: they are Latin in every language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LANG_MIN_LETTERS = 20  # a note's language is its script: Cyrillic >= 50% of its prose letters, Latin >= 85%
CYRILLIC = re.compile(r"[\u0400-\u04ff]+")
LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]+")
# not prose: inline code, link targets, HTML tags, URLs, heading ids / include markers, wiki-link targets
NOT_PROSE = re.compile(r"`[^`\n]*`|\]\([^)\n]*\)|<[^>\n]*>|https?://\S+|\{\s*[#*][^}\n]*\}|\[\[[^\]|\n]*\|?")


@dataclass(frozen=True, slots=True)
class ScriptMix:
    """Prose letters in each script."""

    cyrillic: int = 0
    latin: int = 0

    def __add__(self, other: ScriptMix) -> ScriptMix:
        return ScriptMix(self.cyrillic + other.cyrillic, self.latin + other.latin)

    @property
    def letters(self) -> int:
        return self.cyrillic + self.latin

    @property
    def cyrillic_share(self) -> float:
        """Cyrillic letters among the letters of both scripts (0.0 for a text with none)."""
        return self.cyrillic / self.letters if self.letters else 0.0

    def language(self) -> str | None:
        """``ru`` (Cyrillic >= 50%), ``en`` (Latin >= 85%), or None: mixed, or too few letters to say."""
        if self.letters < LANG_MIN_LETTERS:
            return None
        share = self.cyrillic_share
        return "ru" if share >= 0.5 else "en" if share <= 0.15 else None


def script_mix(text: str) -> ScriptMix:
    """The letters of ``text``'s prose (code spans, link targets and URLs left out) in each script."""
    prose = NOT_PROSE.sub(" ", text)
    return ScriptMix(sum(map(len, CYRILLIC.findall(prose))), sum(map(len, LATIN.findall(prose))))
