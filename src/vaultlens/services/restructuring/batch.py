"""Batch: one transform preset (or the user's own prompt) over many notes, resumable.

1. :func:`select` picks the notes from the vault's scan: under a folder, with a tag (the outline's
   tags; ``#a`` also picks ``#a/b``), changed since a date, or matching a glob.
2. :func:`estimate` says what it costs before anything is sent: prompt and answer tokens
   approximated from characters (4 per token: the real tokenizer is the provider's), and a cost
   only when ``llm.price_in_per_mtok`` / ``llm.price_out_per_mtok`` are set ("unknown" otherwise).
3. :func:`run` sends each note's body (front matter excluded) through the transform pipeline of
   :mod:`vaultlens.services.drafting.transform`, at most ``concurrency`` at a time, and plans one
   safewrite change per note; each outcome is saved at once (:mod:`batch_state`), so Ctrl-C or a
   kill keeps every finished note and a resume runs only the rest. No note is written here: the
   changes are reviewed afterwards (one by one, or all after showing them) and applied through
   safewrite, each undoable on its own.
"""

from __future__ import annotations

import contextlib
import fnmatch
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, get_args

from vaultlens.errors import (
    Cancelled,
    InvalidInput,
    OperationNotFound,
    OutsideSelection,
    PlanRefused,
    VaultlensError,
)
from vaultlens.index.estimate import CHARS_PER_TOKEN
from vaultlens.llm.base import LLMProvider
from vaultlens.safewrite import Entry
from vaultlens.services.changing import writes
from vaultlens.services.context import VaultFiles
from vaultlens.services.drafting import draft, transform
from vaultlens.services.restructuring.batch_state import BatchNote, BatchState, Estimate, NoteStatus
from vaultlens.services.restructuring.split import note_lines
from vaultlens.vault.outline import outline_note
from vaultlens.vault.parse import decode_note

__all__ = [
    "BatchResult",
    "Estimate",
    "NoteSelector",
    "adopt",
    "estimate",
    "reopen",
    "result",
    "run",
    "select",
]

Progress = Callable[[BatchNote, int, int], None]  # a note's outcome, notes done, notes to do


@dataclass(frozen=True, slots=True)
class NoteSelector:
    """Which notes: exactly one of a folder, a tag, a date (YYYY-MM-DD: changed on or after it), a glob."""

    folder: str | None = None
    tag: str | None = None
    since: str | None = None
    glob: str | None = None

    def given(self) -> dict[str, str]:
        chosen = {k: v for k, v in (("folder", self.folder), ("tag", self.tag), ("since", self.since),
                                    ("glob", self.glob)) if v is not None}  # fmt: skip
        if len(chosen) != 1:
            raise InvalidInput(
                "Choose the notes with exactly one of --folder, --tag, --since and --glob.",
                hint='E.g. --folder Projects, --tag draft, --since 2026-11-01 or --glob "Daily/*.md".',
            )
        return chosen


def _since(value: str) -> int:
    try:
        return int(datetime.fromisoformat(value).timestamp() * 1_000_000_000)
    except ValueError:
        raise InvalidInput(f"--since expects a date like 2026-11-01, got {value!r}.") from None


def _has_tag(files: VaultFiles, path: str, tag: str) -> bool:
    try:
        text = decode_note(files.read(path).raw)
    except (VaultlensError, ValueError):  # unreadable or not text: not a note to change
        return False
    want = tag.lstrip("#").casefold()
    return any(
        t.casefold() == want or t.casefold().startswith(want + "/") for t in outline_note(text, path).tags
    )


def select(files: VaultFiles, selector: NoteSelector) -> list[str]:
    """The vault's notes the selector picks, sorted; :class:`InvalidInput` when none is."""
    ((kind, value),) = selector.given().items()
    notes = files.scan().notes
    if kind == "folder":
        prefix = value.strip("/") + "/"
        found = [n.path for n in notes if n.path.startswith(prefix) or prefix == "/"]
    elif kind == "glob":
        found = [n.path for n in notes if fnmatch.fnmatchcase(n.path, value)]
    elif kind == "since":
        after = _since(value)
        found = [n.path for n in notes if n.mtime_ns >= after]
    else:
        found = [n.path for n in notes if _has_tag(files, n.path, value)]
    if not found:
        raise InvalidInput(
            f"No note matches --{kind} {value!r}.", hint="`vaultlens list` shows the vault's notes."
        )
    return sorted(found)


