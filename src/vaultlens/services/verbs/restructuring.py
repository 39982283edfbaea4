"""Restructuring notes: split a note into atomic notes and run a preset over many notes (with a
model); move a note or merge two with every link repointed (without one).

Each verb plans exact writes and returns them with their diffs; nothing is written here (``apply``
in :mod:`vaultlens.services.verbs.changing` writes a confirmed diff or group, ``undo`` reverts
it). Before note text goes to a remote model the verb raises
:class:`~vaultlens.errors.ConsentRequired` unless ``consent`` (or a remembered grant;
``remember=False``: this call's ``consent`` only).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from vaultlens.chunking.source import NoteSource
from vaultlens.errors import InvalidInput, translated_errors
from vaultlens.services.app import App
from vaultlens.services.changing import writes
from vaultlens.services.consent import require_llm_consent
from vaultlens.services.drafting import draft
from vaultlens.services.drafting.presets import instruction_for
from vaultlens.services.restructuring import batch, batch_state, merge, split
from vaultlens.services.restructuring.batch import BatchResult, NoteSelector, Progress
from vaultlens.services.restructuring.batch_state import BatchNote, BatchState
from vaultlens.services.restructuring.merge import MergeResult, MoveResult
from vaultlens.services.restructuring.split import SplitResult

__all__ = [
    "BatchNote",
    "BatchResult",
    "BatchState",
    "MergeResult",
    "MoveResult",
    "NoteSelector",
    "Progress",
    "SplitResult",
    "write_batch",
    "write_batch_run",
    "write_merge",
    "write_move",
    "write_split",
]

MAX_CONCURRENCY = 16

SplitMode = Literal["keep-original", "index"]


@translated_errors()
def write_split(
    app: App, note: str, mode: SplitMode = "keep-original", consent: bool = False, remember: bool = True
) -> SplitResult:
    """Plan splitting ``note`` into atomic notes as one operation group: the model names titles,
    line ranges and links; code builds the notes from the note's exact lines and refuses a plan
    that would lose or double a line (``mode``: the original becomes an index of links, or stays)."""
    files = app.files()
    source = draft.load(files, note)
    prompt = split.prepare(source)
    names = [f.path.rpartition("/")[2].removesuffix(".md") for f in files.scan().notes]
    provider = app.llm()
    try:
        what = f"{source.path} with numbered lines"
        answer, usage = draft.ask_json(files, provider, prompt, split.SCHEMA, what, consent, remember)
    finally:
        provider.close()
    proposed = split.propose(source, answer, names, index=mode == "index")
    count = len(proposed.split.parts)
    how = "the original becomes their index" if mode == "index" else "the original stays as it is"
    planned = writes.plan_group(
        app.vault, proposed.changes, f"split {source.path} into {count} notes ({how})"
    )
    return SplitResult(source.path, mode, proposed.split, planned, usage)


@translated_errors()
def write_batch(
    app: App,
    selector: NoteSelector,
    preset: str | None = None,
    prompt: str | None = None,
    concurrency: int = 4,
) -> BatchResult:
    """Start a batch: pick the notes, estimate tokens and cost, and save its state (nothing is sent;
    :func:`write_batch_run` runs it). The estimate is in ``state.estimate``."""
    instruction, title = instruction_for(preset, prompt)
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise InvalidInput(f"--concurrency must be 1..{MAX_CONCURRENCY}, got {concurrency}.")
    given = selector.given()
    files = app.files()
    paths = batch.select(files, selector)
    llm = app.settings.llm
    est = batch.estimate(files, paths, instruction, (llm.price_in_per_mtok, llm.price_out_per_mtok))
    state = BatchState(
        batch_state.new_batch_id(), str(app.vault), given, instruction, title, concurrency,
        datetime.now(UTC).isoformat(timespec="seconds"), [BatchNote(p) for p in paths], est,
        writes.journal(app.vault).root.name,
    )  # fmt: skip
    batch_state.save(state)
    return batch.result(app.vault, state)


@translated_errors()
def write_batch_run(
    app: App, batch_id: str, consent: bool = False, remember: bool = True, progress: Progress | None = None
) -> BatchResult:
    """Run (or resume) batch ``batch_id``: every note not yet done is sent and gets one planned
    change; notes already done are never sent again. Without ``consent`` for a remote model:
    :class:`~vaultlens.errors.ConsentRequired` first. Returns the changes waiting for review."""
    batch_state.load(batch_id)  # an unknown id is refused before its lock is made
    with batch_state.locked(batch_id):  # the state as it is once no other run holds it
        return _run_batch(app, batch_state.load(batch_id), consent, remember, progress)


def _follow_vault(app: App, state: BatchState) -> None:
    """Refuse a batch of another vault; a batch whose vault folder moved (the same journal identity,
    as safewrite finds it) follows it there."""
    same_id = bool(state.vault_id) and writes.vault_identity(app.vault) == state.vault_id
    if state.vault == str(app.vault) and (same_id or not state.vault_id):
        return
    if not same_id and state.vault == str(app.vault):
        raise InvalidInput(
            f"Batch {state.batch_id} belongs to the vault that was at {state.vault}; the folder there now "
            "is another one.",
            hint="Run it with --vault and the folder that vault moved to.",
        )
    if not same_id:
        raise InvalidInput(
            f"Batch {state.batch_id} belongs to the vault {state.vault}, not {app.vault}.",
            hint=f"Run it with --vault {state.vault!r}.",
        )
    state.vault = str(app.vault)
    batch_state.save(state)


def _run_batch(
    app: App, state: BatchState, consent: bool, remember: bool, progress: Progress | None
) -> BatchResult:
    """:func:`write_batch_run` holding the batch's lock."""
    _follow_vault(app, state)
    files = app.files()
    batch.adopt(app.vault, state)
    batch.reopen(app.vault, state)
    todo = [n for n in state.notes if n.status in ("pending", "failed")]
    if todo:
        provider = app.llm()
        try:
            what = f"the text of {len(todo)} notes, one prompt each ({state.title})"
            require_llm_consent(files, provider, consent, what, remember)
        finally:
            provider.close()
        batch.run(app.vault, files, app.llm, state, remember, progress)
    return batch.result(app.vault, state)


