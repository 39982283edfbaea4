"""The composition root: one :class:`App` per vault holds its settings, models and index.

Interfaces build one App and hand it to the verbs (:mod:`vaultlens.services.verbs`); the verbs
take from it the narrow things each feature needs (:mod:`vaultlens.services.context`). An App is
safe to share between threads: searches run on leased snapshots of the live store while one
writer (``watch``) commits, and a switch after a background rebuild never closes a store a
reader still holds. The embedding provider and the store backend are injection points
(defaults: the configured provider from the registry, the configured backend).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.config import paths
from vaultlens.config.settings import LoadedSettings, Settings, load_settings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.embedding.registry import make_provider
from vaultlens.embedding.tiers.auto import TierChoice, choose_tier
from vaultlens.embedding.tiers.base import TierProvider
from vaultlens.embedding.tiers.registry import check_tier, make_tier
from vaultlens.errors import IndexNotFound
from vaultlens.index.backends import get_backend
from vaultlens.index.indexing.tier_fill import stored_scripts
from vaultlens.index.lifecycle import IndexHome, LiveStore
from vaultlens.index.store import Store, StoreBackend, space_matches
from vaultlens.services.context import VaultFiles
from vaultlens.vault.scan import check_vault

if TYPE_CHECKING:
    from vaultlens.llm.base import LLMProvider


@dataclass
class App:
    vault: Path
    loaded: LoadedSettings
    backend: StoreBackend = field(default_factory=get_backend)
    _provider: EmbeddingProvider | None = field(default=None, repr=False)
    _provider_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _tiers: dict[str, TierProvider | None] = field(default_factory=dict, repr=False)  # by resolved name

    def __post_init__(self) -> None:
        self.home = IndexHome(paths.index_dir(self.vault), self.backend)
        self.live = LiveStore(self.home)

    @classmethod
    def open(
        cls,
        vault: Path,
        overrides: dict[str, str] | None = None,
        *,
        provider: EmbeddingProvider | None = None,
        backend: StoreBackend | None = None,
    ) -> App:
        """An App for ``vault``: settings from every layer, and optionally an injected provider or backend."""
        root = check_vault(vault)
        paths.check_index_outside_vault(root)  # before anything is created under the home
        paths.ensure_home(writable=False)
        loaded = load_settings(root, overrides)
        return cls(
            root, loaded, backend or get_backend(loaded.settings.index.backend, loaded.settings), provider
        )

    @property
    def settings(self) -> Settings:
        return self.loaded.settings

    @property
    def index_dir(self) -> Path:
        """The live store's folder, re-read on every call (a background rebuild may switch it)."""
        return self.home.live_dir()

    def has_index(self) -> bool:
        return self.home.has_index()

    @contextmanager
    def reading(self) -> Iterator[Store]:
        """The live store frozen at one committed generation for the block (safe from any thread)."""
        if not self.has_index():
            raise IndexNotFound(
                f"There is no index for {self.vault} yet.", hint="Run `vaultlens index` to build it."
            )
        with self.live.reading() as store:
            yield store

    @contextmanager
    def writing(self) -> Iterator[None]:
        """The index's one writer: a writable home, then the writer lock (refused while another holds it)."""
        paths.ensure_home()
        with self.home.writer_lock():
            yield

    def chunker(self) -> MarkdownChunker:
        """The chunker the index uses (the same settings give the same chunk ids and hashes)."""
        s = self.settings.index
        return MarkdownChunker(s.chunk_target, s.chunk_max, s.chunk_overlap)

    def files(self) -> VaultFiles:
        """The vault's notes on disk, with the index's size limit and chunker."""
        return VaultFiles(self.vault, int(self.settings.index.max_file_mb * 1_000_000), self.chunker())

    def llm(self) -> LLMProvider:
        """The configured chat model (a new HTTP client: close it when done)."""
        from vaultlens.llm.registry import make_llm  # httpx: only for the verbs that talk to a model

        return make_llm(self.settings.llm)

    def provider(self) -> EmbeddingProvider:
        with self._provider_lock:
            if self._provider is None:
                self._provider = make_provider(self.settings.embedding)
            return self._provider

    def tier_choice(self, store: Store | None) -> TierChoice:
        """What ``embedding.tier`` resolves to for this vault (``auto``: by the script mix the last
        index run recorded in ``store``); a tier name nobody registered is a ConfigError."""
        setting = self.settings.embedding.tier
        check_tier(setting)
        return choose_tier(
            setting, stored_scripts(store) if store is not None and setting == "auto" else None
        )

    def tier(self, store: Store | None = None) -> TierProvider | None:
        """The quality tier's model for ``store`` (see :meth:`tier_choice`), or None when it is off;
        its model loads on first use."""
        name = self.tier_choice(store).name
        with self._provider_lock:
            if name not in self._tiers:
                self._tiers[name] = make_tier(self.settings.embedding, name)
            return self._tiers[name]

    def search_tier(self, store: Store) -> TierProvider | None:
        """The tier to blend into a search of ``store``: on, and holding vectors of its model."""
        tier, stored = self.tier(store), store.tier_space
        if tier is None or stored is None or not space_matches(stored, tier.space):
            return None  # off, or on but no index run has filled it yet
        return tier

    def close(self) -> None:
        self.live.close()