def _selection(files: VaultFiles, path: str, instruction: str) -> transform.Selection | None:
    """The note's body (every line after the front matter) as the transform's selection; None when
    it has no text besides front matter."""
    source = draft.load(files, path)
    lines = note_lines(source.text)
    first = source.note.body_start_line + 1
    if not any(x.strip() for x in lines[first - 1 :]):
        return None
    return transform.prepare(source, first, len(lines), instruction)


def estimate(files: VaultFiles, paths: list[str], instruction: str, prices: tuple[float, float]) -> Estimate:
    """Tokens from characters: each note's exact prompt, and an answer as long as its body."""
    sent = answered = 0
    for path in paths:
        try:
            sel = _selection(files, path, instruction)
        except VaultlensError:
            continue  # it will fail (and say why) when it runs
        if sel is not None:
            sent += sel.prompt.chars
            answered += sel.end - sel.start
    tokens_in, tokens_out = sent // CHARS_PER_TOKEN, answered // CHARS_PER_TOKEN
    price_in, price_out = prices
    cost = (tokens_in * price_in + tokens_out * price_out) / 1e6 if price_in and price_out else None
    return Estimate(len(paths), tokens_in, tokens_out, cost)


def adopt(vault: Path, state: BatchState) -> None:
    """Notes whose change a killed run planned in the journal but could not record in the state:
    taken as finished (their plan is found by the batch's summary), never sent again."""
    open_ = {n.path for n in state.notes if n.status in ("pending", "failed")}
    for item in writes.history(vault):
        mine = isinstance(item, Entry) and item.summary == state.summary and item.path in open_
        if mine and item.state in ("planned", "applied"):
            state.settle(item.path, "planned", item.op_id, "planned before the batch stopped")


_FAILED_WRITES = ("conflict", "not_applied", "diverged")  # a write that did not happen (or not as planned)


def reopen(vault: Path, state: BatchState) -> None:
    """Notes whose planned change can no longer be written go back to ``pending``, so this run plans
    them again from their current text (after the usual consent, and shown as a new diff): the
    write was refused, in conflict or interrupted before the rename, or the note was edited after
    planning. An applied or undone change stays as the user left it."""
    j = writes.journal(vault)
    for n in state.notes:
        if n.status != "planned" or n.op_id is None:
            continue
        try:
            entry = j.entry(n.op_id)
        except OperationNotFound:
            why = "its planned change is gone from the journal"
        else:
            if entry.state in _FAILED_WRITES:
                why = f"its planned write ended {entry.state.replace('_', ' ')}"
            elif entry.state != "planned":
                continue
            else:
                try:
                    writes.to_confirm(vault, n.op_id)
                    continue
                except VaultlensError:
                    why = "the note changed after its change was planned"
        state.settle(n.path, "pending", detail=f"planned again: {why}")


class _Run:
    """The notes one run still has to plan, shared by its workers; :meth:`cancel` stops taking notes
    and cuts every request in flight (closing a provider shuts its connections down)."""

    def __init__(self, todo: list[str], progress: Progress | None) -> None:
        self.left = iter(todo)
        self.total = len(todo)
        self.progress = progress
        self.stopped = threading.Event()
        self.lock = threading.Lock()
        self.live: set[LLMProvider] = set()
        self.done = 0
        self.error: BaseException | None = None

    def take(self) -> str | None:
        with self.lock:
            return None if self.stopped.is_set() else next(self.left, None)

    def provider(self, make: Callable[[], LLMProvider]) -> LLMProvider:
        with self.lock:
            if self.stopped.is_set():
                raise Cancelled("The batch was stopped.")
            provider = make()
            self.live.add(provider)
            return provider

    def release(self, provider: LLMProvider) -> None:
        with self.lock:
            self.live.discard(provider)
        provider.close()

    def finished(self, note: BatchNote) -> None:
        """Count a note done; report it only before a stop: once :meth:`cancel` returned, the caller
        stops its progress display, and a note finishing just then must not draw (or start) it again."""
        with self.lock:
            self.done += 1
            if self.progress is not None and not self.stopped.is_set():
                self.progress(note, self.done, self.total)

    def fail(self, exc: BaseException) -> None:
        """A bug in a worker: the run stops and the caller raises it, not silently."""
        with self.lock:
            self.error = self.error or exc
        self.cancel()

    def cancel(self) -> None:
        with self.lock:
            self.stopped.set()
            cut = list(self.live)
        for provider in cut:
            with contextlib.suppress(Exception):  # closing is best effort: the note stays pending anyway
                provider.close()


