"""Composition root: one place that turns a vault path and settings into a store and a provider.

Every interface (CLI today; API, MCP and web later) builds one :class:`App` and calls the
service functions with it, so they all behave the same.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vaultlens.config.paths import index_dir
from vaultlens.config.settings import LoadedSettings, Settings, load_settings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.embedding.registry import make_provider
from vaultlens.errors import StoreError, VaultlensError
from vaultlens.index.indexer import Indexer, Progress, RunStats
from vaultlens.index.lock import WriterLock
from vaultlens.index.sqlite_store import DB_NAME, SQLiteStore
from vaultlens.services import discover
from vaultlens.services.search import Fusion, NoteHit, search
from vaultlens.vault.scan import check_vault


@dataclass
class App:
    vault: Path
    loaded: LoadedSettings
    _store: SQLiteStore | None = field(default=None, repr=False)
    _provider: EmbeddingProvider | None = field(default=None, repr=False)

    @classmethod
    def open(cls, vault: Path, overrides: dict[str, str] | None = None) -> App:
        root = check_vault(vault)
        return cls(root, load_settings(root, overrides))

    @property
    def settings(self) -> Settings:
        return self.loaded.settings

    @property
    def index_dir(self) -> Path:
        return index_dir(self.vault)

    def has_index(self) -> bool:
        return (self.index_dir / DB_NAME).exists()

    def store(self, create: bool = False) -> SQLiteStore:
        if self._store is None:
            if not create and not self.has_index():
                raise StoreError(
                    f"There is no index for {self.vault} yet.", hint="Run `vaultlens index` to build it."
                )
            self._store = SQLiteStore(self.index_dir)
        return self._store

    def provider(self) -> EmbeddingProvider:
        if self._provider is None:
            self._provider = make_provider(self.settings.embedding)
        return self._provider

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def index(app: App, progress: Progress | None = None) -> RunStats:
    """Bring the index up to date with the vault (the one writer; resumable)."""
    with WriterLock(app.index_dir):
        store = app.store(create=True)
        return Indexer(app.vault, store, app.provider(), app.settings, progress).run()


def clear(app: App) -> None:
    """Empty the index; it stays empty until the user indexes again."""
    if not app.has_index():
        return
    with WriterLock(app.index_dir):
        app.store().clear()


def rebuild(app: App, progress: Progress | None = None) -> RunStats:
    """Throw the index away (including its embedding space) and build it from scratch."""
    with WriterLock(app.index_dir):
        app.close()
        for p in app.index_dir.iterdir():
            if p.name != "writer.lock":
                if p.is_dir():
                    shutil.rmtree(p)
                else:
                    p.unlink()
        store = app.store(create=True)
        return Indexer(app.vault, store, app.provider(), app.settings, progress).run()


def find(app: App, query: str, limit: int | None = None, sections: int | None = None) -> list[NoteHit]:
    s = app.settings.search
    store = app.store()
    store.check_space(app.provider().space)
    return search(
        store,
        app.provider(),
        query,
        limit or s.limit,
        sections or s.sections,
        s.max_query_chars,
        Fusion(max_lexical_weight=s.max_lexical_weight, candidates=s.candidates),
    )


def similar_notes(app: App, note: str, limit: int | None = None) -> discover.SimilarResult:
    """Notes related to ``note`` from stored vectors only (no embedding call)."""
    store = app.store()
    path = discover.resolve_note(store, str(app.vault), note)
    return discover.similar(store, path, limit or app.settings.search.limit)


def find_duplicates(
    app: App, threshold: float | None = None, limit: int | None = None
) -> discover.DuplicateReport:
    d = app.settings.discover
    return discover.duplicates(
        app.store(), threshold or d.duplicate_threshold, limit or d.duplicate_limit, d.min_chars
    )


def dismiss_duplicate(app: App, a: str, b: str) -> tuple[str, str]:
    """Hide a candidate pair until either note changes."""
    store = app.store()
    pa = discover.resolve_note(store, str(app.vault), a)
    pb = discover.resolve_note(store, str(app.vault), b)
    store.dismiss_pair(pa, pb)
    return pa, pb


def status(app: App) -> dict[str, Any]:
    base: dict[str, Any] = {"vault": str(app.vault), "index_dir": str(app.index_dir)}
    if not app.has_index():
        return {**base, "indexed": False}
    store = app.store()
    records = store.file_records()
    counts = {"indexed": 0, "skipped": 0, "failed": 0}
    for r in records.values():
        counts[r.status] = counts.get(r.status, 0) + 1
    space = store.space
    c = store.counts()
    return {
        **base,
        "indexed": True,
        "files": counts,
        "notes": c["notes"],
        "chunks": c["chunks"],
        "vectors": c["vectors"],
        "size_bytes": store.size_bytes(),
        "embedding_space": None if space is None else {**asdict(space), "label": space.describe()},
        "configured_space_matches": _space_matches(app, store),
        "problems": [
            {"path": r.path, "status": r.status, "reason": r.reason}
            for r in sorted(records.values(), key=lambda r: r.path)
            if r.reason
        ],
        "last_run": store.last_run(),
    }


def _space_matches(app: App, store: SQLiteStore) -> bool:
    try:
        store.check_space(app.provider().space)
    except VaultlensError:  # mismatch, or a provider that cannot be built here
        return False
    return True


def doctor(app: App) -> list[str]:
    """Integrity and consistency problems of the index; empty list = healthy."""
    return app.store().problems()
