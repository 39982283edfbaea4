"""Operation groups: several notes changed by one confirmed diff, applied and undone together.

Splitting a note creates new notes and may change the original; half a split is worse than none.
So such changes are planned together (:func:`plan_group`: one journal entry per note, each
naming the group, and the group's record holding the SHA-256 of the concatenated diffs, the one
token the user confirms), applied together (:func:`apply_group`: every note is compared with its
``before`` and checked writable, with its folder, first, then each is written as a single
operation is, in the order that never takes text out of the vault before it exists elsewhere
(:func:`in_write_order`); when one still fails its comparison, the notes the group already wrote
are put back by a rollback group, and the error names the note that changed) and undone together
(:func:`plan_group_undo`; the folders its apply created, recorded before the first write, are
removed by the undo, or by a rollback, where they are empty again). A kill in the middle leaves member entries that
recovery settles like any other and a group ``partial`` whose undo puts back what was written; nothing is re-applied and
recovery writes no note. Whatever happens, ``vaultlens history OP --show-before`` gives back what
each note held before.
"""

from __future__ import annotations

import contextlib
import os
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import Any, TypeVar

from vaultlens.errors import (
    InvalidInput,
    UndoRefused,
    VaultlensError,
    WriteConflict,
    WriteInterrupted,
    WriteRefused,
)
from vaultlens.fsutil import open_folder, sha256_hex
from vaultlens.safewrite.dangling import links_to
from vaultlens.safewrite.journal import SHOW_BEFORE, Entry, Group, Journal
from vaultlens.safewrite.operation import Operation, new_op_id
from vaultlens.safewrite.writer import (
    check_not_open,
    check_token,
    conflict,
    operation_for,
    recover_locked,
    refuse_unwritable,
    state_of,
    write_entry,
)

__all__ = ["Change", "applicable_group", "apply_group", "group_diff", "plan_group", "plan_group_undo"]


@dataclass(frozen=True, slots=True)
class Change:
    """One note of a group: its path, the exact bytes to write (None: remove), and what they were
    computed from (``based_on``; None: the note was to be new; ``...``: not checked).
    ``unique_name``: a new note no other note of the vault may share its name with (checked again
    when the group is applied)."""

    path: str
    after: bytes | None
    summary: str
    based_on: bytes | None | EllipsisType = ...
    unique_name: bool = False


def _combined(ops: Sequence[Operation]) -> str:
    return "".join(op.diff for op in ops)


def plan_group(vault: Path, journal: Journal, changes: Sequence[Change], summary: str) -> Group:
    """Record one group changing every note of ``changes`` (nothing is written). Each note is
    refused as :func:`~vaultlens.safewrite.writer.plan` refuses it; a path given twice is refused."""
    if not changes:
        raise InvalidInput("An operation group needs at least one note to change.")
    seen: set[str] = set()
    for c in changes:
        key = unicodedata.normalize("NFC", c.path).casefold()  # one file on a case-insensitive disk
        if key in seen:
            raise InvalidInput(f"{c.path!r} appears twice in one operation group.")
        seen.add(key)
    ops = [(operation_for(vault, c.path, c.after, c.summary, c.based_on), None) for c in changes]
    unique = [c.path for c in changes if c.unique_name]
    return _pending_group(journal, ops, None) or _record(journal, ops, summary, None, unique)


def _record(
    journal: Journal,
    ops: Sequence[tuple[Operation, str | None]],
    summary: str,
    undo_of: str | None,
    unique_names: Sequence[str] = (),
) -> Group:
    """The members first (each naming the group), then the group's record."""
    group_id = new_op_id()
    members = [journal.record(op, undo_of=u, group=group_id) for op, u in ops]
    diff_sha = sha256_hex(_combined([op for op, _ in ops]))
    return journal.record_group(group_id, members, diff_sha, summary, undo_of, list(unique_names))


def _pending_group(
    journal: Journal, ops: Sequence[tuple[Operation, str | None]], undo_of: str | None
) -> Group | None:
    """A planned group writing exactly these bytes to these notes: reused (asked for twice, one entry)."""
    want = [(op.path, op.before_sha, op.after_sha, u) for op, u in ops]
    for group in journal.groups():
        if group.state == "planned" and group.undo_of == undo_of and len(group.members) == len(want):
            found = [journal.entry(m) for m in group.members]
            if [(e.path, e.before_sha, e.after_sha, e.undo_of) for e in found] == want:
                return group
    return None


