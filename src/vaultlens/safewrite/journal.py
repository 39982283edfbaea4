"""The write journal: one durable record per operation, outside the vault, written before the note.

Layout (the vault's folder under ``journals/``, found by :mod:`vaultlens.safewrite.identity`
even after the vault moved)::

    vault.json            the vault's id, last path, and its folder's device and inode
    <op_id>/entry.json    what, where, SHA-256 of both sides, the confirmed diff's SHA-256, state, events
    <op_id>/before.bin    the note's exact bytes before (the backup copy); absent for a new note
    <op_id>/after.bin     the exact bytes to write; absent for a removal

Every file goes through :func:`vaultlens.fsutil.atomic_write` (temporary file, fsync, rename,
folder fsync), so a kill at any moment leaves an entry either as it was or as it became. States:

- ``planned``: recorded and shown, nothing written;
- ``writing``: the user confirmed the diff; the note may be written from here on;
- ``applied``: the note was written and read back equal to ``after``;
- ``conflict``: refused before writing, because the note no longer equalled ``before``;
- ``not_applied`` / ``diverged``: what recovery found for an interrupted ``writing`` entry (the note
  still equals ``before`` / equals neither side: someone else changed it);
- ``undone``: an applied operation whose undo (its own entry, ``undo_of``) was applied.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from vaultlens.errors import OperationNotFound, StoreCorrupt, translate_error, translated_errors
from vaultlens.fsutil import atomic_write, fsync_dir, sha256_hex
from vaultlens.index.lock import WriterLock
from vaultlens.safewrite.operation import Operation

__all__ = ["FINAL_STATES", "Entry", "Journal", "State"]

State = Literal["planned", "writing", "applied", "conflict", "not_applied", "diverged", "undone"]
FINAL_STATES: frozenset[str] = frozenset({"applied", "conflict", "not_applied", "diverged", "undone"})
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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

    def record(self, op: Operation, undo_of: str | None = None) -> Entry:
        """Write a new ``planned`` entry with both sides' bytes, durably, and return it."""
        folder = self._dir(op.op_id)
        now = _now()
        entry = Entry(
            op.op_id, op.path, op.summary, "planned", op.before_sha, op.after_sha, op.diff_sha,
            now, now, undo_of=undo_of, events=[{"state": "planned", "at": now}],
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

    def set_state(self, entry: Entry, state: State, detail: str | None = None, **changes: str) -> Entry:
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
                "the journal folder (keep it: it holds that change's before and after bytes) to go on.",
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
