"""``embedding.tier`` -> the tier provider it names: a name -> factory registry, plus provider forms.

Built-in names (``e5``, ``minilm-en``) register through the same call a plug-in uses::

    from vaultlens.embedding.tiers.registry import register_tier
    register_tier("mine", lambda s: MyTier(threads=s.threads))   # then: --set embedding.tier=mine

A value ``"<kind>:<model>"`` (``ollama:bge-m3``, ``local:/models/embeddinggemma``) goes to the factory registered for its kind with
:func:`register_tier_form`; the factory gets a :class:`TierForm` (the settings and the model name).
``off`` is no tier; ``auto`` is resolved per vault first (:mod:`vaultlens.embedding.tiers.auto`).
The settings layer only checks the value's shape; an unknown name or kind is a ``ConfigError`` here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vaultlens.config.registry import ProviderRegistry
from vaultlens.config.settings import TIER_FORM, EmbeddingSettings
from vaultlens.embedding.tiers.base import TierProvider
from vaultlens.embedding.tiers.e5 import E5Tier
from vaultlens.embedding.tiers.local import LocalTier
from vaultlens.embedding.tiers.minilm import MiniLMTier
from vaultlens.embedding.tiers.remote import TIER_FORMS
from vaultlens.errors import ConfigError


@dataclass(frozen=True, slots=True)
class TierForm:
    """What a provider-form factory builds from: ``embedding.tier = "<kind>:<model>"``."""

    settings: EmbeddingSettings
    kind: str  # ollama, openai-compatible, local, ...
    model: str  # a model name, or for local: the model folder's path

    @property
    def provider(self) -> str:
        return self.kind


TierFormFactory = Callable[[TierForm], TierProvider]

_NAMES: ProviderRegistry[EmbeddingSettings, TierProvider] = ProviderRegistry(
    "embedding", "vaultlens.embedding.tiers.registry.register_tier", setting="embedding.tier"
)
_FORMS: ProviderRegistry[TierForm, TierProvider] = ProviderRegistry(
    "embedding", "vaultlens.embedding.tiers.registry.register_tier_form"
)
register_tier = _NAMES.register
unregister_tier = _NAMES.unregister
register_tier_form = _FORMS.register
unregister_tier_form = _FORMS.unregister


def check_tier(name: str) -> None:
    """Refuse (ConfigError) a tier value nobody registered, without building it."""
    if name in ("off", "auto"):
        return
    form = TIER_FORM.fullmatch(name)
    if form is None:
        _NAMES.factory(name)
    else:
        _form_factory(form.group(1))


def _form_factory(kind: str) -> TierFormFactory:
    if kind not in _FORMS.names():
        known = ", ".join(f"{k}:<model>" for k in _FORMS.names()) or "none"
        raise ConfigError(
            f"embedding.tier names a model of kind {kind!r}, but no tier provider of that kind is registered.",
            hint=f"Known kinds: {known}; a plug-in adds one with {_FORMS.register_call}.",
        )
    return _FORMS.factory(kind)


def make_tier(s: EmbeddingSettings, name: str | None = None) -> TierProvider | None:
    """The tier ``name`` (default: ``s.tier``), or None for off; its model loads on first use.

    ``auto`` must be resolved to a name first (it depends on the vault)."""
    name = s.tier if name is None else name
    if name == "off":
        return None
    if name == "auto":
        raise ValueError("embedding.tier = auto is resolved per vault before a tier is made")
    form = TIER_FORM.fullmatch(name)
    if form is None:
        return _NAMES.build(name, s)
    return _form_factory(form.group(1))(TierForm(s, form.group(1), form.group(2)))


register_tier("e5", lambda s: E5Tier(threads=s.threads))
register_tier("minilm-en", lambda s: MiniLMTier(threads=s.threads))


def _remote(kind: str) -> TierFormFactory:
    make = TIER_FORMS[kind]

    def build(form: TierForm) -> TierProvider:
        return make(form.model, form.settings)

    return build


for _kind in TIER_FORMS:  # ollama:MODEL, openai-compatible:MODEL (embedding/tiers/remote.py)
    register_tier_form(_kind, _remote(_kind))
register_tier_form("local", lambda form: LocalTier(form.model, form.settings))  # embedding/tiers/local.py
