"""The one list of embedding providers: a name -> factory registry, and settings -> provider.

A factory takes :class:`~vaultlens.config.settings.EmbeddingSettings` and returns a ready
:class:`~vaultlens.embedding.base.EmbeddingProvider` (raising ``ConfigError`` for settings it
cannot use). The built-in providers are registered below through :func:`register_provider`,
the same call a plug-in or a test uses::

    from vaultlens.embedding.registry import register_provider
    register_provider("mine", MyProvider.from_settings)   # then: --set embedding.provider=mine

Settings only check that ``embedding.provider`` is a name; :func:`make_provider` rejects one
that nobody registered, listing the ones that are.
"""

from __future__ import annotations

from vaultlens.config.registry import ProviderRegistry
from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.embedding.http import OllamaProvider, OpenAICompatibleProvider
from vaultlens.embedding.local import LocalUSEProvider

_REGISTRY: ProviderRegistry[EmbeddingSettings, EmbeddingProvider] = ProviderRegistry(
    "embedding", "vaultlens.embedding.registry.register_provider"
)
register_provider = _REGISTRY.register
unregister_provider = _REGISTRY.unregister
provider_names = _REGISTRY.names
make_provider = _REGISTRY.make

register_provider("local", LocalUSEProvider.from_settings)
register_provider("ollama", OllamaProvider.from_settings)
register_provider("openai", OpenAICompatibleProvider.from_settings)
