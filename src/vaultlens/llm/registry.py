"""The one list of LLM providers: a name -> factory registry, and settings -> provider.

Same shape as :mod:`vaultlens.embedding.registry`: a factory takes
:class:`~vaultlens.config.settings.LLMSettings` and returns a ready
:class:`~vaultlens.llm.base.LLMProvider`; built-ins register through :func:`register_llm`, the
call a plug-in or a test uses (``--set llm.provider=NAME`` then selects it).
"""

from __future__ import annotations

from vaultlens.config.registry import ProviderRegistry
from vaultlens.config.settings import LLMSettings
from vaultlens.llm.base import LLMProvider
from vaultlens.llm.http_chat import GroqChat, OllamaChat, OpenAIChat, OpenAICompatibleChat, OpenRouterChat

_REGISTRY: ProviderRegistry[LLMSettings, LLMProvider] = ProviderRegistry(
    "llm", "vaultlens.llm.registry.register_llm"
)
register_llm = _REGISTRY.register
llm_names = _REGISTRY.names
make_llm = _REGISTRY.make

register_llm("ollama", OllamaChat.from_settings)
register_llm("openai", OpenAIChat.from_settings)
register_llm("openrouter", OpenRouterChat.from_settings)
register_llm("groq", GroqChat.from_settings)
register_llm("openai-compatible", OpenAICompatibleChat.from_settings)
