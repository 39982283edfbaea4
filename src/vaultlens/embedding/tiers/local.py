"""The user's own model as the quality tier: ``embedding.tier = "local:PATH"`` loads the
sentence-transformers folder at PATH (an absolute path, ``~`` allowed) through torch.

Why: no properly packaged multilingual model stronger than e5-small is installable here, but a user
may have one on disk (EmbeddingGemma-300M measured far better across Russian and English,
docs/benchmarks.md). torch and sentence-transformers are heavy, hence the optional extra
``vaultlens[local-model]`` (torch pinned to a range: an unpinned torch may pull a multi-GB CUDA
build). Nothing is downloaded: the folder is read with ``local_files_only`` and the Hugging Face
clients are put offline before they are imported.

On the CPU: bfloat16 where the CPU computes it natively (AVX512-BF16 or AMX: half the memory
traffic; emulated, it would be slower than float32), float32 elsewhere; idle OpenMP workers sleep
(``OMP_WAIT_POLICY=PASSIVE``, unless the user set it) because the tier shares the cores with the
bundled model, SQLite and the watcher, and torch's spinning workers made it about 4x slower (issue 44). OpenMP reads that variable once, when torch
is imported, so it is set here just before the first import of torch in the process.

Query and passage prompts come from the folder's ``config_sentence_transformers.json``
(``prompts``: ``query``, and ``document`` or ``passage``), unless ``embedding.tier_query_prefix`` /
``tier_passage_prefix`` say otherwise. The space names the folder, the passage prompt and a
fingerprint of the model's files, so another model in the same folder drops the old vectors.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors, normalize_rows
from vaultlens.embedding.tiers.remote import AUTO, Prefixes
from vaultlens.errors import ConfigError

PACKAGES = ("torch", "sentence_transformers")
INSTALL = "pip install 'vaultlens[local-model]'"
LAYOUT_FILE = "modules.json"  # what makes a folder a sentence-transformers model
PROMPTS_FILE = "config_sentence_transformers.json"
FINGERPRINT_FILES = ("modules.json", "config.json", PROMPTS_FILE, "sentence_bert_config.json")
BATCH_SIZE = 16  # texts per fill call; sentence-transformers sorts them by length and pads per batch
MAX_CHARS = 8000  # a chunk is at most index.chunk_max (1800) plus its context; the rest is never read


def missing_packages() -> list[str]:
    """The packages of the extra that are not installed (found without importing them)."""
    from importlib.util import find_spec

    return [name for name in PACKAGES if find_spec(name) is None]


def model_folder(value: str) -> Path:
    """The folder ``embedding.tier = "local:VALUE"`` names, checked: it exists and is a
    sentence-transformers layout (a ConfigError saying which of the two it is not)."""
    folder = Path(value).expanduser()
    setting = f"embedding.tier is local:{value}"
    if not folder.is_absolute():
        raise ConfigError(
            f"{setting}, a relative path: it would name another folder from another working directory.",
            hint=f'Give the model folder\'s absolute path: embedding.tier = "local:{Path.cwd() / folder}".',
        )
    if not folder.is_dir():
        raise ConfigError(
            f"{setting}, but there is no folder at {folder}.",
            hint="Point it at a sentence-transformers model folder on this machine (it holds modules.json), "
            "or --set embedding.tier=off to search with the bundled model alone.",
        )
    try:
        modules = json.loads((folder / LAYOUT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        modules = None
    if not isinstance(modules, list) or not modules:
        raise ConfigError(
            f"{setting}, but {folder} is not a sentence-transformers model folder "
            f"(no readable {LAYOUT_FILE} listing its modules).",
            hint="Save the model with SentenceTransformer.save(PATH), or copy its whole folder "
            "(modules.json, the weights, the tokenizer, the pooling module's folder).",
        )
    return folder.resolve()


def declared_prompts(folder: Path) -> Prefixes:
    """The query and passage prompts ``folder``'s model declares (none where it declares none)."""
    try:
        raw = json.loads((folder / PROMPTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Prefixes()
    prompts = raw.get("prompts") if isinstance(raw, dict) else None
    if not isinstance(prompts, dict):
        return Prefixes()

    def first(*names: str) -> str:
        found = (prompts.get(name) for name in names)
        return next((p for p in found if isinstance(p, str)), "")

    return Prefixes(first("query"), first("document", "passage"))


def tier_prompts(folder: Path, s: EmbeddingSettings) -> Prefixes:
    """The prompts the tier puts before queries and passages: the settings', or the folder's (``auto``)."""
    declared = declared_prompts(folder)
    return Prefixes(
        declared.query if s.tier_query_prefix == AUTO else s.tier_query_prefix,
        declared.passage if s.tier_passage_prefix == AUTO else s.tier_passage_prefix,
    )


def fingerprint(folder: Path) -> str:
    """A short hash of the model's configuration files and the sizes of its weights: another model
    copied into the same folder is another space (reading the weights themselves would take seconds)."""
    digest = hashlib.sha256()
    for name in FINGERPRINT_FILES:
        path = folder / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"-") + b"\0")
    for weights in sorted(folder.rglob("*.safetensors")) + sorted(folder.rglob("*.bin")):
        digest.update(f"{weights.relative_to(folder)}\0{weights.stat().st_size}\0".encode())
    return digest.hexdigest()[:12]


