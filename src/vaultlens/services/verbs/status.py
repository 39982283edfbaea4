"""What the index holds and whether it is sound: status, doctor, and an unfinished last run.

Reads only (one snapshot each), so a command that asks loads no indexer, watcher or model.
"""

from __future__ import annotations

from dataclasses import replace

from vaultlens.errors import VaultlensError, translated_errors
from vaultlens.index.runs import RunRecord
from vaultlens.index.store import Store, space_matches
from vaultlens.services.app import App
from vaultlens.services.status.results import DoctorReport, FileProblem, IndexStatus, SpaceChange, TierStatus
from vaultlens.vault.scan import paths_sharing_a_file

__all__ = [
    "DoctorReport",
    "FileProblem",
    "IndexStatus",
    "SpaceChange",
    "TierStatus",
    "doctor",
    "status",
    "unfinished_run",
]


def status(app: App) -> IndexStatus:
    """Coverage: indexed, skipped and failed files with reasons, totals, model, last run."""
    with translated_errors(path=app.index_dir):
        base = IndexStatus(
            str(app.vault), str(app.index_dir), indexed=False, rule_problems=app.files().rule_problems()
        )
        app.tier_choice(None)  # an embedding.tier nobody registered is an error, index or not
        if not app.has_index():
            return base
        with app.reading() as store:
            counts = store.counts()
            return replace(
                base,
                indexed=True,
                cleared=store.cleared,
                files={"indexed": 0, "skipped": 0, "failed": 0, **counts.files},
                notes=counts.notes,
                pdfs=counts.kinds.get("pdf", 0),
                canvases=counts.kinds.get("canvas", 0),
                chunks=counts.chunks,
                vectors=counts.vectors,
                size_bytes=store.size_bytes(),
                embedding_space=store.space,
                space_change=_space_change(app, store),
                problems=[FileProblem(r.path, r.status, r.reason) for r in store.file_problems() if r.reason],
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
    run = store.last_run()
    error = run.stats.tier_error if run is not None and run.stats.tier_error else None
    choice = app.tier_choice(store)
    behind = choice.name != "off" and have < total
    return TierStatus(
        setting,
        None if stored is None else stored.describe(),
        have,
        total,
        choice.name,
        choice.reason,
        behind,
        error,
    )


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


def doctor(app: App, deep: bool = False) -> DoctorReport:
    """Integrity and consistency of the index, and vault rules that do not work as the user meant.

    ``deep``: also measure the ANN tier's recall@10 against exact search (stored vectors as queries).
    With no index yet, the journal is still read: a half-written group needs no index to be reported."""
    from vaultlens.services.changing import writes  # the journal: only doctor of this module reads it

    if not app.has_index():
        unfinished = [problem for _, problem in writes.unfinished(app.vault)]
        if not unfinished:
            with app.reading():  # raises IndexNotFound, with its hint
                pass
        return DoctorReport([], app.files().rule_problems(), unfinished_writes=unfinished)
    with translated_errors(path=app.index_dir):
        with app.reading() as store:
            records = store.file_records()
            problems = store.problems()
            unused = store.unused_vectors()
            recall = store.ann_recall() if deep else None
        indexed = [p for p, r in records.items() if r.status == "indexed"]
        for real, rels in paths_sharing_a_file(app.vault, indexed).items():
            problems.append(f"{real} is indexed under {len(rels)} paths: {', '.join(rels)}")
        return DoctorReport(
            problems,
            app.files().rule_problems(),
            unused,
            recall,
            [p for _, p in writes.unfinished(app.vault)],
        )
