"""Lexical terms for full-text search: lower-cased word stems, Russian and English aware.

FTS5 has no Russian stemmer, so terms are stemmed here (Snowball via PyStemmer) and
stored pre-stemmed; queries go through the same function, so both sides always agree.
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")


@lru_cache(maxsize=1)
def _stemmers() -> tuple[Stemmer.Stemmer, Stemmer.Stemmer]:
    return Stemmer.Stemmer("russian"), Stemmer.Stemmer("english")


def terms(text: str) -> list[str]:
    """Stemmed terms in order (duplicates kept, so term frequency survives)."""
    ru, en = _stemmers()
    words = _WORD.findall(text.lower().replace("ё", "е"))
    cyr = [w for w in words if _CYRILLIC.search(w)]
    stems_ru = dict(zip(cyr, ru.stemWords(cyr), strict=True)) if cyr else {}
    lat = [w for w in words if w not in stems_ru and not w.isdigit()]
    stems_en = dict(zip(lat, en.stemWords(lat), strict=True)) if lat else {}
    return [stems_ru.get(w) or stems_en.get(w) or w for w in words]


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: any of the query's distinct terms, each quoted."""
    seen: dict[str, None] = {}
    for t in terms(text):
        seen.setdefault(t, None)
    return " OR ".join(f'"{t}"' for t in seen)
