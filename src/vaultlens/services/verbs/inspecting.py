"""Inspecting the setup: which providers receive what, and how well search does on labelled data."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from vaultlens.config import paths
from vaultlens.embedding.tiers.e5 import E5Tier
from vaultlens.errors import ConfigError, translated_errors
from vaultlens.index.progress import Progress
from vaultlens.services.app import App
from vaultlens.services.finding.search import NoteHit
from vaultlens.services.inspecting import evaluation
from vaultlens.services.inspecting.embed_bench import EmbedBench, Embedder, sample_texts
from vaultlens.services.inspecting.embed_bench import bench_embed as run_bench
from vaultlens.services.inspecting.evaluation import GroupScore, OpenVault
from vaultlens.services.inspecting.providers import ProviderInfo, describe_providers
from vaultlens.services.verbs.finding import search
from vaultlens.services.verbs.indexing import index

__all__ = [
    "EmbedBench",
    "GroupScore",
    "ProviderInfo",
    "bench_embed",
    "eval_beir",
    "eval_queries",
    "providers",
]


def providers(app: App) -> list[ProviderInfo]:
    """What is configured for embeddings and for the LLM, and which data each one receives."""
    with translated_errors(path=app.index_dir):
        if not app.has_index():
            return describe_providers(app.settings, app.provider, app.tier())
        with app.reading() as store:  # embedding.tier = auto: the tier the vault's languages picked
            return describe_providers(app.settings, app.provider, app.tier(store))


def bench_embed(app: App, tier: bool = False) -> EmbedBench:
    """docs/s and chunks/s of the embedding model on a built-in sample, and the ratio to the model
    alone; ``tier``: the quality tier's model ``embedding.tier`` names (e5 when it is off or auto)."""
    with translated_errors(path=app.index_dir):
        s = app.settings.embedding
        provider: Embedder
        if tier:
            provider = app.tier() or E5Tier(threads=s.threads)
        else:
            main = app.provider()
            if main.remote:
                raise ConfigError(
                    f"bench embed measures a model on this machine; embedding.provider {s.provider!r} "
                    "sends texts to a server.",
                    hint="--set embedding.provider=local to measure the bundled model, or --tier for the e5 tier.",
                )
            provider = main
        return run_bench(provider, s.threads or os.cpu_count() or 1, sample_texts())


def _open_vault(overrides: dict[str, str] | None, progress: Progress | None, consent: bool) -> OpenVault:
    """Each vault as a user would search it: its settings with ``overrides``, indexed, then searched."""

    def open_vault(vault: Path) -> Callable[[str, int], list[NoteHit]]:
        app = App.open(vault, overrides)
        index(app, progress, consent)
        return lambda query, limit: search(app, query, limit, sections=1)

    return open_vault


def eval_beir(
    folder: Path,
    overrides: dict[str, str] | None = None,
    progress: Progress | None = None,
    consent: bool = False,
    split: str = "test",
) -> list[GroupScore]:
    """nDCG@10, Recall@100 and MRR@10 on a BEIR folder (its corpus written as one note per
    document under VAULTLENS_HOME), with the tune/held halves."""
    work = paths.home() / "eval"
    return evaluation.eval_beir(folder, work, _open_vault(overrides, progress, consent), split)


def eval_queries(
    file: Path,
    overrides: dict[str, str] | None = None,
    progress: Progress | None = None,
    consent: bool = False,
    split: str | None = None,
) -> list[GroupScore]:
    """hit@1, hit@3, hit@5 and MRR on a labelled query file, per vault, direction, language and
    half; with ``split``, only that split's lines (tune or held)."""
    return evaluation.eval_queries(file, _open_vault(overrides, progress, consent), split)
