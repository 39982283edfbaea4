"""The write journal: one durable record per operation, outside the vault, written before the note.

Layout (the vault's folder under ``journals/``, found by :mod:`vaultlens.safewrite.identity`
even after the vault moved)::

    vault.json            the vault's id, last path, and its folder's device and inode
    <op_id>/entry.json    what, where, SHA-256 of both sides, the confirmed diff's SHA-256, state, events
    <op_id>/before.bin    the note's exact bytes before (the backup copy); absent for a new note
    <op_id>/after.bin     the exact bytes to write; absent for a removal
    <group_id>/group.json an operation group: its member ids (entries of their own, each naming the
                          group), the combined diff's SHA-256, its state and events

Every file goes through :func:`vaultlens.fsutil.atomic_write` (temporary file, fsync, rename,
folder fsync), so a kill at any moment leaves an entry either as it was or as it became. States:

- ``planned``: recorded and shown, nothing written;
- ``writing``: the user confirmed the diff; the note may be written from here on;
- ``applied``: the note was written and read back equal to ``after``;
- ``conflict``: refused before writing, because the note no longer equalled ``before``;
- ``not_applied`` / ``diverged``: what recovery found for an interrupted ``writing`` entry (the note
  still equals ``before`` / equals neither side: someone else changed it);
- ``undone``: an applied operation whose undo (its own entry, ``undo_of``) was applied;
- ``discarded``: a planned operation the user chose not to make (:meth:`Journal.discard`; no note
  is read or written, the entry and its bytes stay in the journal).

A group's state is derived from its members' (:meth:`Journal.settle_group`): ``applied`` when all
are, ``partial`` when only some are (a crash in the middle; ``vaultlens undo GROUP`` puts them
back), else ``diverged`` / ``conflict`` / ``undone`` / ``not_applied`` by the first member state
found in that order; ``writing`` while its apply runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from vaultlens.errors import (
    OperationNotFound,
    StoreCorrupt,
    WriteRefused,
    translate_error,
    translated_errors,
)
from vaultlens.fsutil import atomic_write, fsync_dir, sha256_hex
from vaultlens.index.lock import WriterLock
from vaultlens.safewrite.operation import Operation

__all__ = ["FINAL_STATES", "SHOW_BEFORE", "Entry", "Group", "GroupState", "Journal", "State"]

SHOW_BEFORE = "vaultlens history {op} --show-before"  # gives any journaled `before` back; every hint names it

State = Literal["planned", "writing", "applied", "conflict", "not_applied", "diverged", "undone", "discarded"]
GroupState = Literal[
    "planned", "writing", "applied", "partial", "conflict", "not_applied", "diverged", "undone", "discarded"
]
FINAL_STATES: frozenset[str] = frozenset(
    {"applied", "conflict", "not_applied", "diverged", "undone", "discarded"}
)
_AFTER_FAILURE: tuple[GroupState, ...] = ("diverged", "conflict", "undone")  # the first found names a group
_OP_ID = re.compile(r"^[0-9]{8}T[0-9]{6}-[0-9a-f]{6}$")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(slots=True)
class Entry:
    """One operation's record (``entry.json``); the bytes live beside it."""

    op_id: str
    path: str
    summary: str
    state: State
    before_sha: str | None
    after_sha: str | None
    diff_sha: str
    created: str
    updated: str
    undo_of: str | None = None
    undone_by: str | None = None
    events: list[dict[str, str]] = field(default_factory=list)
    group: str | None = None  # the operation group it is applied and undone with

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True)
class Group:
    """Several operations confirmed by one combined diff, applied and undone together (``group.json``).

    ``after_sha`` is None when every member removes its note (the undo of a group of new notes)."""

    op_id: str
    summary: str
    state: GroupState
    members: list[str]
    paths: list[str]
    diff_sha: str
    after_sha: str | None
    created: str
    updated: str
    undo_of: str | None = None
    undone_by: str | None = None
    events: list[dict[str, str]] = field(default_factory=list)
    unique_names: list[str] = field(default_factory=list)  # new notes no other note may share a name with
    # the folders its apply made (its undo removes those that are empty again)
    created_folders: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The notes it changes, as one line (what a list of operations shows for it)."""
        shown = ", ".join(self.paths[:3]) + (
            f" and {len(self.paths) - 3} more" if len(self.paths) > 3 else ""
        )
        return f"{len(self.paths)} notes: {shown}"

    def as_dict(self) -> dict[str, Any]:
        return {"kind": "group", **asdict(self)}


class Journal:
    """The journal folder of one vault. Writers hold :meth:`locked` around a read-check-write."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def locked(self) -> WriterLock:
        """One writer of notes per vault at a time (other vaultlens processes get a clear refusal)."""
        return WriterLock(self.root, what="notes of this vault (safewrite)")

    def _dir(self, op_id: str) -> Path:
        if not _OP_ID.match(op_id):
            raise OperationNotFound(
                f"{op_id!r} is not an operation id.",
                hint="Operation ids look like 20261203T101500-4f2a9c; `vaultlens history` lists them.",
                op_id=None,
            )
        return self.root / op_id

    def record(self, op: Operation, undo_of: str | None = None, group: str | None = None) -> Entry:
        """Write a new ``planned`` entry with both sides' bytes, durably, and return it."""
        folder = self._dir(op.op_id)
        now = _now()
        entry = Entry(
            op.op_id, op.path, op.summary, "planned", op.before_sha, op.after_sha, op.diff_sha,
            now, now, undo_of=undo_of, events=[{"state": "planned", "at": now}], group=group,
        )  # fmt: skip
        with translated_errors("write the safewrite journal", folder):
            folder.mkdir(parents=True, exist_ok=False)
            fsync_dir(self.root)
            for name, data in (("before.bin", op.before), ("after.bin", op.after)):
                if data is not None:
                    atomic_write(folder / name, data, mode=0o600)
            self._save(entry)
        return entry

    def _save(self, entry: Entry) -> None:
        text = json.dumps(entry.as_dict(), ensure_ascii=False, indent=2) + "\n"
        with translated_errors("write the safewrite journal", self.root):
            atomic_write(self._dir(entry.op_id) / "entry.json", text, mode=0o600)

    def set_state(
        self, entry: Entry, state: State, detail: str | None = None, **changes: str | None
    ) -> Entry:
        """Move ``entry`` to ``state`` durably (the event log keeps every step)."""
        entry.state = state
        entry.updated = _now()
        event = {"state": state, "at": entry.updated}
        if detail:
            event["detail"] = detail
        entry.events.append(event)
        for key, value in changes.items():
            setattr(entry, key, value)
        self._save(entry)
        return entry

    def entry(self, op_id: str) -> Entry:
        path = self._dir(op_id) / "entry.json"
        try:
            raw = path.read_bytes()  # not UTF-8 or not JSON: damaged, told below
        except FileNotFoundError:
            raise OperationNotFound(
                f"No operation {op_id} in this vault's journal.",
                hint="`vaultlens history` lists the operations of this vault.",
                op_id=op_id,
            ) from None
        except OSError as exc:
            raise translate_error(exc, "read the safewrite journal", path) from exc
        try:
            return Entry(**json.loads(raw))
        except (ValueError, TypeError, RecursionError) as exc:
            raise StoreCorrupt(
                f"The journal entry {path} is damaged ({exc}).",
                hint=f"Writes to this vault stay refused while it is unreadable; move {path.parent} out of "
                "the journal folder (keep it: its before.bin is the note's text before that change) to go on; "
                f"`{SHOW_BEFORE.format(op='OP')}` gives the text before any other operation back.",
            ) from exc

    def operation(self, entry: Entry) -> Operation:
        """The exact bytes of ``entry``, checked against the SHA-256 recorded with them."""
        folder = self._dir(entry.op_id)
        sides: list[bytes | None] = []
        for name, sha in (("before.bin", entry.before_sha), ("after.bin", entry.after_sha)):
            if sha is None:
                sides.append(None)
                continue
            with translated_errors("read the safewrite journal", folder / name):
                data = (folder / name).read_bytes()
            if sha256_hex(data) != sha:
                raise StoreCorrupt(f"The journal copy {folder / name} does not match its recorded SHA-256.")
            sides.append(data)
        return Operation(entry.op_id, entry.path, sides[0], sides[1], entry.summary)

    def entries(self) -> Iterator[Entry]:
        """Every entry, oldest first (by when it was planned; ids alone tie within a second)."""
        if not self.root.is_dir():
            return
        found = [
            self.entry(folder.name)
            for folder in self.root.iterdir()
            if folder.is_dir() and _OP_ID.match(folder.name) and (folder / "entry.json").exists()
        ]
        yield from sorted(found, key=lambda e: (e.created, e.op_id))

    # ---- operation groups ------------------------------------------------------------------

    def record_group(
        self,
        group_id: str,
        members: list[Entry],
        diff_sha: str,
        summary: str,
        undo_of: str | None = None,
        unique_names: list[str] | None = None,
    ) -> Group:
        """Write a new ``planned`` group over member entries already recorded (each naming it)."""
        now = _now()
        afters = [m.after_sha for m in members]
        after_sha = (
            None if all(a is None for a in afters) else sha256_hex("\n".join(a or "-" for a in afters))
        )
        group = Group(
            group_id, summary, "planned", [m.op_id for m in members], [m.path for m in members], diff_sha,
            after_sha, now, now, undo_of=undo_of, events=[{"state": "planned", "at": now}],
            unique_names=unique_names or [],
        )  # fmt: skip
        with translated_errors("write the safewrite journal", self.root):
            self._dir(group_id).mkdir(parents=True, exist_ok=False)
            fsync_dir(self.root)
        self._save_group(group)
        return group

    def _save_group(self, group: Group) -> None:
        text = json.dumps(group.as_dict(), ensure_ascii=False, indent=2) + "\n"
        with translated_errors("write the safewrite journal", self.root):
            atomic_write(self._dir(group.op_id) / "group.json", text, mode=0o600)

    def is_group(self, op_id: str) -> bool:
        return (self._dir(op_id) / "group.json").is_file()

    def group(self, op_id: str) -> Group:
        path = self._dir(op_id) / "group.json"
        try:
            raw = json.loads(path.read_bytes())
            raw.pop("kind", None)
            return Group(**raw)
        except FileNotFoundError:
            raise OperationNotFound(
                f"No operation group {op_id} in this vault's journal.",
                hint="`vaultlens history` lists the operations of this vault.",
                op_id=op_id,
            ) from None
        except OSError as exc:
            raise translate_error(exc, "read the safewrite journal", path) from exc
        except (ValueError, TypeError, AttributeError, RecursionError) as exc:
            raise StoreCorrupt(
                f"The journal group {path} is damaged ({exc}).",
                hint=f"Move {path.parent} out of the journal folder (keep it) to go on; each of its notes' "
                f"text before stays reachable by its own operation id: `{SHOW_BEFORE.format(op='OP')}`.",
            ) from exc

    def groups(self) -> Iterator[Group]:
        """Every group, oldest first."""
        if not self.root.is_dir():
            return
        found = [
            self.group(folder.name)
            for folder in self.root.iterdir()
            if _OP_ID.match(folder.name) and (folder / "group.json").is_file()
        ]
        yield from sorted(found, key=lambda g: (g.created, g.op_id))

    def set_group_state(
        self, group: Group, state: GroupState, detail: str | None = None, undone_by: str | None = None
    ) -> Group:
        """Move ``group`` to ``state`` durably (no event when nothing changes)."""
        if state == group.state and undone_by == group.undone_by and not detail:
            return group
        group.state, group.undone_by, group.updated = state, undone_by, _now()
        event = {"state": state, "at": group.updated}
        if detail:
            event["detail"] = detail
        group.events.append(event)
        self._save_group(group)
        return group

    def settle_group(self, group: Group, detail: str | None = None) -> Group:
        """Derive a group's state from its members' (see the module docstring); members a stopped
        apply never reached (still ``planned`` in a group past planning) become ``not_applied``."""
        if group.state == "discarded":
            return group
        members = [self.entry(m) for m in group.members]
        if group.state != "planned":
            for m in members:
                if m.state == "planned":
                    self.set_state(m, "not_applied", f"the apply of group {group.op_id} stopped before it")
        states = {m.state for m in members}
        if states == {"planned"}:
            return group
        if "writing" in states:  # a live apply (recovery settles members first)
            return group
        state: GroupState = "not_applied"
        if states == {"applied"}:
            state = "applied"
        elif "applied" in states:
            state = "partial"
        else:
            state = next((s for s in _AFTER_FAILURE if s in states), "not_applied")
        undone_by = next((m.undone_by for m in members if m.undone_by), None) if state == "undone" else None
        undone_by = self._group_of(undone_by)
        return self.set_group_state(group, state, detail, undone_by=undone_by)

    def _group_of(self, op_id: str | None) -> str | None:
        return None if op_id is None else (self.entry(op_id).group or op_id)

    def settle_groups(self) -> None:
        """Bring every group past planning in line with its members (after any write or recovery)."""
        for group in self.groups():
            if group.state not in ("planned", "discarded"):
                self.settle_group(group)

    def discard(self, op_id: str) -> Entry | Group:
        """Mark a planned operation (or group, with its members) ``discarded``: it can no longer be
        applied and ``history`` shows it as such. Only the journal changes; hold :meth:`locked`."""
        if self.is_group(op_id):
            group = self.group(op_id)
            _check_planned(group.state, op_id)
            for member in group.members:
                self.set_state(self.entry(member), "discarded", "discarded with its group")
            return self.set_group_state(group, "discarded", "discarded by the user")
        entry = self.entry(op_id)
        if entry.group:
            raise WriteRefused(
                f"Operation {op_id} is part of operation group {entry.group}; it is discarded only with it.",
                hint=f"Discard the group: {entry.group}.",
                op_id=op_id,
            )
        _check_planned(entry.state, op_id)
        return self.set_state(entry, "discarded", "discarded by the user")


def _check_planned(state: str, op_id: str) -> None:
    if state != "planned":
        raise WriteRefused(
            f"Operation {op_id} is {state.replace('_', ' ')}; only a planned operation can be discarded.",
            hint="An applied operation is taken back with undo.",
            op_id=op_id,
        )