def _operations(journal: Journal, group: Group) -> list[tuple[Entry, Operation]]:
    entries = [journal.entry(m) for m in group.members]
    return [(e, journal.operation(e)) for e in entries]


def group_diff(journal: Journal, group: Group) -> str:
    """The concatenated exact diffs of the group's notes (what its token is the SHA-256 of)."""
    return _combined([op for _, op in _operations(journal, group)])


def _planned_group(journal: Journal, group_id: str) -> Group:
    group = journal.group(group_id)
    if group.state != "planned":
        raise WriteRefused(
            f"Operation group {group_id} is {group.state.replace('_', ' ')}; only a planned group is applied.",
            hint="Plan the change again from the notes as they are now (run the command that proposed it).",
            op_id=group_id,
        )
    return group


def _group_conflict(
    op: Operation, found: bytes | None, group: Group, put_back: int, kept: int
) -> WriteConflict:
    if put_back == kept == 0:
        outcome = f"None of the group's {len(group.members)} notes was changed."
    elif kept == 0:
        outcome = f"The {put_back} note(s) the group had already written were put back; nothing else changed."
    else:
        outcome = (
            f"{kept} note(s) the group had already written could not be put back (changed meanwhile); "
            f"`vaultlens history {group.op_id}` shows the group and "
            f"`{SHOW_BEFORE.format(op=group.op_id)}` what each note held before."
        )
    return conflict(op, found, outcome, op_id=group.op_id)


def applicable_group(vault: Path, journal: Journal, group_id: str) -> Group:
    """The planned group if every note still holds what its diff was computed from."""
    group = _planned_group(journal, group_id)
    for _, op in _operations(journal, group):
        _, found = state_of(vault, op.path)
        if found != op.before:
            raise _group_conflict(op, found, group, 0, 0)
    return group


def apply_group(
    vault: Path, journal: Journal, group_id: str, *, confirmed_diff_sha: str, allow_open: bool = False
) -> Group:
    """Write every note of a planned group whose combined diff the user confirmed, or none of them."""
    with journal.locked():
        recover_locked(vault, journal)
        group = _planned_group(journal, group_id)
        check_token(confirmed_diff_sha, group.diff_sha, f"operation group {group_id}", group_id)
        items = _operations(journal, group)
        for _, op in items:
            check_not_open(vault, op.path, allow_open)
        group.created_folders = _missing_folders(vault, [op for _, op in items])
        try:  # a Ctrl-C while `writing` is made durable (its fsyncs) is settled like any other
            journal.set_group_state(group, "writing")
            _write_together(vault, journal, group, items)
        except KeyboardInterrupt:
            raise _interrupted(vault, journal, group_id) from None
        except VaultlensError:  # e.g. a note's path refused at the comparison: no group stays `writing`
            if (now := journal.group(group_id)).state == "writing":
                journal.settle_group(now, "stopped by an error")
            raise
        journal.settle_groups()  # this group, and the group it undoes
        if group.undo_of is not None and journal.group(group_id).state == "applied":
            _remove_if_empty(vault, journal.group(group.undo_of).created_folders)
        return journal.group(group_id)


def _missing_folders(vault: Path, ops: Sequence[Operation]) -> list[str]:
    """The folders the group's new notes need that the vault does not have yet."""
    root = vault.resolve(strict=True)
    out: list[str] = []
    for op in ops:
        if op.before is None and op.after is not None:
            parts = op.path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                rel = "/".join(parts[:i])
                if rel not in out and not os.path.lexists(root / rel):
                    out.append(rel)
    return out


def _remove_if_empty(vault: Path, folders: Sequence[str]) -> None:
    """Remove the folders a group created, deepest first, where they are empty after its undo or its
    rollback (an undone or failed merge leaves no empty ``.trash/``). ``rmdir`` removes only an empty folder, so one holding
    anything (a note or a hidden file added since) stays, as does a folder replaced by a link."""
    root = vault.resolve(strict=True)
    for rel in sorted(folders, key=lambda r: r.count("/"), reverse=True):
        parent, _, name = rel.rpartition("/")
        try:
            fd = open_folder(root, parent.split("/") if parent else [])
        except OSError:
            continue
        try:
            with contextlib.suppress(OSError):
                os.rmdir(name, dir_fd=fd)
        finally:
            os.close(fd)


