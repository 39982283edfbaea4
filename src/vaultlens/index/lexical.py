"""Lexical terms for full-text search: lower-cased word stems, Russian and English aware.

FTS5 has no Russian stemmer, so terms are stemmed here (Snowball via PyStemmer) and
stored pre-stemmed; queries go through the same function, so both sides always agree.
Stop words are dropped on the query side only (:func:`query_terms`); stored text keeps them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import Stemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")


@lru_cache(maxsize=1)
def _stemmers() -> tuple[Stemmer.Stemmer, Stemmer.Stemmer]:
    import Stemmer  # loaded with the first text to stem, not by a run that reads no note

    return Stemmer.Stemmer("russian"), Stemmer.Stemmer("english")


def terms(text: str) -> list[str]:
    """Stemmed terms in order (duplicates kept, so term frequency survives)."""
    words = _WORD.findall(text.lower().replace("ё", "е"))
    known = _known  # this call's view: a full cache is replaced, never cleared under another thread
    new = set(words).difference(known)
    if new:
        if len(known) + len(new) > KNOWN_WORDS:
            known, new = _forget(), set(words)
        known.update(_stem(new))
    return list(map(known.__getitem__, words))


# A word's term depends on the word alone, and a vault's words repeat from note to note: each
# distinct word is stemmed once per process (the indexer's hot path: 2,000 synthetic notes make
# 7,000 chunks of about 100 words but only some thousands of distinct words). Bounded: a cache
# that would pass KNOWN_WORDS words is dropped for a new one (about 150 bytes a word).
KNOWN_WORDS = 200_000
_known: dict[str, str] = {}


def _forget() -> dict[str, str]:
    global _known
    _known = {}
    return _known


def _stem(words: set[str]) -> dict[str, str]:
    """Each word's term: Russian Snowball for a word with a Cyrillic letter, a number as it is,
    English Snowball for the rest (a word the stemmer empties stays itself)."""
    ru, en = _stemmers()
    cyr = [w for w in words if _CYRILLIC.search(w)]
    lat = [w for w in words if not w.isdigit() and not _CYRILLIC.search(w)]
    stems = dict.fromkeys(words, "")
    stems.update(zip(cyr, ru.stemWords(cyr), strict=True))
    stems.update(zip(lat, en.stemWords(lat), strict=True))
    return {w: s or w for w, s in stems.items()}


# Snowball's English stop list. Query side only: these words match nearly every chunk, so
# they add noise to the OR query and to the idf mass behind the lexical confidence. English
# only, measured: the Snowball Russian list cost the Russian vault queries hit@5 (0.935 to
# 0.919), as it holds words such as "можно", "лучше", "никогда" that do carry meaning.
_STOP_EN = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
she her hers herself it its itself they them their theirs themselves what which who whom
this that these those am is are was were be been being have has had having do does did
doing would should could ought a an the and but if or because as until while of at by for
with about against between into through during before after above below to from up down in
out on off over under again further then once here there when where why how all any both
each few more most other some such no nor not only own same so than too very s t can will
just don
"""


@lru_cache(maxsize=1)
def _stop_terms() -> frozenset[str]:
    return frozenset(terms(_STOP_EN))


def carries_terms(text: str) -> bool:
    """Whether a query has a term that can be lexical evidence: one of two or more characters that is not
    a stop word. "a", "?" or "the" match nearly every note, so their lexical hits say nothing."""
    stop = _stop_terms()
    return any(len(t) > 1 and t not in stop for t in terms(text))


def query_terms(text: str) -> list[str]:
    """The query's distinct terms without stop words (all of them if only stop words remain)."""
    distinct = list(dict.fromkeys(terms(text)))
    stop = _stop_terms()
    return [t for t in distinct if t not in stop] or distinct
