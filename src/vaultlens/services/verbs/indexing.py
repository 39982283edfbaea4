"""Keeping the index: index, rebuild (in place or in the background), clear, watch.

The one writer of a vault's index holds its writer lock (index, rebuild, watch, clear). A verb that would send note text to a remote embedding
provider asks first (:func:`~vaultlens.services.consent.require_embedding_consent`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from vaultlens.errors import ProviderError, StoreError, translated_errors
from vaultlens.index.indexing.indexer import Indexer
from vaultlens.index.progress import Progress
from vaultlens.index.runs import RunStats
from vaultlens.index.store import Store
from vaultlens.services.app import App
from vaultlens.services.consent import require_embedding_consent
from vaultlens.services.status.results import Cleared

if TYPE_CHECKING:  # `index` and `clear` do not load the watcher (watchdog) or the background rebuild
    from vaultlens.index.rebuild import RebuildResult
    from vaultlens.index.watcher import FlushReport

__all__ = ["clear", "index", "rebuild", "rebuild_in_background", "watch"]


def _ask_consent(app: App, consent: bool) -> None:
    app.tier_choice(None)  # an unknown embedding.tier fails now, not after the main pass
    require_embedding_consent(app.files(), app.provider(), app.settings.index.chunk_max, consent, app.tier())


def index(app: App, progress: Progress | None = None, consent: bool = False) -> RunStats:
    """Bring the index up to date with the vault (the one writer; resumable)."""
    with translated_errors(path=app.index_dir):
        _ask_consent(app, consent)
        with app.writing(), app.live.lease(create=True) as store:
            return Indexer(app.vault, store, app.provider(), app.settings, progress, app.tier).run()


def clear(app: App) -> Cleared:
    """Empty the index; it stays empty until the user indexes again (no unfinished rebuild revives it).

    ``cleared`` is False when there was no index to clear."""
    with translated_errors(path=app.index_dir):
        if not app.has_index():
            return Cleared(str(app.vault), False)
        with app.writing():
            with app.live.lease() as store:
                store.clear()
            app.home.discard_stale_staging()
        return Cleared(str(app.vault), True)


def rebuild(app: App, progress: Progress | None = None, consent: bool = False) -> RunStats:
    """Throw the live index away (including its embedding space) and build it from scratch.

    The new store lives in a new folder (:meth:`IndexHome.start_over`); searches meanwhile find no
    index or a partial one, as the user chose by not rebuilding in the background."""
    with translated_errors(path=app.index_dir):
        _ask_consent(app, consent)
        _check_provider(app)
        with app.writing():
            app.live.reset()
            app.home.start_over()
            with app.live.lease(create=True) as store:
                return Indexer(app.vault, store, app.provider(), app.settings, progress, app.tier).run()


def _check_provider(app: App) -> None:
    """Embed one probe text, so a rebuild never deletes a working index for a provider that fails."""
    try:
        app.provider().embed(["vaultlens provider check"])
    except ProviderError as exc:
        raise type(exc)(f"{exc.message} Nothing was deleted: the index is as it was.", hint=exc.hint) from exc


def rebuild_in_background(
    app: App, progress: Progress | None = None, switch_wait: float = 30.0, consent: bool = False
) -> RebuildResult:
    """Build the configured space next to the live index, which keeps answering; switch when done."""
    from vaultlens.index.rebuild import rebuild_background

    with translated_errors(path=app.index_dir):
        _ask_consent(app, consent)
        result = rebuild_background(
            app.home, app.vault, app.provider(), app.settings, progress, switch_wait, app.tier
        )
        app.live.reset()
        return result


def watch(
    app: App,
    on_flush: Callable[[FlushReport], None],
    stop_event: threading.Event,
    progress: Progress | None = None,
    consent: bool = False,
    progress_in_flushes: bool = False,
) -> None:
    """Reconcile, then follow file events until ``stop_event`` is set (or KeyboardInterrupt).

    ``progress`` follows the startup run, and every flush too with ``progress_in_flushes`` (a
    server's page shows each flush's quality-tier fill; a terminal only the startup run).

    The writer lock is held throughout, so a second `watch` or an `index` is refused. A cleared
    index is refused too: watching would silently rebuild what the user chose to empty. When the
    vault folder is moved away or deleted, it stops with a :class:`VaultError`.
    """
    with translated_errors(path=app.index_dir):
        _ask_consent(app, consent)
        with app.writing(), app.live.lease(create=True) as store:
            _follow(app, store, on_flush, stop_event, progress, progress_in_flushes)


def _follow(
    app: App,
    store: Store,
    on_flush: Callable[[FlushReport], None],
    stop_event: threading.Event,
    progress: Progress | None,
    progress_in_flushes: bool,
) -> None:
    from vaultlens.index.watcher import Watcher

    if store.cleared:
        raise StoreError(
            f"The index for {app.vault} was cleared; `vaultlens watch` does not rebuild it on its own.",
            hint="Run `vaultlens index` to build it again, then start `vaultlens watch`.",
        )
    provider = app.provider()
    if not provider.remote:
        provider.embed(["warm up"])  # load the local model now, not on the first save (seconds)
    indexer = Indexer(app.vault, store, provider, app.settings, progress, app.tier)
    w = app.settings.watch
    Watcher(indexer, w.debounce_ms / 1000, on_flush, w.max_wait_ms / 1000, progress_in_flushes).run(
        stop_event
    )
