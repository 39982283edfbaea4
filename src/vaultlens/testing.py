"""Test support that ships with vaultlens: a deterministic embedding provider that needs no model.

Service-level tests (vaultlens' own, and those of servers or plug-ins built on it) need
vectors that are fast, reproducible across runs and machines, and still meaningful: texts
that share words must be closer than texts that do not, or search, ``similar`` and
``duplicates`` tests would prove nothing. :class:`HashingEmbeddingProvider` does that with
the hashing trick: lower-cased word tokens (and, more weakly, their character trigrams, so
"train" and "trains" overlap) are hashed into a fixed number of signed buckets and the
vector is L2-normalised. It is not a language model: synonyms and translations do not meet.
Quality tests keep the real bundled model.

Importing this module registers the provider as ``fake`` through the same registry the
built-in providers use, so settings select it like any other::

    import vaultlens.testing  # registers "fake" (idempotent)
    app = App.open(vault, {"embedding.provider": "fake"})

With ``embedding.endpoint`` set to a non-loopback URL the provider reports ``remote = True``
and that endpoint in its space, without sending anything anywhere: the way to test consent
and privacy rules without a network (``embedding.dimensions`` changes the size, 256 by
default).
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from collections.abc import Sequence

import numpy as np

from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors, normalize_rows
from vaultlens.embedding.http import is_loopback
from vaultlens.embedding.registry import register_provider

__all__ = [
    "FAKE_DIMENSIONS",
    "FAKE_MODEL",
    "FAKE_PROVIDER",
    "REMOTE_TEST_ENDPOINT",
    "HashingEmbeddingProvider",
    "hashing_vector",
    "register_fake_provider",
]

FAKE_PROVIDER = "fake"
FAKE_MODEL = "hashing-v1"
FAKE_DIMENSIONS = 256
#: A non-loopback endpoint for "remote" fakes; ``.invalid`` never resolves, so nothing can leave.
REMOTE_TEST_ENDPOINT = "https://embeddings.example.invalid/v1"

_TOKEN = re.compile(r"\w+")
_TRIGRAM_SHARE = 0.5  # all trigrams of a word together weigh half as much as the word itself
# words so common that sharing them says nothing about two texts
_STOPWORD_TEXT = """
a an and are as at be but by for from has have in is it its of on or that the this to was were will with
и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было вот от
меня еще нет о из ему
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@functools.lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    digest = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return digest % dimensions, (1.0 if digest >> 63 else -1.0)


def hashing_vector(text: str, dimensions: int = FAKE_DIMENSIONS) -> np.ndarray:
    """The raw (not yet normalised) float32 feature vector of ``text``; never all zeros."""
    row = np.zeros(dimensions, dtype=np.float32)
    for word in _TOKEN.findall(text.lower()):
        if word in _STOPWORDS:
            continue
        index, sign = _bucket("w:" + word, dimensions)
        row[index] += sign
        padded = f"<{word}>"
        grams = [padded[i : i + 3] for i in range(len(padded) - 2)]
        for gram in grams:
            index, sign = _bucket("g:" + gram, dimensions)
            row[index] += sign * _TRIGRAM_SHARE / len(grams)
    if not row.any():  # no words (or they cancelled out): still a unit vector, the same for all such texts
        row[_bucket("empty", dimensions)[0]] = 1.0
    return row


class HashingEmbeddingProvider:
    """Deterministic bag-of-words vectors; satisfies :class:`~vaultlens.embedding.base.EmbeddingProvider`.

    ``calls`` and ``texts_embedded`` count what it was asked to embed, so a test can assert that
    nothing was (for a remote fake: that nothing would have left the machine).
    """

    def __init__(
        self,
        dimensions: int = FAKE_DIMENSIONS,
        batch_size: int = EmbeddingSettings.batch_size,
        endpoint: str = "",
        remote: bool | None = None,
    ) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be positive")
        self.endpoint = endpoint.rstrip("/")
        self.remote = bool(self.endpoint) and not is_loopback(self.endpoint) if remote is None else remote
        self.batch_size = batch_size
        self.calls_in_flight = 1
        self.space = EmbeddingSpace(FAKE_PROVIDER, FAKE_MODEL, self.endpoint, dimensions)
        self.calls = 0
        self.texts_embedded = 0
        self._count_lock = threading.Lock()

    @classmethod
    def from_settings(cls, s: EmbeddingSettings) -> HashingEmbeddingProvider:
        """``embedding.dimensions`` (0 = 256), ``embedding.batch_size`` and ``embedding.endpoint``
        apply; ``embedding.model`` does not (the model is always ``hashing-v1``)."""
        return cls(dimensions=s.dimensions or FAKE_DIMENSIONS, batch_size=s.batch_size, endpoint=s.endpoint)

    @classmethod
    def remote_fake(cls, endpoint: str = REMOTE_TEST_ENDPOINT, **kw: int) -> HashingEmbeddingProvider:
        """A fake that says it sends text to ``endpoint`` (it does not), for consent tests."""
        return cls(endpoint=endpoint, remote=True, **kw)

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self._count_lock:  # a test may give it two calls at once (calls_in_flight)
            self.calls += 1
            self.texts_embedded += len(texts)
        dims = self.space.dimensions
        if not texts:
            return np.zeros((0, dims), dtype=np.float32)
        matrix = np.stack([hashing_vector(t, dims) for t in texts])
        return normalize_rows(matrix, len(texts), dims, f"{FAKE_PROVIDER} model {FAKE_MODEL}")


def register_fake_provider() -> None:
    """Register :class:`HashingEmbeddingProvider` as embedding provider ``fake`` (idempotent)."""
    register_provider(FAKE_PROVIDER, HashingEmbeddingProvider.from_settings)


register_fake_provider()
