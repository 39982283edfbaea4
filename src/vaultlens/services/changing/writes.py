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

import base64
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import Any

from vaultlens import safewrite
from vaultlens.config import paths
from vaultlens.errors import (
    FileSystemError,
    IndexLocked,
    InvalidInput,
    OperationNotFound,
    Proposal,
    WriteUnconfirmed,
    translated_errors,
)
from vaultlens.fsutil import sha256_hex, write_outside_vault
from vaultlens.safewrite import SHOW_BEFORE, Change, Entry, Group, Journal, Recovered
from vaultlens.safewrite.identity import find_journal, journal_root
from vaultlens.vault.hidden import visible

__all__ = [
    "SHOW_BEFORE",
    "Applied",
    "Before",
    "Befores",
    "Change",
    "Planned",
    "apply",
    "applied",
    "befores",
    "discard",
    "history",
    "plan_group",
    "plan_undo",
    "plan_write",
    "recover",
    "to_confirm",
    "unfinished",
    "vault_identity",
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


def vault_identity(vault: Path) -> str | None:
    """The id of ``vault``'s journal, which survives moving the vault folder (safewrite/identity.py);
    None when the vault has none yet. What else is kept per vault (a batch) is matched by it."""
    with translated_errors("find the vault's journal"):
        root = find_journal(vault)
    return None if root is None else root.name


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


def discard(vault: Path, op_id: str) -> Entry | Group:
    """Mark a planned operation (or group) discarded so it can no longer be applied; no note is
    read or written, and the journal keeps the record (``history`` lists it as ``discarded``)."""
    with translated_errors("discard the operation"):
        j = journal(vault)
        with j.locked():
            return j.discard(op_id)


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


@dataclass(frozen=True, slots=True)
class Before:
    """What one note held before an operation wrote it, exactly as the journal keeps it
    (``data`` None: the operation created the note)."""

    op_id: str
    path: str
    state: str
    data: bytes | None

    def visible(self) -> str:
        """The text for a screen: what a terminal or a browser would act on or hide (controls, a CR
        not ending a line, bidi overrides: :func:`vaultlens.vault.hidden.visible`) shown by name as
        ``<ESC>`` / ``<U+202E>``, bytes that are not UTF-8 as ``\\xff``."""
        return visible((self.data or b"").decode("utf-8", "backslashreplace"), line_ends=True)

    def as_dict(self) -> dict[str, Any]:
        """The bytes as base64 (exact, whatever they are) and as text when they are UTF-8."""
        text = None
        if self.data is not None:
            with contextlib.suppress(UnicodeDecodeError):
                text = self.data.decode("utf-8")
        return {
            "op_id": self.op_id,
            "path": self.path,
            "state": self.state,
            "existed": self.data is not None,
            "size": None if self.data is None else len(self.data),
            "sha256": None if self.data is None else sha256_hex(self.data),
            "text": text,
            "base64": None if self.data is None else base64.b64encode(self.data).decode("ascii"),
        }


@dataclass(frozen=True, slots=True)
class Befores:
    """The journaled ``before`` of an operation, or of each member of an operation group."""

    op_id: str
    group: bool
    items: list[Before]
    saved: Path | None = None  # the file outside the vault the one ``before`` was written to

    def as_dict(self) -> dict[str, Any]:
        return {
            "op_id": self.op_id,
            "group": self.group,
            "befores": [b.as_dict() for b in self.items],
            "saved": None if self.saved is None else str(self.saved),
        }


def befores(vault: Path, op_id: str, output: Path | None = None) -> Befores:
    """What the notes held before ``op_id`` (an operation, a group or a group's member) wrote them,
    read from the journal (checked against the SHA-256 recorded with them). ``output``: a file
    outside the vault that receives the one ``before`` there is (never a note: that is a change to
    the vault, and goes through a confirmed diff)."""
    found = _befores(vault, op_id)
    if output is None:
        return found
    kept = [b for b in found.items if b.data is not None]
    if len(kept) != 1:
        why = "created every note it wrote" if not kept else f"changed {len(kept)} notes that existed"
        members = ", ".join(f"{b.op_id} ({b.path})" for b in kept)
        raise InvalidInput(
            f"Operation {op_id} {why}; --output saves the text one note held before.",
            hint=f"Give the id of one of its notes' operations: {members}."
            if kept
            else "There is no earlier text to save: the operation created its notes.",
        )
    data = kept[0].data
    assert data is not None
    with translated_errors("save the journal's copy", output):
        saved = write_outside_vault(output, data, vault)
    return Befores(found.op_id, found.group, found.items, saved)


def _befores(vault: Path, op_id: str) -> Befores:
    with translated_errors("read the journal"):
        root = find_journal(vault)
        if root is None:
            raise OperationNotFound(
                f"No operation {op_id}: vaultlens has not planned a change in this vault.", op_id=op_id
            )
        j = Journal(root)
        group = j.is_group(op_id)
        entries = [j.entry(m) for m in j.group(op_id).members] if group else [j.entry(op_id)]
        items = [Before(e.op_id, e.path, e.state, j.operation(e).before) for e in entries]
        return Befores(op_id, group, items)


def unfinished(vault: Path) -> list[tuple[str, str]]:
    """Operations the journal shows unfinished, each as (op id, what happened and the command that
    settles it): a write a crash left ``writing``, a group only partly written. Nothing is changed."""
    with translated_errors("read the journal"):
        root = find_journal(vault)
        if root is None:
            return []
        j = Journal(root)
        found = [
            (
                e.op_id,
                f"The write {e.op_id} of {e.path} was interrupted (vaultlens stopped during it): "
                "`vaultlens history` settles it from the note",
            )
            for e in j.entries()
            if e.state == "writing" and e.group is None
        ]
        for g in j.groups():
            if g.state == "writing":
                found.append(
                    (
                        g.op_id,
                        f"Operation group {g.op_id} ({g.path}) was interrupted while it was written: "
                        f"`vaultlens history` settles it from the notes, then `vaultlens undo {g.op_id}` puts back "
                        f"what it wrote (`{SHOW_BEFORE.format(op=g.op_id)}` shows the originals)",
                    )
                )
            elif g.state == "partial":
                found.append(
                    (
                        g.op_id,
                        f"Operation group {g.op_id} ({g.path}) is partial: only some of its notes were written; "
                        f"`vaultlens undo {g.op_id}` puts them back (`{SHOW_BEFORE.format(op=g.op_id)}` shows "
                        "the originals)",
                    )
                )
        return found