@translated_errors()
def write_move(app: App, old: str, new: str) -> MoveResult:
    """Plan moving (renaming) note ``old`` to ``new`` with every link in the vault repointed, as one
    operation group (nothing is written; ``apply`` writes the confirmed group)."""
    moved = merge.plan_move(app.files(), old, new)
    planned = writes.plan_group(
        app.vault, moved.changes, f"move {moved.old} to {moved.new} ({len(moved.relinked)} note(s) relinked)"
    )
    return MoveResult(moved, planned)


@translated_errors()
def write_merge(app: App, keep: str, other: str, sections: list[str] | None = None) -> MergeResult:
    """Plan merging note ``other`` into ``keep`` as one operation group: OTHER's uncovered sections
    (or ``sections``, by heading) added to KEEP, front matter merged, every link to OTHER repointed
    to KEEP, OTHER moved to the vault's trash (nothing is written)."""
    merged = merge.plan_merge(app.files(), keep, other, sections, lambda o, k: _index_coverage(app, o, k))
    planned = writes.plan_group(
        app.vault,
        merged.changes,
        f"merge {merged.other} into {merged.keep} ({len(merged.relinked)} note(s) relinked)",
    )
    return MergeResult(merged, planned)


def _index_coverage(app: App, other: NoteSource, keep: NoteSource) -> list[tuple[int, int, bool]] | None:
    """OTHER's sections as the duplicate finder rates them against KEEP, when the index holds both
    notes exactly as they are now (None: no index, or either note changed since it was indexed)."""
    from vaultlens.services.finding.duplicates.coverage import SECTION_SLACK, Compared

    d = app.settings.discover
    if not app.has_index():
        return None
    with app.reading() as store:
        records = store.file_records()
        for source in (other, keep):
            record = records.get(source.path)
            if record is None or record.file_hash != source.file_hash:
                return None
        run = Compared(store, d.duplicate_threshold, d.min_chars, d)
        index = {path: n for n, path in enumerate(run.lay.notes)}
        if other.path not in index or keep.path not in index:
            return None
        found = run.sections_against(index[other.path], index[keep.path])
    floor = d.duplicate_threshold - SECTION_SLACK
    return [(first, last, value >= floor) for first, last, value in found]
