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

import threading
from collections.abc import Callable

from vaultlens.config.settings import PROVIDER_NAME, EmbeddingSettings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.embedding.http import OllamaProvider, OpenAICompatibleProvider
from vaultlens.embedding.local import LocalUSEProvider
from vaultlens.errors import ConfigError

ProviderFactory = Callable[[EmbeddingSettings], EmbeddingProvider]

_FACTORIES: dict[str, ProviderFactory] = {}
_LOCK = threading.Lock()


def register_provider(name: str, factory: ProviderFactory, *, replace: bool = False) -> None:
    """Make ``embedding.provider = name`` build its provider with ``factory``.

    Registering the same factory under the same name again is a no-op (imports may repeat);
    a different factory for a taken name is refused unless ``replace=True``.
    """
    if not PROVIDER_NAME.fullmatch(name):
        raise ValueError(f"provider name {name!r} must be lower-case letters, digits, '_', '.' or '-'")
    with _LOCK:
        current = _FACTORIES.get(name)
        if current is not None and current != factory and not replace:
            raise ValueError(f"embedding provider {name!r} is already registered (pass replace=True)")
        _FACTORIES[name] = factory


def unregister_provider(name: str) -> None:
    """Forget ``name`` (for tests and plug-ins that unload); unknown names are ignored."""
    with _LOCK:
        _FACTORIES.pop(name, None)


def provider_names() -> list[str]:
    """Registered provider names, in registration order (built-ins first)."""
    with _LOCK:
        return list(_FACTORIES)


def make_provider(s: EmbeddingSettings) -> EmbeddingProvider:
    """The provider ``s.provider`` names, built from ``s``; an unknown name is a ``ConfigError``."""
    with _LOCK:
        factory = _FACTORIES.get(s.provider)
    if factory is None:
        raise ConfigError(
            f"embedding.provider must be one of {', '.join(provider_names())} (got {s.provider!r}).",
            hint="A plug-in provider is available once its package registers it "
            "(vaultlens.embedding.registry.register_provider).",
        )
    return factory(s)


register_provider("local", LocalUSEProvider.from_settings)
register_provider("ollama", OllamaProvider.from_settings)
register_provider("openai", OpenAICompatibleProvider.from_settings)
