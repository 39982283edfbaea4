"""The tokens FTS5 stores for a row's terms, so the store can count each token's rows itself.

FTS5's tokenizer (``TOKENIZER``) folds case and diacritics, so "café" and "cafe" are one token and
one document frequency. Terms (index/lexical.py) are already lower-cased stems; for the letters
and digits almost every vault's terms are made of (``_PLAIN``: tests/test_store.py checks that the
tokenizer keeps each one as it is) a term is its own token. Any other word is handed to the same
tokenizer in a private in-memory table and its tokens read back, once per process: the same fold as
FTS5's, not an imitation of it.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from functools import lru_cache

TOKENIZER = "unicode61 remove_diacritics 2"
_PLAIN = re.compile(r"[a-z0-9а-я ]*")  # characters the tokenizer keeps unchanged (and the separator)
_scratch_lock = threading.Lock()


def tokens(terms: str) -> set[str]:
    """The distinct tokens FTS5 stores for a row of space-separated ``terms``."""
    words = set(terms.split())
    if _PLAIN.fullmatch(terms):
        return words
    out: set[str] = set()
    for word in words:
        out.update(word_tokens(word))
    return out


def word_tokens(word: str) -> tuple[str, ...]:
    """The tokens FTS5 makes of one word, in order (one for nearly every word; none for a word of
    separators; several where the tokenizer splits what the term did not)."""
    return (word,) if _PLAIN.fullmatch(word) else _folded(word)


@lru_cache(maxsize=65_536)
def _folded(word: str) -> tuple[str, ...]:
    with _scratch_lock:
        db = _scratch()
        db.execute("INSERT INTO t(rowid, terms) VALUES (1, ?)", (word,))
        found = tuple(r[0] for r in db.execute("SELECT term FROM v WHERE doc = 1 ORDER BY offset"))
        db.execute("DELETE FROM t")
        return found


@lru_cache(maxsize=1)
def _scratch() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(terms, tokenize='{TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    return db