def _write_together(
    vault: Path, journal: Journal, group: Group, items: list[tuple[Entry, Operation]]
) -> None:
    staged: list[tuple[Entry, Operation, Path]] = []
    for entry, op in items:  # every comparison before the first write
        target, found = state_of(vault, op.path)
        if found != op.before:
            journal.set_state(entry, "conflict", "the note differed from `before`")
            journal.settle_group(group, f"{op.path} changed; nothing was written")
            raise _group_conflict(op, found, group, 0, 0)
        staged.append((entry, op, target))
    refuse_unwritable(journal, staged)  # every note and folder, before the first write
    _refuse_taken_names(vault, journal, group, staged)
    _refuse_dangling_links(vault, journal, group, staged)
    done: list[Entry] = []
    for entry, op, target in in_write_order(staged):
        try:
            write_entry(vault, journal, entry, op, target)
        except VaultlensError as exc:
            put_back, kept = _roll_back(vault, journal, group, done)
            _remove_if_empty(vault, group.created_folders)  # as an undo does: no empty new folder stays
            journal.settle_group(group, f"{op.path}: {exc.message}")
            if isinstance(exc, WriteConflict):
                raise _group_conflict(op, _found_now(target), group, put_back, kept) from None
            raise
        done.append(entry)


_Item = TypeVar("_Item", bound=tuple[Any, ...])


def in_write_order(items: Iterable[_Item]) -> list[_Item]:
    """``items`` (each holding its :class:`Operation` second) in the order that never takes text
    out of the vault before it exists elsewhere: new notes first, then edits that only add text,
    then edits that remove text (a split's original cut to an index, a merged note emptied), notes
    removed last; the given order within each. A kill between two writes then leaves every line
    of the vault in some note (a split killed midway: the original whole, or all new notes there)."""
    return sorted(items, key=lambda item: _removes(item[1]))


def _removes(op: Operation) -> int:
    """0 creates a note, 1 only adds text, 2 takes text out of a note, 3 removes a note."""
    if op.before is None:
        return 0
    if op.after is None:
        return 3
    rest = iter(op.after)
    return 1 if all(byte in rest for byte in op.before) else 2  # ``before`` kept in order within ``after``


def _refuse_taken_names(
    vault: Path, journal: Journal, group: Group, staged: list[tuple[Entry, Operation, Path]]
) -> None:
    """A new note that must be the only one of its name (a split's: ``[[Title]]`` links must find
    it) is refused when a note of that name appeared anywhere in the vault since it was planned.
    A note the group itself removes does not count: a move keeps its name in another folder."""
    wanted = {_name_key(p.rpartition("/")[2]): p for p in group.unique_names}
    if not wanted:
        return
    removed = {_name_key(op.path) for _, op, _ in staged if op.before is not None and op.after is None}
    root = vault.resolve(strict=True)
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = wanted.get(_name_key(name))
            if path is None:
                continue
            rel = (Path(folder) / name).relative_to(root).as_posix()
            if _name_key(rel) != _name_key(path) and _name_key(rel) not in removed:
                for entry, _, _ in staged:
                    journal.set_state(entry, "not_applied", f"refused before writing: {rel} took the name")
                raise WriteRefused(
                    f"Not written: {rel} appeared since operation group {group.op_id} was planned, so its new "
                    f"note {path} would share that name and [[links]] to it would be ambiguous. "
                    f"None of the group's {len(group.members)} notes was changed.",
                    hint="Run the command that proposed it again (it picks names the vault does not have), "
                    "or rename one of the notes.",
                    path=path,
                    op_id=group.op_id,
                )


