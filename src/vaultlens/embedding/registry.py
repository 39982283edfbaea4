"""Build the configured embedding provider (the one place that maps settings to a class)."""

from __future__ import annotations

import os

from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.embedding.http import OllamaProvider, OpenAICompatibleProvider
from vaultlens.embedding.local import LocalUSEProvider
from vaultlens.errors import ConfigError


def make_provider(s: EmbeddingSettings) -> EmbeddingProvider:
    if s.provider == "local":
        return LocalUSEProvider(threads=s.threads, batch_size=s.batch_size)
    common = dict(
        model=s.model,
        endpoint=s.endpoint,
        dimensions=s.dimensions,
        batch_size=s.batch_size,
        timeout_s=s.timeout_s,
        max_retries=s.max_retries,
    )
    if s.provider == "ollama":
        return OllamaProvider(**common)  # type: ignore[arg-type]
    key = os.environ.get(s.api_key_env) if s.api_key_env else None
    provider = OpenAICompatibleProvider(api_key=key, **common)  # type: ignore[arg-type]
    if provider.remote and not key:
        raise ConfigError(
            f"embedding.provider is openai at {provider.endpoint} but no API key is set.",
            hint=f"Set the environment variable {s.api_key_env} (or embedding.api_key_env to another name).",
        )
    return provider
