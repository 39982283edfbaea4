"""What ``vaultlens providers`` reports: each configured provider, where it runs, what it receives.

The point is privacy, so every row says in words which data goes there and whether the user
already agreed; a key is described by where it was found, never shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vaultlens.config.consent import granted
from vaultlens.config.keys import find_key
from vaultlens.config.settings import Settings
from vaultlens.embedding.base import EmbeddingProvider, remote_destination
from vaultlens.embedding.tiers.base import TierProvider
from vaultlens.embedding.tiers.remote import tier_destination
from vaultlens.errors import VaultlensError
from vaultlens.llm.base import llm_destination
from vaultlens.llm.http_chat import ChatHTTPProvider
from vaultlens.llm.registry import make_llm
from vaultlens.services.serial import AsDict

EMBEDDING_RECEIVES = (
    "the text of every indexed note, in chunks (index, watch, rebuild), and your search queries"
)
LLM_RECEIVES = (
    "your question and up to 12,000 characters of the best matching note passages per answer "
    "(ask, chat); in chat also earlier questions and answers; nothing with ask --extractive"
)


@dataclass(frozen=True, slots=True)
class ProviderInfo(AsDict):
    role: str  # embedding | embedding tier | llm
    provider: str
    model: str
    endpoint: str  # "" for a model inside this process
    remote: bool
    receives: str
    consent: str  # "not needed (stays on this machine)" | "granted" | "not yet asked"
    api_key: str = ""  # where the key comes from, never the key
    error: str | None = None  # the settings cannot build this provider


def _consent(destination: str | None) -> str:
    if destination is None:
        return "not needed (stays on this machine)"
    return "granted" if granted(destination) else "not yet asked (asked before the first call)"


def describe_providers(
    settings: Settings, embedding: Callable[[], EmbeddingProvider], tier: TierProvider | None
) -> list[ProviderInfo]:
    """One row per configured model (``embedding`` builds the embedding provider, which may fail)."""
    rows: list[ProviderInfo] = []
    e = settings.embedding
    try:
        emb = embedding()
        space = emb.space
        where = remote_destination(emb)
        rows.append(
            ProviderInfo(
                "embedding",
                e.provider,
                space.model,
                space.endpoint,
                emb.remote,
                EMBEDDING_RECEIVES,
                _consent(where),
            )
        )
    except VaultlensError as exc:
        rows.append(
            ProviderInfo("embedding", e.provider, e.model_name, e.endpoint, False, "", "", error=exc.message)
        )
    if tier is not None:
        receives = EMBEDDING_RECEIVES + " (a second vector per chunk; embedding.tier)"
        space, where = tier.space, tier_destination(tier)  # where: None for a model on this machine
        rows.append(
            ProviderInfo(
                "embedding tier",
                space.provider,
                space.model,
                space.endpoint,
                where is not None,
                receives,
                _consent(where),
            )
        )
    s = settings.llm
    try:
        chat = make_llm(s)
    except VaultlensError as exc:
        env = s.api_key_env
        _, source = find_key(s.provider, env) if env else (None, None)
        key = f"from {source.found_in}" if source and source.found_in else ""
        rows.append(
            ProviderInfo(
                "llm", s.provider, s.model_name, s.endpoint, False, LLM_RECEIVES, "", key, exc.message
            )
        )
        return rows
    try:
        key = ""
        if isinstance(chat, ChatHTTPProvider):
            src = chat.key_source
            key = (
                f"from {src.found_in}" if src.found_in else (f"${src.env_var} not set" if src.env_var else "")
            )
        rows.append(
            ProviderInfo(
                "llm",
                chat.name,
                chat.model,
                chat.endpoint,
                chat.remote,
                LLM_RECEIVES,
                _consent(llm_destination(chat)),
                key,
            )
        )
    finally:
        chat.close()
    return rows
