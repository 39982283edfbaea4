"""Changing notes: the verbs every interface uses to plan, show, apply and undo a write.

Everything that changes a note (review's planner, the audit's new notes, note tools) plans an
operation here and hands the user its exact diff; the write itself happens only in
:mod:`vaultlens.safewrite`, after the user confirmed that diff (its SHA-256 travels back with
the confirmation). Each verb first settles writes a crash interrupted (:func:`recover`), so no
command starts from a journal that does not match the notes.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import EllipsisType
from typing import Any

from vaultlens import safewrite
from vaultlens.config import paths
from vaultlens.errors import translated_errors
from vaultlens.safewrite import Entry, Journal, Recovered
from vaultlens.services.app import App

__all__ = ["Planned", "apply", "history", "plan_undo", "plan_write", "recover", "to_confirm"]


@dataclass(frozen=True, slots=True)
class Planned:
    """An operation waiting for the user: its journal entry and the exact diff to confirm."""

    entry: Entry
    diff: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.entry.to_dict(), "diff": self.diff}


def journal(app: App) -> Journal:
    paths.ensure_home()
    return Journal(paths.journal_dir(app.vault))


def _planned(j: Journal, entry: Entry) -> Planned:
    return Planned(entry, j.operation(entry).diff)


def plan_write(
    app: App, path: str, after: bytes | None, summary: str, based_on: bytes | None | EllipsisType = ...
) -> Planned:
    """Record the change of ``path`` from its current bytes to ``after``; nothing is written.
    ``based_on``: the bytes ``after`` was made from (None for a new note); refused if the note moved on."""
    with translated_errors("plan the write"):
        j = journal(app)
        return _planned(j, safewrite.plan(app.vault, j, path, after, summary, based_on))


def to_confirm(app: App, op_id: str) -> Planned:
    """A planned operation to confirm; refused first when its note no longer holds what the diff was
    computed from (or it is no longer planned), so nobody confirms a diff that cannot apply."""
    with translated_errors("show the operation"):
        j = journal(app)
        return _planned(j, safewrite.applicable(app.vault, j, op_id))


def apply(app: App, op_id: str, confirmed_diff_sha: str, allow_open: bool = False) -> Entry:
    """Write a planned operation whose diff (by SHA-256) the user confirmed."""
    with translated_errors("apply the operation"):
        return safewrite.apply(
            app.vault, journal(app), op_id, confirmed_diff_sha=confirmed_diff_sha, allow_open=allow_open
        )


def plan_undo(app: App, op_id: str) -> Planned:
    """Plan putting an applied operation's original bytes back (refused if the note changed since)."""
    with translated_errors("plan the undo"):
        j = journal(app)
        return _planned(j, safewrite.plan_undo(app.vault, j, op_id))


def history(app: App) -> list[Entry]:
    """Every operation of this vault, oldest first (reading only)."""
    with translated_errors("read the journal"):
        return list(Journal(paths.journal_dir(app.vault)).entries())


def recover(app: App) -> list[Recovered]:
    """Settle writes a crash interrupted by comparing each note with both sides (no note is written)."""
    with translated_errors("check the journal"):
        return safewrite.recover(app.vault, journal(app))
