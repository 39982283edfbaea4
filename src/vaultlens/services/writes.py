"""Changing notes: plan, confirm, apply and undo a write, every one shown as its exact diff first.

Everything that changes a note (review's planner, the audit's new notes, note tools) plans an
operation here and hands the user its exact diff; the write itself happens only in
:mod:`vaultlens.safewrite`, after the user confirmed that diff: :func:`apply` without a
confirmation raises :class:`~vaultlens.errors.WriteUnconfirmed` carrying the
:class:`~vaultlens.errors.Proposal` (the diff and its token), and writes only when called again
with it. Each verb first settles writes a crash interrupted (:func:`recover`), so no command
starts from a journal that does not match the notes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import Any

from vaultlens import safewrite
from vaultlens.config import paths
from vaultlens.errors import FileSystemError, IndexLocked, Proposal, WriteUnconfirmed, translated_errors
from vaultlens.safewrite import Entry, Journal, Recovered
from vaultlens.safewrite.identity import find_journal, journal_root

__all__ = [
    "Applied",
    "Planned",
    "apply",
    "applied",
    "history",
    "plan_undo",
    "plan_write",
    "recover",
    "to_confirm",
]


@dataclass(frozen=True, slots=True)
class Planned:
    """An operation waiting for the user: its journal entry and the exact diff to confirm."""

    entry: Entry
    diff: str

    @property
    def proposal(self) -> Proposal:
        """What confirming it writes: the note, the summary and the exact diff."""
        e = self.entry
        return Proposal("write", e.path, e.summary, self.diff, op_id=e.op_id)

    def as_dict(self) -> dict[str, Any]:
        return {**self.entry.as_dict(), "diff": self.diff}


@dataclass(frozen=True, slots=True)
class Applied:
    """A written operation: its journal entry (now ``applied``) and the diff that was confirmed."""

    entry: Entry
    diff: str

    def as_dict(self) -> dict[str, Any]:
        return {**self.entry.as_dict(), "diff": self.diff}


def journal(vault: Path) -> Journal:
    """The vault's journal, created on first use (found again after the vault folder moves)."""
    paths.ensure_home()
    return Journal(journal_root(vault))


def _planned(j: Journal, entry: Entry) -> Planned:
    return Planned(entry, j.operation(entry).diff)


def plan_write(
    vault: Path, path: str, after: bytes | None, summary: str, based_on: bytes | None | EllipsisType = ...
) -> Planned:
    """Record the change of ``path`` from its current bytes to ``after``; nothing is written.
    ``based_on``: the bytes ``after`` was made from (None for a new note); refused if the note moved on."""
    with translated_errors("plan the write"):
        j = journal(vault)
        return _planned(j, safewrite.plan(vault, j, path, after, summary, based_on))


def to_confirm(vault: Path, op_id: str) -> Planned:
    """A planned operation to confirm; refused first when its note no longer holds what the diff was
    computed from (or it is no longer planned), so nobody confirms a diff that cannot apply."""
    with translated_errors("show the operation"):
        j = journal(vault)
        return _planned(j, safewrite.applicable(vault, j, op_id))


def apply(
    vault: Path, op_id: str, confirmed: Proposal | str | None = None, allow_open: bool = False
) -> Entry:
    """Write a planned operation whose diff the user confirmed: ``confirmed`` is the proposal that was
    shown (or its token, the diff's SHA-256). Without it: :class:`WriteUnconfirmed` with the proposal."""
    if confirmed is None:
        raise WriteUnconfirmed(to_confirm(vault, op_id).proposal)
    token = confirmed if isinstance(confirmed, str) else confirmed.token
    with translated_errors("apply the operation"):
        return safewrite.apply(vault, journal(vault), op_id, confirmed_diff_sha=token, allow_open=allow_open)


def applied(vault: Path, entry: Entry) -> Applied:
    """An applied entry with the diff that was written (read back from the journal)."""
    with translated_errors("read the journal"):
        return Applied(entry, journal(vault).operation(entry).diff)


def plan_undo(vault: Path, op_id: str) -> Planned:
    """Plan putting an applied operation's original bytes back (refused if the note changed since)."""
    with translated_errors("plan the undo"):
        j = journal(vault)
        return _planned(j, safewrite.plan_undo(vault, j, op_id))


def history(vault: Path) -> list[Entry]:
    """Every operation of this vault, oldest first. A write a crash (or a second Ctrl-C) left in
    ``writing`` is settled first, so the list tells the truth; only the journal changes, and not
    while a live writer holds it (its ``writing`` is then true)."""
    with translated_errors("read the journal"):
        root = find_journal(vault)
        if root is None:
            return []
        j = Journal(root)
        with contextlib.suppress(IndexLocked, FileSystemError):  # a live writer, or a read-only home
            safewrite.recover(vault, j)
        return list(j.entries())


def recover(vault: Path) -> list[Recovered]:
    """Settle writes a crash interrupted by comparing each note with both sides (no note is written)."""
    with translated_errors("check the journal"):
        return safewrite.recover(vault, journal(vault))