def run(
    vault: Path,
    files: VaultFiles,
    make_provider: Callable[[], LLMProvider],
    state: BatchState,
    remember: bool,
    progress: Progress | None = None,
) -> None:
    """Plan one change per note still to do (pending or failed), ``state.concurrency`` at a time.

    Ctrl-C: no note is started after it, the requests in flight are cut (their notes stay
    pending), and :class:`Cancelled` says how to resume, without waiting for any model. The
    workers are daemon threads so that leaving the process never waits for one either; a worker
    cut while it records a plan is a kill -9 for that note, which :func:`adopt` and the journal's
    recovery already handle."""
    todo = [n.path for n in state.notes if n.status in ("pending", "failed")]
    work = _Run(todo, progress)

    def worker() -> None:
        while (path := work.take()) is not None:
            try:
                note = _plan_one(vault, files, make_provider, state, path, remember, work)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                if not work.stopped.is_set():
                    work.fail(exc)
                return
            if note is not None:
                work.finished(note)

    workers = [
        threading.Thread(target=worker, name=f"vaultlens-batch-{i}", daemon=True)
        for i in range(min(state.concurrency, len(todo)))
    ]
    try:
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    except KeyboardInterrupt:
        work.cancel()
        done = sum(n.status != "pending" for n in state.notes)
        raise Cancelled(
            f"Stopped: {done} of {len(state.notes)} notes of batch {state.batch_id} are done and kept.",
            hint=f"`vaultlens write batch --resume {state.batch_id}` continues with the rest.",
        ) from None
    if work.error is not None:
        raise work.error


def _plan_one(
    vault: Path,
    files: VaultFiles,
    make_provider: Callable[[], LLMProvider],
    state: BatchState,
    path: str,
    remember: bool,
    work: _Run,
) -> BatchNote | None:
    """One note: its body through the transform pipeline, then a planned change (its outcome saved);
    None when the run was stopped meanwhile (the note stays pending: nothing is planned after a stop)."""
    try:
        sel = _selection(files, path, state.instruction)
        if sel is None:
            return state.settle(path, "skipped", detail="no text besides front matter")
        provider = work.provider(make_provider)
        try:
            done = transform.rewrite(files, provider, sel, consent=True, remember=remember)
        finally:
            work.release(provider)
        if work.stopped.is_set():
            return None
        planned = draft.plan(vault, done.change, state.summary)
    except VaultlensError as exc:
        if work.stopped.is_set():
            return None
        # the model's answer left the selection: failed (sent again on resume); refused as no change: unchanged
        unchanged = isinstance(exc, PlanRefused) and not isinstance(exc, OutsideSelection)
        status: NoteStatus = "unchanged" if unchanged else "failed"
        return state.settle(path, status, detail=exc.message)
    return state.settle(path, "planned", planned.entry.op_id)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """A batch's state, and its planned changes still waiting for a yes (each with its exact diff)."""

    state: BatchState
    waiting: list[writes.Planned]
    stale: dict[str, str]  # path -> why its planned change can no longer apply

    def counts(self) -> dict[str, int]:
        """Notes per status (every status, zeros included)."""
        out = dict.fromkeys(get_args(NoteStatus), 0)
        for n in self.state.notes:
            out[n.status] = out.get(n.status, 0) + 1
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.state.as_dict(),
            "counts": self.counts(),
            "waiting": [p.as_dict() for p in self.waiting],
            "stale": [{"path": k, "why": v} for k, v in self.stale.items()],
        }


def result(vault: Path, state: BatchState) -> BatchResult:
    """The batch with its planned changes not yet applied (nor refused), each re-checked against its note."""
    waiting: list[writes.Planned] = []
    stale: dict[str, str] = {}
    j = writes.journal(vault)
    for n in state.notes:
        if n.status != "planned" or n.op_id is None or j.entry(n.op_id).state != "planned":
            continue
        try:
            waiting.append(writes.to_confirm(vault, n.op_id))
        except VaultlensError as exc:
            stale[n.path] = exc.message
    return BatchResult(state, waiting, stale)
