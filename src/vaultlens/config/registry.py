"""A name -> factory registry of providers, shared by the embedding and LLM provider lists.

Each list (:mod:`vaultlens.embedding.registry`, :mod:`vaultlens.llm.registry`) is one
:class:`ProviderRegistry`: built-ins register through the same call a plug-in or a test uses, and a
settings group's ``provider`` names the entry (``--set embedding.provider=NAME``). It lives in the
config layer because what it checks is a setting's value.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from vaultlens.config.settings import PROVIDER_NAME
from vaultlens.errors import ConfigError


class NamesProvider(Protocol):
    @property
    def provider(self) -> str: ...


S = TypeVar("S", bound=NamesProvider)  # the settings group a factory is built from
P = TypeVar("P")  # what a factory makes


class ProviderRegistry(Generic[S, P]):
    def __init__(self, group: str, register_call: str, setting: str = "") -> None:
        self.group = group  # "embedding" or "llm": the settings group (and the word in messages)
        self.register_call = register_call  # where a plug-in registers, for the unknown-name hint
        self.setting = setting or f"{group}.provider"  # the setting whose value names an entry
        self._factories: dict[str, Callable[[S], P]] = {}
        self._lock = threading.Lock()

    def register(self, name: str, factory: Callable[[S], P], *, replace: bool = False) -> None:
        """Make ``<group>.provider = name`` build its provider with ``factory``.

        Registering the same factory under the same name again is a no-op (imports may repeat);
        a different factory for a taken name is refused unless ``replace=True``.
        """
        if not PROVIDER_NAME.fullmatch(name):
            raise ValueError(f"provider name {name!r} must be lower-case letters, digits, '_', '.' or '-'")
        with self._lock:
            current = self._factories.get(name)
            if current is not None and current != factory and not replace:
                raise ValueError(f"{self.group} provider {name!r} is already registered (pass replace=True)")
            self._factories[name] = factory

    def unregister(self, name: str) -> None:
        """Forget ``name`` (for tests and plug-ins that unload); unknown names are ignored."""
        with self._lock:
            self._factories.pop(name, None)

    def names(self) -> list[str]:
        """Registered provider names, in registration order (built-ins first)."""
        with self._lock:
            return list(self._factories)

    def make(self, s: S) -> P:
        """The provider ``s.provider`` names, built from ``s``; an unknown name is a ``ConfigError``."""
        return self.build(s.provider, s)

    def build(self, name: str, s: S) -> P:
        """The entry ``name``, built from ``s``; an unknown name is a ``ConfigError``."""
        return self.factory(name)(s)

    def factory(self, name: str) -> Callable[[S], P]:
        """The factory registered as ``name``; an unknown name is a ``ConfigError``."""
        with self._lock:
            factory = self._factories.get(name)
        if factory is None:
            raise ConfigError(
                f"{self.setting} must be one of {', '.join(self.names())} (got {name!r}).",
                hint=f"A plug-in is available once its package registers it ({self.register_call}).",
            )
        return factory
