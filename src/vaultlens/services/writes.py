"""Changing notes: plan, confirm, apply and undo a write, every one shown as its exact diff first.

Everything that changes a note (review's planner, the audit's new notes, note tools) plans an
operation here and hands the user its exact diff; the write itself happens only in
:mod:`vaultlens.safewrite`, after the user confirmed that diff: :func:`apply` without a
confirmation raises :class:`~vaultlens.errors.WriteUnconfirmed` carrying the
:class:`~vaultlens.errors.Proposal` (the diff and its token), and writes only when called again
with it. Each verb first settles writes a crash interrupted (:func:`recover`), so no command
starts from a journal that does not match the notes.

Several notes that must change together (a split: new notes and the original) are one operation
group (:func:`plan_group`): one combined diff, one token, applied and undone together; a group's
id works wherever an operation id does (``apply``, ``undo``; ``history`` lists it as one item).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import Any

from vaultlens import safewrite
from vaultlens.config import paths
from vaultlens.errors import FileSystemError, IndexLocked, Proposal, WriteUnconfirmed, translated_errors
from vaultlens.safewrite import Change, Entry, Group, Journal, Recovered
from vaultlens.safewrite.identity import find_journal, journal_root

__all__ = [
    "Applied",
    "Change",
    "Planned",
    "apply",
    "applied",
    "history",
    "plan_group",
    "plan_undo",
    "plan_write",
    "recover",
    "to_confirm",
]


@dataclass(frozen=True, slots=True)
class Planned:
    """An operation (or operation group) waiting for the user: its journal record and the exact diff
    to confirm (a group's: its notes' diffs one after another)."""

    entry: Entry | Group
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
    """A written operation (or group): its journal record (now ``applied``) and the diff that was confirmed."""

    entry: Entry | Group
    diff: str

    def as_dict(self) -> dict[str, Any]:
        return {**self.entry.as_dict(), "diff": self.diff}


def journal(vault: Path) -> Journal:
    """The vault's journal, created on first use (found again after the vault folder moves)."""
    paths.ensure_home()
    return Journal(journal_root(vault))


def _diff(j: Journal, record: Entry | Group) -> str:
    return safewrite.group_diff(j, record) if isinstance(record, Group) else j.operation(record).diff


def _planned(j: Journal, record: Entry | Group) -> Planned:
    return Planned(record, _diff(j, record))


def plan_write(
    vault: Path, path: str, after: bytes | None, summary: str, based_on: bytes | None | EllipsisType = ...
) -> Planned:
    """Record the change of ``path`` from its current bytes to ``after``; nothing is written.
    ``based_on``: the bytes ``after`` was made from (None for a new note); refused if the note moved on."""
    with translated_errors("plan the write"):
        j = journal(vault)
        return _planned(j, safewrite.plan(vault, j, path, after, summary, based_on))


def plan_group(vault: Path, changes: Sequence[Change], summary: str) -> Planned:
    """Record one operation group changing (or creating) every note of ``changes``; nothing is written."""
    with translated_errors("plan the write"):
        j = journal(vault)
        return _planned(j, safewrite.plan_group(vault, j, changes, summary))


def to_confirm(vault: Path, op_id: str) -> Planned:
    """A planned operation (or group) to confirm; refused first when a note no longer holds what the
    diff was computed from (or it is no longer planned), so nobody confirms a diff that cannot apply."""
    with translated_errors("show the operation"):
        j = journal(vault)
        if j.is_group(op_id):
            return _planned(j, safewrite.applicable_group(vault, j, op_id))
        return _planned(j, safewrite.applicable(vault, j, op_id))


def apply(
    vault: Path, op_id: str, confirmed: Proposal | str | None = None, allow_open: bool = False
) -> Entry | Group:
    """Write a planned operation whose diff the user confirmed: ``confirmed`` is the proposal that was
    shown (or its token, the diff's SHA-256). Without it: :class:`WriteUnconfirmed` with the proposal."""
    if confirmed is None:
        raise WriteUnconfirmed(to_confirm(vault, op_id).proposal)
    token = confirmed if isinstance(confirmed, str) else confirmed.token
    with translated_errors("apply the operation"):
        j = journal(vault)
        if j.is_group(op_id):
            return safewrite.apply_group(vault, j, op_id, confirmed_diff_sha=token, allow_open=allow_open)
        return safewrite.apply(vault, j, op_id, confirmed_diff_sha=token, allow_open=allow_open)


def applied(vault: Path, entry: Entry | Group) -> Applied:
    """An applied entry (or group) with the diff that was written (read back from the journal)."""
    with translated_errors("read the journal"):
        return Applied(entry, _diff(journal(vault), entry))


def plan_undo(vault: Path, op_id: str) -> Planned:
    """Plan putting an applied operation's (or group's) original bytes back (refused if a note changed since)."""
    with translated_errors("plan the undo"):
        j = journal(vault)
        if j.is_group(op_id):
            return _planned(j, safewrite.plan_group_undo(vault, j, op_id))
        return _planned(j, safewrite.plan_undo(vault, j, op_id))


def history(vault: Path) -> list[Entry | Group]:
    """Every operation of this vault, oldest first; a group is one item (its members are not listed
    apart). A write a crash (or a second Ctrl-C) left in ``writing`` is settled first, so the list
    tells the truth; only the journal changes, and not while a live writer holds it."""
    with translated_errors("read the journal"):
        root = find_journal(vault)
        if root is None:
            return []
        j = Journal(root)
        with contextlib.suppress(IndexLocked, FileSystemError):  # a live writer, or a read-only home
            safewrite.recover(vault, j)
        items: list[Entry | Group] = [e for e in j.entries() if e.group is None]
        items.extend(j.groups())
        return sorted(items, key=lambda r: (r.created, r.op_id))


def recover(vault: Path) -> list[Recovered]:
    """Settle writes a crash interrupted by comparing each note with both sides (no note is written)."""
    with translated_errors("check the journal"):
        return safewrite.recover(vault, journal(vault))
