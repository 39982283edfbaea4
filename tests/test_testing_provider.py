"""vaultlens.testing: the deterministic fake embedding provider, selected through settings like any
registered provider, with vectors that make search and discovery tests meaningful."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vaultlens.testing as vt
from vaultlens.config.settings import EmbeddingSettings, load_settings
from vaultlens.embedding.base import remote_destination
from vaultlens.embedding.registry import make_provider, provider_names
from vaultlens.services.app import App
from vaultlens.testing import HashingEmbeddingProvider, hashing_vector, register_fake_provider
from vl_support import db_rows, run_index, settings, write_vault


def test_importing_registers_fake_through_the_registry() -> None:
    assert "fake" in provider_names()
    register_fake_provider()  # idempotent
    register_fake_provider()
    assert provider_names().count("fake") == 1
    provider = make_provider(EmbeddingSettings(provider="fake"))
    assert isinstance(provider, HashingEmbeddingProvider)
    assert provider.remote is False
    assert (provider.space.provider, provider.space.model, provider.space.dimensions) == (
        "fake",
        "hashing-v1",
        256,
    )
    assert provider.space.endpoint == "" and provider.space.normalized
    assert provider.batch_size == EmbeddingSettings().batch_size


def test_settings_select_and_shape_it(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n"})
    s = load_settings(
        vault, {"embedding.provider": "fake", "embedding.dimensions": "64", "embedding.batch_size": "3"}
    )
    provider = make_provider(s.settings.embedding)
    assert provider.space.dimensions == 64 and provider.batch_size == 3
    assert provider.embed(["one", "two"]).shape == (2, 64)


def test_vectors_are_unit_float32_and_deterministic() -> None:
    provider = HashingEmbeddingProvider()
    texts = ["The night train leaves at nine.", "", "   ", "Ночной поезд уходит в девять.", "🚀 🚀"]
    vecs = provider.embed(texts)
    assert vecs.dtype == np.float32 and vecs.shape == (5, 256)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(vecs, HashingEmbeddingProvider().embed(texts))
    assert provider.embed([]).shape == (0, 256)
    assert (provider.calls, provider.texts_embedded) == (2, 5)


def test_vectors_are_the_same_in_another_process() -> None:
    """No use of Python's randomised hash(): a vector stored by one run matches the next run's query."""
    code = "import vaultlens.testing as t; print(','.join(f'{x:.6f}' for x in t.hashing_vector('Sourdough starter', 32)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    theirs = np.array([float(x) for x in out.stdout.strip().split(",")], dtype=np.float32)
    np.testing.assert_allclose(theirs, hashing_vector("Sourdough starter", 32), atol=1e-6)


def test_shared_words_make_texts_similar() -> None:
    provider = HashingEmbeddingProvider()
    query, near, inflected, far = provider.embed(
        [
            "how often to feed the sourdough starter",
            "Feed the sourdough starter every morning with rye flour.",
            "Feeding sourdough starters",
            "Cache-Control headers for fingerprinted static assets.",
        ]
    )
    assert float(query @ near) > 0.25
    assert float(query @ inflected) > float(query @ far) + 0.1  # trigrams let word forms meet
    assert abs(float(query @ far)) < 0.15
    same = provider.embed(["Feed the starter.", "feed THE starter"])
    assert float(same[0] @ same[1]) == pytest.approx(1.0, abs=1e-6)  # case and punctuation do not matter


def test_a_remote_endpoint_makes_it_report_remote_without_sending_anything() -> None:
    remote = make_provider(
        EmbeddingSettings(provider="fake", endpoint="https://embeddings.example.invalid/v1/")
    )
    assert remote.remote is True
    assert remote.space.endpoint == "https://embeddings.example.invalid/v1"
    assert remote_destination(remote) == "fake model hashing-v1 at https://embeddings.example.invalid/v1"
    assert remote.embed(["still computed here"]).shape == (1, 256)
    loopback = make_provider(EmbeddingSettings(provider="fake", endpoint="http://127.0.0.1:9"))
    assert loopback.remote is False and remote_destination(loopback) is None
    explicit = HashingEmbeddingProvider.remote_fake()
    assert explicit.remote and explicit.space.endpoint == vt.REMOTE_TEST_ENDPOINT
    assert explicit.space != HashingEmbeddingProvider().space  # another destination is another space


def test_the_app_builds_it_from_settings(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n"})
    provider = App.open(vault, {"embedding.provider": "fake"}).provider()
    assert isinstance(provider, HashingEmbeddingProvider)


def test_the_indexer_runs_on_it_without_the_model(tmp_path: Path) -> None:
    vault = write_vault(
        tmp_path / "vault",
        {
            "Bread.md": "# Bread\n\nFeed the sourdough starter every morning with rye flour.\n",
            "Trains.md": "# Trains\n\nThe night train to Vienna leaves at nine from platform four.\n",
        },
    )
    s = settings(vault, **{"embedding.provider": "fake"})
    provider = make_provider(s.embedding)
    stats = run_index(vault, tmp_path / "index", provider, s)
    assert stats.chunks_embedded == 2
    assert isinstance(provider, HashingEmbeddingProvider) and provider.texts_embedded == 2
    assert db_rows(tmp_path / "index", "SELECT COUNT(*) FROM vectors") == [(2,)]
    (space,) = db_rows(tmp_path / "index", "SELECT value FROM meta WHERE key = 'space'")[0]
    assert "hashing-v1" in str(space)


def test_no_production_module_imports_the_testing_module() -> None:
    """vaultlens.testing sits outside the layers: tests and plug-ins use it, vaultlens itself never."""
    src = Path(vt.__file__).parent
    offenders = []
    for path in src.rglob("*.py"):
        if path.name == "testing.py" and path.parent == src:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            if any(n == "vaultlens.testing" or n.startswith("vaultlens.testing.") for n in names):
                offenders.append(str(path.relative_to(src)))
    assert offenders == []
