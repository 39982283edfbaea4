"""Keeping the index: index, rebuild (in place or in the background), clear, watch, status, doctor.

The one writer of a vault's index holds its writer lock (index, rebuild, watch, clear); a read
(status, doctor) takes one snapshot. A verb that would send note text to a remote embedding
provider asks first (:func:`~vaultlens.services.consent.require_embedding_consent`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from vaultlens.errors import ProviderError, StoreError, VaultlensError, translated_errors
from vaultlens.index.indexer import Indexer, Progress
from vaultlens.index.rebuild import RebuildResult, rebuild_background
from vaultlens.index.runs import RunRecord, RunStats
from vaultlens.index.store import Store, space_matches
from vaultlens.index.watcher import FlushReport, Watcher
from vaultlens.services.app import App
from vaultlens.services.consent import require_embedding_consent
from vaultlens.services.results import DoctorReport, FileProblem, IndexStatus, SpaceChange, TierStatus
from vaultlens.vault.scan import paths_sharing_a_file

__all__ = [
    "clear",
    "doctor",
    "index",
    "rebuild",
    "rebuild_in_background",
    "status",
    "unfinished_run",
    "watch",
]


def _ask_consent(app: App, consent: bool) -> None:
    require_embedding_consent(app.files(), app.provider(), app.settings.index.chunk_max, consent)


def index(app: App, progress: Progress | None = None, consent: bool = False) -> RunStats:
    """Bring the index up to date with the vault (the one writer; resumable)."""
    with translated_errors(path=app.index_dir):
        _ask_consent(app, consent)
        with app.writing(), app.live.lease(create=True) as store:
            return Indexer(app.vault, store, app.provider(), app.settings, progress, app.tier()).run()


def clear(app: App) -> bool:
    """Empty the index; it stays empty until the user indexes again (no unfinished rebuild revives it).

    Returns False when there was no index to clear."""
    with translated_errors(path=app.index_dir):
        if not app.has_index():
            return False
        with app.writing():
            with app.live.lease() as store:
                store.clear()
            app.home.discard_stale_staging()
        return True


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
                return Indexer(app.vault, store, app.provider(), app.settings, progress, app.tier()).run()


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
    with translated_errors(path=app.index_dir):
        _ask_consent(app, consent)
        result = rebuild_background(
            app.home, app.vault, app.provider(), app.settings, progress, switch_wait, app.tier()
        )
        app.live.reset()
        return result


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
        _ask_consent(app, consent)
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


def status(app: App) -> IndexStatus:
    """Coverage: indexed, skipped and failed files with reasons, totals, model, last run."""
    with translated_errors(path=app.index_dir):
        base = IndexStatus(
            str(app.vault), str(app.index_dir), indexed=False, rule_problems=app.files().rule_problems()
        )
        if not app.has_index():
            return base
        with app.reading() as store:
            records = store.file_records()
            counts = store.counts()
            return replace(
                base,
                indexed=True,
                cleared=store.cleared,
                files={"indexed": 0, "skipped": 0, "failed": 0, **counts.files},
                notes=counts.notes,
                chunks=counts.chunks,
                vectors=counts.vectors,
                size_bytes=store.size_bytes(),
                embedding_space=store.space,
                space_change=_space_change(app, store),
                problems=[
                    FileProblem(r.path, r.status, r.reason)
                    for r in sorted(records.values(), key=lambda r: r.path)
                    if r.reason
                ],
                last_run=_last_run(app, store),
                rechunk_pending=store.get_meta("chunker") not in (None, app.chunker().signature),
                tier=_tier_status(app, store),
            )


def unfinished_run(app: App) -> RunRecord | None:
    """The last index run when it stopped before every note reached the index (Ctrl-C, a kill, an
    error), so a search may miss notes; None when the index is whole or there is none."""
    if not app.has_index():
        return None
    with translated_errors(path=app.index_dir), app.reading() as store:
        run = _last_run(app, store)
    return run if run is not None and run.status != "ok" and not run.stats.complete else None


def _tier_status(app: App, store: Store) -> TierStatus | None:
    """What the quality tier covers, when it is switched on or still holds vectors."""
    setting, stored = app.settings.embedding.tier, store.tier_space
    if setting == "off" and stored is None:
        return None
    have, total = store.tier_coverage()
    return TierStatus(setting, None if stored is None else stored.describe(), have, total)


def _last_run(app: App, store: Store) -> RunRecord | None:
    """The last run; one still marked running whose process is gone (kill -9, power loss) is interrupted."""
    run = store.last_run()
    if run is not None and run.status == "running":
        try:
            busy = app.home.writer_lock().busy()
        except VaultlensError:  # a read-only index: it cannot be probed, so it is not called interrupted
            return run
        if not busy:
            return replace(run, status="interrupted")
    return run


def _space_change(app: App, store: Store) -> SpaceChange | None:
    """None when the settings' space is the index's; else the configured space and the rebuild estimate."""
    stored = store.space
    try:
        configured = app.provider().space
    except VaultlensError as exc:  # a provider that cannot be built here
        return SpaceChange(None, None, exc.message)
    if stored is None or space_matches(stored, configured):
        return None
    estimate = store.rebuild_estimate(configured)
    return SpaceChange(configured.describe(), estimate, estimate.describe())


def doctor(app: App) -> DoctorReport:
    """Integrity and consistency of the index, and vault rules that do not work as the user meant."""
    with translated_errors(path=app.index_dir):
        with app.reading() as store:
            records = store.file_records()
            problems = store.problems()
            unused = store.unused_vectors()
        indexed = [p for p, r in records.items() if r.status == "indexed"]
        for real, rels in paths_sharing_a_file(app.vault, indexed).items():
            problems.append(f"{real} is indexed under {len(rels)} paths: {', '.join(rels)}")
        return DoctorReport(problems, app.files().rule_problems(), unused)
