"""`watch`: keep the index current while the vault changes, as the one writer of its index."""

from __future__ import annotations

import threading
from collections.abc import Callable

from vaultlens.errors import StoreError, translated_errors
from vaultlens.index.indexer import Indexer, Progress
from vaultlens.index.store import Store
from vaultlens.index.watcher import FlushReport, Watcher
from vaultlens.services.app import App, require_embedding_consent


def watch(
    app: App,
    on_flush: Callable[[FlushReport], None],
    stop_event: threading.Event,
    progress: Progress | None = None,
    consent: bool = False,
) -> None:
    """Reconcile, then follow file events until ``stop_event`` is set (or KeyboardInterrupt).

    The writer lock is held throughout, so a second `watch` or an `index` is refused. A cleared
    index is refused too: watching would silently rebuild what the user chose to empty. When the
    vault folder is moved away or deleted, it stops with a :class:`VaultError`.
    """
    with translated_errors(path=app.index_dir):
        require_embedding_consent(app, consent)
        with app.writing(), app.live.lease(create=True) as store:
            _follow(app, store, on_flush, stop_event, progress)


def _follow(
    app: App,
    store: Store,
    on_flush: Callable[[FlushReport], None],
    stop_event: threading.Event,
    progress: Progress | None,
) -> None:
    if store.cleared:
        raise StoreError(
            f"The index for {app.vault} was cleared; `vaultlens watch` does not rebuild it on its own.",
            hint="Run `vaultlens index` to build it again, then start `vaultlens watch`.",
        )
    provider = app.provider()
    if not provider.remote:
        provider.embed(["warm up"])  # load the local model now, not on the first save (seconds)
    indexer = Indexer(app.vault, store, provider, app.settings, progress, app.tier())
    w = app.settings.watch
    Watcher(indexer, w.debounce_ms / 1000, on_flush, w.max_wait_ms / 1000).run(stop_event)