def _refuse_dangling_links(
    vault: Path, journal: Journal, group: Group, staged: list[tuple[Entry, Operation, Path]]
) -> None:
    """A group that removes a note (a move, a merge: they repointed every link to it when planned)
    is refused when a note outside it links that note now: it was written since the plan, and the
    removal would leave its link broken. An undo puts notes back as they were and is not checked."""
    if group.undo_of is not None:
        return
    removed = {op.path for _, op, _ in staged if op.before is not None and op.after is None}
    created = {op.path for _, op, _ in staged if op.before is None}
    found = links_to(vault, removed, {op.path for _, op, _ in staged}, created)
    if not found:
        return
    note, target = found[0]
    for entry, _, _ in staged:
        journal.set_state(entry, "not_applied", f"refused before writing: {note} links {target}")
    more = f" (and {len(found) - 1} more note(s))" if len(found) > 1 else ""
    raise WriteRefused(
        f"Not written: {note}{more} links {target} since operation group {group.op_id} was planned, and "
        f"the group removes {target}, which would leave that link broken. None of the group's "
        f"{len(group.members)} notes was changed.",
        hint="Plan the move or merge again: its new plan repoints that link too"
        + (
            " (or names the canvas, which vaultlens never edits)."
            if note.lower().endswith(".canvas")
            else "."
        ),
        path=note,
        op_id=group.op_id,
    )


def _name_key(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _found_now(target: Path) -> bytes | None:
    """What the note holds now (for the message naming it)."""
    try:
        return target.read_bytes()
    except OSError:
        return None


def _roll_back(vault: Path, journal: Journal, group: Group, done: list[Entry]) -> tuple[int, int]:
    """Put back the notes a failed group wrote, newest first, as a group of its own (so a kill here
    is recovered like any write); a note changed meanwhile is left as found. (put back, kept)."""
    if not done:
        return 0, 0
    ops = [(journal.operation(e).reversed(new_op_id()), e.op_id) for e in reversed(done)]
    undo = _record(journal, ops, f"rollback of {group.op_id}", group.op_id)
    journal.set_group_state(undo, "writing", "putting back what the group wrote before it failed")
    put_back = 0
    for entry, op in in_write_order(_operations(journal, undo)):
        try:
            target, found = state_of(vault, op.path)
            if found != op.before:
                journal.set_state(entry, "conflict", "the note changed after the group wrote it")
                continue
            write_entry(vault, journal, entry, op, target)
            put_back += 1
        except VaultlensError:
            continue  # its entry says what happened; the note is left as found
    journal.settle_groups()
    return put_back, len(done) - put_back


def _interrupted(vault: Path, journal: Journal, group_id: str) -> WriteInterrupted:
    """Ctrl-C during a group's apply: settle it from the notes (as recovery does) and say where it stands."""
    recover_locked(vault, journal)
    group = journal.group(group_id)
    n = len(group.members)
    said = {
        "applied": (
            f"Interrupted after the write: all {n} notes were written",
            f"`vaultlens undo {group_id}`",
        ),
        "partial": (f"Interrupted: only some of the {n} notes were written", f"`vaultlens undo {group_id}`"),
    }
    message, undo = said.get(
        group.state, (f"Interrupted before the write: none of the {n} notes changed", "")
    )
    hint = f"{undo} puts back what was there before." if undo else "Plan the change again to write it."
    message += f" (operation group {group_id} is {group.state.replace('_', ' ')})."
    return WriteInterrupted(message, hint=hint, path=group.path, op_id=group_id, state=group.state)


def plan_group_undo(vault: Path, journal: Journal, group_id: str) -> Group:
    """Record the group that puts back every note the group wrote, if none changed since."""
    with journal.locked():
        recover_locked(vault, journal)
        group = journal.group(group_id)
        if group.state not in ("applied", "partial"):
            raise UndoRefused(
                f"Operation group {group_id} cannot be undone: it is {group.state.replace('_', ' ')}, not applied.",
                op_id=group_id,
            )
        ops: list[tuple[Operation, str | None]] = []
        for entry, op in _operations(journal, group):
            if entry.state != "applied":
                continue  # a note a stopped group never wrote: nothing to put back
            _, found = state_of(vault, op.path)
            if found != op.after:
                raise UndoRefused(
                    f"Not undone: {op.path} has changed since operation group {group_id} wrote it, and undo "
                    "would throw those later edits away. No note was changed.",
                    hint="Edit the note by hand; the journal keeps what every note held before: "
                    f"`{SHOW_BEFORE.format(op=group_id)}` prints it (--output FILE saves one).",
                    path=op.path,
                    op_id=group_id,
                )
            ops.append((op.reversed(new_op_id()), entry.op_id))
        return _pending_group(journal, ops, group_id) or _record(journal, ops, f"undo {group_id}", group_id)
