"""The one list of LLM providers: a name -> factory registry, and settings -> provider.

Same shape as :mod:`vaultlens.embedding.registry`: a factory takes
:class:`~vaultlens.config.settings.LLMSettings` and returns a ready
:class:`~vaultlens.llm.base.LLMProvider`; built-ins register through :func:`register_llm`, the
call a plug-in or a test uses (``--set llm.provider=NAME`` then selects it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from vaultlens.config.settings import PROVIDER_NAME, LLMSettings
from vaultlens.errors import ConfigError
from vaultlens.llm.base import LLMProvider
from vaultlens.llm.http_chat import GroqChat, OllamaChat, OpenAIChat, OpenAICompatibleChat, OpenRouterChat

LLMFactory = Callable[[LLMSettings], LLMProvider]

_FACTORIES: dict[str, LLMFactory] = {}
_LOCK = threading.Lock()


def register_llm(name: str, factory: LLMFactory, *, replace: bool = False) -> None:
    """Make ``llm.provider = name`` build its provider with ``factory`` (same rules as embeddings)."""
    if not PROVIDER_NAME.fullmatch(name):
        raise ValueError(f"provider name {name!r} must be lower-case letters, digits, '_', '.' or '-'")
    with _LOCK:
        current = _FACTORIES.get(name)
        if current is not None and current != factory and not replace:
            raise ValueError(f"LLM provider {name!r} is already registered (pass replace=True)")
        _FACTORIES[name] = factory


def unregister_llm(name: str) -> None:
    with _LOCK:
        _FACTORIES.pop(name, None)


def llm_names() -> list[str]:
    with _LOCK:
        return list(_FACTORIES)


def make_llm(s: LLMSettings) -> LLMProvider:
    """The provider ``s.provider`` names, built from ``s``; an unknown name is a ``ConfigError``."""
    with _LOCK:
        factory = _FACTORIES.get(s.provider)
    if factory is None:
        raise ConfigError(
            f"llm.provider must be one of {', '.join(llm_names())} (got {s.provider!r}).",
            hint="A plug-in provider is available once its package registers it "
            "(vaultlens.llm.registry.register_llm).",
        )
    return factory(s)


register_llm("ollama", OllamaChat.from_settings)
register_llm("openai", OpenAIChat.from_settings)
register_llm("openrouter", OpenRouterChat.from_settings)
register_llm("groq", GroqChat.from_settings)
register_llm("openai-compatible", OpenAICompatibleChat.from_settings)
