"""Composition root: one place that turns a vault path and settings into a store and a provider.

Every interface (CLI today; API, MCP and web later) builds one :class:`App` and calls the
service functions with it, so they all behave the same.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vaultlens.config import paths
from vaultlens.config.settings import LoadedSettings, Settings, load_settings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.embedding.registry import make_provider
from vaultlens.errors import StoreError, VaultlensError
from vaultlens.index.indexer import Indexer, Progress, RunStats
from vaultlens.index.lock import WriterLock
from vaultlens.index.rebuild import RebuildResult, discard_stale_staging, rebuild_background, wipe_store
from vaultlens.index.sqlite_store import DB_NAME, SQLiteStore, space_matches
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
    def index_root(self) -> Path:
        """The vault's stable index folder: holds the live writer lock and the ``current`` pointer."""
        return paths.index_dir(self.vault)

    @property
    def index_dir(self) -> Path:
        """The live store's folder, re-read from the pointer on every call (a rebuild may switch it)."""
        return paths.live_index_dir(self.index_root)

    def writer_lock(self) -> WriterLock:
        """The one writer lock of the live index; every writer (index, watch, clear, rebuild) takes it."""
        return WriterLock(self.index_root)

    def has_index(self) -> bool:
        return (self.index_dir / DB_NAME).exists()

    def store(self, create: bool = False) -> SQLiteStore:
        """The live store. Reopened when a background rebuild has switched the pointer since the last
        call; a pointer that moves while opening is re-read, so a search never lands on a deleted one."""
        for _ in range(5):
            live = self.index_dir
            if self._store is not None and self._store.directory == live:
                return self._store
            self.close()
            if not create and not (live / DB_NAME).exists():
                if self.index_dir != live:
                    continue
                raise StoreError(
                    f"There is no index for {self.vault} yet.", hint="Run `vaultlens index` to build it."
                )
            store = SQLiteStore(live)
            if self.index_dir == live:
                self._store = store
                return store
            store.close()
        raise StoreError(f"The index for {self.vault} keeps moving; another process is switching it.")

    def provider(self) -> EmbeddingProvider:
        if self._provider is None:
            self._provider = make_provider(self.settings.embedding)
        return self._provider

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def remote_destination(app: App) -> str | None:
    """Where note text goes for embedding when that is off this machine; None when it stays local."""
    provider = app.provider()
    if not provider.remote:
        return None
    space = provider.space
    return f"{space.provider} model {space.model} at {space.endpoint}"


def index(app: App, progress: Progress | None = None) -> RunStats:
    """Bring the index up to date with the vault (the one writer; resumable)."""
    with app.writer_lock():
        store = app.store(create=True)
        return Indexer(app.vault, store, app.provider(), app.settings, progress).run()


def clear(app: App) -> None:
    """Empty the index; it stays empty until the user indexes again (no unfinished rebuild revives it)."""
    if not app.has_index():
        return
    with app.writer_lock():
        app.store().clear()
        discard_stale_staging(app.index_root)


def rebuild(app: App, progress: Progress | None = None) -> RunStats:
    """Throw the live index away (including its embedding space) and build it from scratch in place."""
    with app.writer_lock():
        live = app.index_dir
        app.close()
        wipe_store(live)
        store = app.store(create=True)
        return Indexer(app.vault, store, app.provider(), app.settings, progress).run()


def rebuild_in_background(
    app: App, progress: Progress | None = None, switch_wait: float = 30.0
) -> RebuildResult:
    """Build the configured space next to the live index, which keeps answering; switch when done."""
    app.close()
    return rebuild_background(app.index_root, app.vault, app.provider(), app.settings, progress, switch_wait)


def find(app: App, query: str, limit: int | None = None, sections: int | None = None) -> list[NoteHit]:
    """Search inside one snapshot: every read sees the same committed generation."""
    s = app.settings.search
    store = app.store()
    with store.snapshot():
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
    with store.snapshot():
        path = discover.resolve_note(store, str(app.vault), note)
        return discover.similar(store, path, limit or app.settings.search.limit)


def find_duplicates(
    app: App, threshold: float | None = None, limit: int | None = None
) -> discover.DuplicateReport:
    d = app.settings.discover
    store = app.store()
    with store.snapshot():
        return discover.duplicates(
            store, threshold or d.duplicate_threshold, limit or d.duplicate_limit, d.min_chars
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
    with store.snapshot():
        records = store.file_records()
        counts = {"indexed": 0, "skipped": 0, "failed": 0}
        for r in records.values():
            counts[r.status] = counts.get(r.status, 0) + 1
        space = store.space
        c = store.counts()
        change = _space_change(app, store)
        return {
            **base,
            "indexed": True,
            "cleared": store.cleared,
            "files": counts,
            "notes": c["notes"],
            "chunks": c["chunks"],
            "vectors": c["vectors"],
            "size_bytes": store.size_bytes(),
            "embedding_space": None if space is None else {**asdict(space), "label": space.describe()},
            "configured_space_matches": change is None,
            "space_change": change,
            "problems": [
                {"path": r.path, "status": r.status, "reason": r.reason}
                for r in sorted(records.values(), key=lambda r: r.path)
                if r.reason
            ],
            "last_run": store.last_run(),
        }


def _space_change(app: App, store: SQLiteStore) -> dict[str, Any] | None:
    """None when the settings' space is the index's; else the configured space and the rebuild estimate."""
    stored = store.space
    try:
        configured = app.provider().space
    except VaultlensError as exc:  # a provider that cannot be built here
        return {"configured": None, "error": exc.message}
    if stored is None or space_matches(stored, configured):
        return None
    estimate = store.rebuild_estimate(configured)
    return {"configured": configured.describe(), **estimate.as_dict(), "message": estimate.describe()}


def doctor(app: App) -> list[str]:
    """Integrity and consistency problems of the index; empty list = healthy."""
    return app.store().problems()
