"""Embedding ahead of the indexer: the model is not held back while notes are still being read."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import pytest

from vaultlens.embedding.base import Vectors
from vaultlens.index.indexing import embed_ahead
from vaultlens.index.indexing.embed_ahead import EmbedAhead
from vaultlens.testing import HashingEmbeddingProvider


def until(done: Callable[[], bool], seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while not done() and time.monotonic() < end:
        time.sleep(0.01)
    return done()


def texts(n: int) -> dict[str, str]:
    return {f"h{i}": f"text number {i}" for i in range(n)}


def test_the_model_embeds_every_text_read_before_the_reading_ends() -> None:
    """Nothing is taken before the last note is read: a bound there would leave the model idle."""
    provider = HashingEmbeddingProvider(batch_size=1)
    ahead = EmbedAhead(provider, lambda hashes: hashes, ahead=2)
    try:
        ahead.add(texts(6))
        assert until(lambda: provider.texts_embedded == 6)
        ahead.close()
        assert set(ahead.take(texts(6), lambda n: None)) == set(texts(6))
    finally:
        ahead.stop()


def test_while_notes_are_read_the_waiting_vectors_stay_under_the_memory_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A provider faster than the reading never holds a vector per chunk of the vault."""
    monkeypatch.setattr(embed_ahead, "READING_BOUND", 4)
    provider = HashingEmbeddingProvider(batch_size=1)
    ahead = EmbedAhead(provider, lambda hashes: hashes, ahead=2)
    try:
        ahead.add(texts(10))
        assert until(lambda: provider.texts_embedded >= 4)
        time.sleep(0.2)
        assert provider.texts_embedded == 4, "more vectors waited than the bound while notes were read"
        ahead.close()
        assert set(ahead.take(texts(10), lambda n: None)) == set(texts(10))  # the rest once they are taken
    finally:
        ahead.stop()


def test_once_every_note_is_read_at_most_ahead_vectors_wait() -> None:
    provider = HashingEmbeddingProvider(batch_size=1)
    ahead = EmbedAhead(provider, lambda hashes: hashes, ahead=2)
    try:
        ahead.close()
        ahead.add(texts(6))
        assert until(lambda: provider.texts_embedded >= 2)
        time.sleep(0.2)
        assert provider.texts_embedded == 2
        first = dict(list(texts(6).items())[:2])
        assert set(ahead.take(first, lambda n: None)) == set(first)
        assert until(lambda: provider.texts_embedded == 4)
    finally:
        ahead.stop()


class TwoAtOnce(HashingEmbeddingProvider):
    """A provider whose calls each wait until another call is running beside it."""

    def __init__(self) -> None:
        super().__init__(batch_size=1)
        self.calls_in_flight = 2
        self.meet = threading.Barrier(2, timeout=10)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.meet.wait()  # broken (and raised where the text is taken) if no other call comes
        return super().embed(texts)


def test_a_provider_with_idle_workers_gets_two_calls_at_once() -> None:
    provider = TwoAtOnce()
    ahead = EmbedAhead(provider, lambda hashes: hashes, ahead=8)
    try:
        ahead.add(texts(6))
        ahead.close()
        assert set(ahead.take(texts(6), lambda n: None)) == set(texts(6))
        assert provider.calls == 6
    finally:
        ahead.stop()


def test_calls_in_flight_count_against_the_memory_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Vectors being made count as waiting: two calls at once never hold more than the bound."""
    monkeypatch.setattr(embed_ahead, "READING_BOUND", 4)
    provider = HashingEmbeddingProvider(batch_size=1)
    provider.calls_in_flight = 2
    ahead = EmbedAhead(provider, lambda hashes: hashes, ahead=2)
    try:
        ahead.add(texts(10))
        assert until(lambda: provider.texts_embedded >= 4)
        time.sleep(0.2)
        assert provider.texts_embedded == 4
        ahead.close()
        assert set(ahead.take(texts(10), lambda n: None)) == set(texts(10))
    finally:
        ahead.stop()