def bf16_native() -> bool:
    """Whether the CPU computes bfloat16 itself (AVX512-BF16 or AMX tiles); emulated, it is slower
    than float32. torch must be imported already."""
    import torch

    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in checks)


def _import_torch() -> Any:
    """torch, with OpenMP's idle workers asleep and the Hugging Face clients offline: both are read
    once, at import, so they are set first (and only where the user has not set them)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch

    return torch


class LocalTier:
    """A sentence-transformers model folder run by torch on the CPU."""

    def __init__(self, value: str, s: EmbeddingSettings, batch_size: int = BATCH_SIZE) -> None:
        self.folder = model_folder(value)
        missing = missing_packages()
        if missing:
            raise ConfigError(
                f"embedding.tier is local:{value}, but the optional package {missing[0]} is not installed.",
                hint=f"{INSTALL}, or --set embedding.tier=off to search with the bundled model alone.",
            )
        self.prefixes = tier_prompts(self.folder, s)
        self.batch_size = batch_size
        self.dtype = ""  # bfloat16 or float32, known once the model is loaded
        self._threads = s.threads or os.cpu_count() or 1
        # a search's one query on embedding.query_threads (default 1): on a busy machine two OpenMP
        # threads wait for each other (2,340 ms median for a query against 346 ms on one, load 9)
        self._query_threads = s.query_threads or self._threads
        self._model: Any = None
        self._lock = threading.Lock()  # one model, used by one thread at a time
        self.space = self._space(0)

    def _space(self, dimensions: int) -> EmbeddingSpace:
        model = f"{self.folder.name} [{fingerprint(self.folder)}]"
        if self.prefixes.passage:
            model += f" [passage prefix {self.prefixes.passage!r}]"
        return EmbeddingSpace("sentence-transformers", model, str(self.folder), dimensions)

    def _load(self) -> Any:
        if self._model is None:
            torch = _import_torch()
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            torch.set_num_threads(self._threads)
            dtype = torch.bfloat16 if bf16_native() else torch.float32
            try:
                model = SentenceTransformer(
                    str(self.folder), device="cpu", local_files_only=True, model_kwargs={"dtype": dtype}
                )
            except (OSError, ValueError, KeyError, RuntimeError, ImportError) as exc:
                raise ConfigError(
                    f"embedding.tier is local:{self.folder}, but its model could not be loaded: {exc}",
                    hint="Check that the folder holds the whole model and that the installed "
                    "transformers knows its architecture (pip install -U 'vaultlens[local-model]').",
                ) from None
            self.dtype = str(dtype).removeprefix("torch.")
            dimension = (
                getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            )
            self.space = self._space(int(dimension() or 0))  # (renamed in sentence-transformers 6)
            self._model = model
        return self._model

    def _run(self, texts: Sequence[str], prompt: str, threads: int) -> Vectors:
        import numpy as np

        with self._lock:
            model = self._load()
            dims = self.space.dimensions
            if not texts:
                return np.zeros((0, dims), dtype=np.float32)
            torch = _import_torch()
            torch.set_num_threads(threads)
            try:
                out = model.encode(
                    [t[:MAX_CHARS] for t in texts],
                    prompt=prompt,
                    batch_size=self.batch_size,
                    show_progress_bar=False,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                )
            finally:
                torch.set_num_threads(self._threads)
        return normalize_rows(np.atleast_2d(out), len(texts), dims, self.space.model)

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._run(texts, self.prefixes.passage, self._threads)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._run(texts, self.prefixes.query, self._query_threads)
