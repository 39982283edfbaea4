"""Lexical terms: the cache of stemmed words gives exactly the terms of stemming each word on its own.

The oracle below is the rule written per word (a Cyrillic word: Russian Snowball; a number: itself;
any other word: English Snowball; a word the stemmer empties stays itself), with the real stemmers.
"""

from __future__ import annotations

import re
import threading

import pytest
import Stemmer

from vaultlens.index import lexical
from vaultlens.index.lexical import terms

_RU, _EN = Stemmer.Stemmer("russian"), Stemmer.Stemmer("english")

TRICKY = [
    "",
    "   \n\t ",
    "Ёлка и ёжик: всё ещё ЁЖИК",
    "Кэширование HTTP-заголовков: Cache-Control, max_age=3600 и ETag'и",
    "running runners ran RUN; бегущий бегать бег",
    "2024-02-30 v1.2.3 100500 ² ³ ½ ٣ 42nd 3D-модель x86_64",
    "snake_case __dunder__ _lead trail_ a_б",
    "```python\ndef f(x):\n    return x ** 2  # квадрат\n```",
    "---\ntags: [area/x, Idea]\naliases: [alias 7]\n---\n# Заголовок\n\nТекст.",
    "pythonовский Москва-river naïve café Straße ΑΘΗΝΑ 東京 العربية",
    "[[note 12#Section 1|that block]] ![img](a%20b.png) #tag/sub ==mark== ~~strike~~",
    "s a I the THE The i'm don't can't",
]


def words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower().replace("ё", "е"))


def oracle(text: str) -> list[str]:
    out = []
    for word in words(text):
        if re.search(r"[\u0400-\u04ff]", word):
            out.append(_RU.stemWord(word) or word)
        elif word.isdigit():
            out.append(word)
        else:
            out.append(_EN.stemWord(word) or word)
    return out


@pytest.mark.parametrize("text", TRICKY)
def test_terms_equal_the_per_word_rule(text: str) -> None:
    assert terms(text) == oracle(text)
    assert terms(text) == oracle(text)  # a second time, every word from the cache


def test_terms_keep_order_and_duplicates() -> None:
    assert terms("Cats cats CAT кошки кошка") == ["cat", "cat", "cat", "кошк", "кошк"]


def test_a_full_cache_is_replaced_and_terms_stay_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical, "KNOWN_WORDS", 8)
    monkeypatch.setattr(lexical, "_known", {})
    for text in TRICKY * 2:
        assert terms(text) == oracle(text)
        assert len(lexical._known) <= max(8, len(set(words(text))))
    many = " ".join(f"word{i} слово{i}" for i in range(50))
    assert terms(many) == oracle(many)
    assert len(lexical._known) == 100  # the text's own words, in a fresh cache
    assert terms("word1") == ["word1"] and len(lexical._known) == 100


def test_threads_sharing_a_small_cache_get_exact_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexical, "KNOWN_WORDS", 16)
    monkeypatch.setattr(lexical, "_known", {})
    texts = [f"{t} extra{i} добавка{i}" for i, t in enumerate(TRICKY * 4)]
    wrong: list[str] = []

    def work() -> None:
        for text in texts:
            if terms(text) != oracle(text):
                wrong.append(text)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
