"""Compare-and-swap of one note's bytes: the only code in vaultlens that writes into a vault.

:func:`apply` takes a planned journal entry and the SHA-256 of the diff the user confirmed, and
then, holding the journal lock:

1. refuses a note open in Obsidian (unless ``allow_open``);
2. reads the note and refuses (``conflict``) unless its bytes equal ``before`` exactly, with no
   normalisation of whitespace, BOM or line endings (``before is None``: the path must not exist);
3. refuses a read-only note or folder (the entry settled ``not_applied``), marks the entry
   ``writing`` (durable), then opens the note's folder once, each component from the vault's root
   without following a link (a folder swapped for a symbolic link since the check is refused), and
   relative to it writes a temporary file, fsyncs it, gives it the note's permission bits, compares
   the note with ``before`` once more and renames the temporary file over it (a new note is
   hard-linked into place, which fails if the name appeared meanwhile), and fsyncs the folder;
4. reads the note back and marks the entry ``applied`` only if it equals ``after``.

A kill at any point leaves the old bytes or the new ones, and a ``writing`` entry that
:func:`recover` settles by comparing the file with both sides; nothing is ever re-applied, and
the only thing recovery removes is a temporary file the killed writer left beside the note.
Ctrl-C (``KeyboardInterrupt``) is not a kill: the writer removes its own temporary file, settles
its entry the way recovery would, and raises :class:`WriteInterrupted` saying whether the note
was written and how to undo it, so neither the user nor ``history`` is left guessing.
"""

from __future__ import annotations

import contextlib
import errno
import glob
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType

from vaultlens.errors import (
    NoteNotFound,
    NoteOpenInObsidian,
    UndoRefused,
    VaultError,
    VaultlensError,
    WriteConflict,
    WriteInterrupted,
    WriteRefused,
    translate_error,
)
from vaultlens.fsutil import nearest_existing, open_folder, sha256_hex
from vaultlens.index.lock import process_alive
from vaultlens.safewrite.journal import SHOW_BEFORE, Entry, GroupState, Journal, State
from vaultlens.safewrite.obsidian import open_notes
from vaultlens.safewrite.operation import Operation, new_op_id
from vaultlens.vault.safepath import check_relative, resolve_note_path

__all__ = ["TRASH", "Recovered", "apply", "current_bytes", "plan", "plan_undo", "recover"]

# The vault's own trash folder (Obsidian's "Move to Obsidian trash"): the one hidden folder a write
# may name, so a note a merge removes is moved there (a new note of the same bytes) and never deleted.
TRASH = ".trash"

_OVERRIDE_HINT = "Close the note in Obsidian and try again, or override with --allow-open."


@dataclass(frozen=True, slots=True)
class Recovered:
    """What recovery found for an interrupted write: ``state`` is applied, not_applied or diverged
    (an operation group: partial when only some of its notes were written)."""

    op_id: str
    path: str
    state: State | GroupState
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"op_id": self.op_id, "path": self.path, "state": self.state, "detail": self.detail}


# ---- where a note is, and what it holds -------------------------------------------------------


def _target(vault: Path, rel: str) -> Path:
    """The path of ``rel`` inside the vault, whether or not the note exists yet.

    An existing note goes through :func:`resolve_note_path` (every refusal of the note-loading
    seam applies). A symbolic link anywhere on the way (the note itself or a folder) is refused:
    the diff names ``rel``, so the bytes written must be the file of that name, never the note a
    link leads to. For a new note each existing folder on the way must be a real folder; missing
    folders are created only when writing. A path in the vault's trash (``.trash/...``, which no scan
    lists) is a regular file there or none.
    """
    in_trash = rel.startswith(TRASH + "/")
    parts = [TRASH, *check_relative(rel[len(TRASH) + 1 :])] if in_trash else check_relative(rel)
    root = vault.resolve(strict=True)
    try:
        found = None if in_trash else resolve_note_path(vault, rel)
    except NoteNotFound:
        found = None
    if found is not None:
        if found.real != root.joinpath(*found.rel.split("/")):
            raise _linked(rel, found.real.relative_to(root).as_posix())
        return found.real
    cur = root
    for part in parts[:-1]:
        cur = cur / part
        if not os.path.lexists(cur):
            return root.joinpath(*parts)
        if os.path.islink(cur):
            raise _linked(rel, Path(os.path.realpath(cur)).as_posix())
        if not cur.is_dir():
            raise VaultError(f"Refusing note path {rel!r}: {part!r} is not a folder inside the vault.")
    target = cur / parts[-1]
    if in_trash and not os.path.islink(target) and (target.is_file() or not os.path.lexists(target)):
        return target  # a note moved to the trash (its undo takes it out again)
    if os.path.lexists(target):  # a broken symlink, a folder, a socket: never a note to create
        raise VaultError(f"Refusing note path {rel!r}: something that is not a note is already there.")
    return target


def _linked(rel: str, leads_to: str) -> VaultError:
    return VaultError(
        f"Refusing to write {rel!r}: a symbolic link on its path leads to {leads_to!r}, so the change "
        "would land in a file of another name.",
        hint="Plan the change on the file the link leads to, by its own path.",
    )


def current_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def state_of(vault: Path, rel: str) -> tuple[Path, bytes | None]:
    target = _target(vault, rel)
    try:
        return target, current_bytes(target)
    except OSError as exc:
        raise translate_error(exc, f"read the note {rel!r}", target) from exc


def check_not_open(vault: Path, rel: str, allow_open: bool) -> None:
    if allow_open:
        return
    opened, problem = open_notes(vault)
    if problem:
        raise NoteOpenInObsidian(
            f"Cannot tell whether {rel} is open in Obsidian: {problem}.", hint=_OVERRIDE_HINT, path=rel
        )
    if unicodedata.normalize("NFC", rel) in {unicodedata.normalize("NFC", p) for p in opened}:
        raise NoteOpenInObsidian(
            f"{rel} is open in Obsidian; writing under it could lose what you type there.",
            hint=_OVERRIDE_HINT,
            path=rel,
        )


# ---- the swap -------------------------------------------------------------------------------------


def conflict(
    op: Operation, found: bytes | None, outcome: str = "The note was left exactly as it is.", op_id: str = ""
) -> WriteConflict:
    """The refusal naming the note that no longer holds what the diff was computed from."""
    if op.before is None:
        why = "it was to be created, but a file by that name exists now"
    elif found is None:
        why = "it was deleted or moved since the diff was shown"
    else:
        why = f"it changed since the diff was shown (SHA-256 now {sha256_hex(found)[:12]}…)"
    return WriteConflict(
        f"Not written: {op.path} — {why}. {outcome}",
        hint="Plan the change again from the note's current text.",
        path=op.path,
        op_id=op_id or op.op_id,
    )


def _temporary(target: Path, pid: int) -> Path:
    """The hidden file a write fills before it is renamed over ``target`` (Obsidian ignores dot-files)."""
    return target.with_name(f".{target.name}.vaultlens-{pid}.tmp")


def _remove_litter(target: Path) -> None:
    """Remove the temporary files a killed writer left beside ``target`` (never a note, never a live writer's)."""
    for tmp in target.parent.glob(f".{glob.escape(target.name)}.vaultlens-*.tmp"):
        pid = tmp.name.rsplit("-", 1)[-1].removesuffix(".tmp")
        if pid.isdigit() and not process_alive(int(pid)):
            with contextlib.suppress(OSError):
                tmp.unlink()


def check_writable(target: Path, rel: str) -> None:
    """A note its owner made read-only is refused: a rename over it would ignore that, silently;
    so is a note whose folder (or, for a new note, the nearest folder there) cannot be written."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        pass
    else:
        if not mode & stat.S_IWUSR:
            raise WriteRefused(
                f"Not written: {rel} is read-only. The note was left exactly as it is.",
                hint=f"Make it writable (chmod u+w {rel!r}) and plan the change again if you want vaultlens "
                "to change it.",
                path=rel,
            )
    folder = nearest_existing(target.parent)
    with contextlib.suppress(OSError):
        if not (os.stat(folder).st_mode & stat.S_IWUSR and os.access(folder, os.W_OK | os.X_OK)):
            raise WriteRefused(
                f"Not written: the folder {folder.name or str(folder)!r} that would hold {rel} is read-only. "
                "The note was left exactly as it is.",
                hint="Make the folder writable (chmod u+w) if you want vaultlens to change the note there.",
                path=rel,
            )


def _read_at(folder: int, name: str) -> bytes | None:
    """The bytes of ``name`` in the open ``folder`` (None: absent); a symbolic link there is refused."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=folder)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _open_parent(root: Path, target: Path, op: Operation) -> int:
    """The note's folder opened once, component by component without following a link (see
    :func:`~vaultlens.fsutil.open_folder`): a folder swapped for a symbolic link after the path
    was checked is refused here, so the write can never land outside the vault."""
    try:
        return open_folder(root, target.relative_to(root).parts[:-1], create=op.after is not None)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise VaultError(
                f"Not written: a folder on the path of {op.path} was replaced by a symbolic link or a file "
                "after the path was checked. The note was left exactly as it is.",
                hint="Check that folder; plan the change again once it is a real folder inside the vault.",
            ) from None
        raise


def _swap(target: Path, op: Operation, root: Path) -> None:
    """Replace ``op.before`` with ``op.after`` at ``target`` (under the vault's real ``root``), or
    raise (the note then unchanged). Every step is relative to the note's folder, opened once."""
    folder = _open_parent(root, target, op)
    try:
        _swap_in(folder, target.name, op)
        with contextlib.suppress(OSError):
            os.fsync(folder)  # the rename (or the removal) is durable
    finally:
        os.close(folder)


def _swap_in(folder: int, name: str, op: Operation) -> None:
    try:
        found = _read_at(folder, name)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _linked(op.path, name) from None
        raise
    if op.after is None:  # the undo of a creation
        if found != op.before:
            raise conflict(op, found)
        os.unlink(name, dir_fd=folder)
        return
    tmp = _temporary(Path(name), os.getpid()).name
    try:  # the name carries this process's id: whatever is there on the way out is ours to remove
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(op.after)
            fh.flush()
            if op.before is not None:
                os.fchmod(
                    fh.fileno(), stat.S_IMODE(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
                )
            os.fsync(fh.fileno())
        if op.before is None:
            try:  # atomic, and never replaces a file that appeared meanwhile
                os.link(tmp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            except FileExistsError:
                raise conflict(op, _read_at(folder, name)) from None
            os.unlink(tmp, dir_fd=folder)
        else:
            found = _read_at(folder, name)
            if found != op.before:  # the last look, as close to the rename as it gets
                raise conflict(op, found)
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder)
        raise


# ---- planning, applying, undoing, recovering -------------------------------------------------


def plan(
    vault: Path,
    journal: Journal,
    path: str,
    after: bytes | None,
    summary: str,
    based_on: bytes | None | EllipsisType = ...,
) -> Entry:
    """Record the operation that turns the note's current bytes into ``after`` (nothing is written).

    ``based_on``: the bytes ``after`` was computed from (None: the note was to be new). When the note
    no longer holds them, nothing is planned: a diff from the current bytes would silently revert
    whatever changed them (an edit made while a model was answering)."""
    op = operation_for(vault, path, after, summary, based_on)
    return _pending(journal, op, None) or journal.record(op)


def operation_for(
    vault: Path, path: str, after: bytes | None, summary: str, based_on: bytes | None | EllipsisType
) -> Operation:
    """The operation from the note's current bytes to ``after``, refused as :func:`plan` says."""
    target, before = state_of(vault, path)
    check_writable(target, path)
    if based_on is not ... and before != based_on:
        why = "exists now" if based_on is None else ("was deleted" if before is None else "changed")
        raise WriteConflict(
            f"Nothing planned: {path} {why} after its text was read for this change, so the change "
            "would undo that. The note was left exactly as it is.",
            hint="Run the command again on the note as it is now.",
            path=path,
        )
    if before == after:
        raise WriteRefused(f"Nothing to change in {path}: the planned text equals the note.", path=path)
    return Operation(new_op_id(), path, before, after, summary)


def _pending(journal: Journal, op: Operation, undo_of: str | None) -> Entry | None:
    """A ``planned`` entry that writes exactly ``op``'s bytes to its path: reused, so a change asked
    for again (an undo declined or left unconfirmed, the same review twice) adds no entry."""
    return next(
        (
            e
            for e in journal.entries()
            if e.state == "planned"
            and e.group is None
            and (e.path, e.before_sha, e.after_sha, e.undo_of)
            == (op.path, op.before_sha, op.after_sha, undo_of)
        ),
        None,
    )


def plan_undo(vault: Path, journal: Journal, op_id: str) -> Entry:
    """Record the operation that puts an applied operation's ``before`` back, if nothing changed since."""
    with journal.locked():
        recover_locked(vault, journal)
        entry = journal.entry(op_id)
        _refuse_member(entry, "undone")
        if entry.state != "applied":
            raise UndoRefused(
                f"Operation {op_id} cannot be undone: it is {entry.state.replace('_', ' ')}, not applied.",
                op_id=op_id,
            )
        op = journal.operation(entry)
        _, found = state_of(vault, op.path)
        if found != op.after:
            raise UndoRefused(
                f"Not undone: {op.path} has changed since operation {op_id} wrote it, and undo would "
                "throw those later edits away. The note was left exactly as it is.",
                hint="Edit the note by hand; the journal keeps what it held before: "
                f"`{SHOW_BEFORE.format(op=op_id)}` prints it (--output FILE saves it).",
                path=op.path,
                op_id=op_id,
            )
        undo = op.reversed(new_op_id())
        return _pending(journal, undo, op_id) or journal.record(undo, undo_of=op_id)


def _refuse_member(entry: Entry, done: str) -> None:
    """A member of an operation group is applied and undone only with its group."""
    if entry.group:
        raise WriteRefused(
            f"Operation {entry.op_id} is part of operation group {entry.group}; it is {done} only with it.",
            hint=f"Use the group's id: `vaultlens {'undo' if done == 'undone' else 'apply'} {entry.group}`.",
            op_id=entry.op_id,
        )


def _planned_entry(journal: Journal, op_id: str) -> Entry:
    entry = journal.entry(op_id)
    _refuse_member(entry, "applied")
    if entry.state != "planned":
        raise WriteRefused(
            f"Operation {op_id} is {entry.state.replace('_', ' ')}; only a planned operation is applied.",
            hint="Plan the change again from the note as it is now (run the command that proposed it).",
            op_id=op_id,
        )
    return entry


def applicable(vault: Path, journal: Journal, op_id: str) -> Entry:
    """The planned entry ``op_id`` if its note still holds the bytes its diff was computed from, so a
    user is never asked to confirm a diff that can no longer apply (:func:`apply` checks again)."""
    entry = _planned_entry(journal, op_id)
    op = journal.operation(entry)
    _, found = state_of(vault, op.path)
    if found != op.before:
        raise conflict(op, found)
    return entry


def check_token(confirmed: str, recorded: str, what: str, op_id: str) -> None:
    """Write only the diff the user confirmed: its SHA-256 must be the one recorded when it was planned."""
    if confirmed != recorded:
        raise WriteRefused(
            f"Not written: the diff that was confirmed is not {what}'s diff.",
            hint="Show its diff again and confirm that one.",
            op_id=op_id,
        )


def apply(
    vault: Path, journal: Journal, op_id: str, *, confirmed_diff_sha: str, allow_open: bool = False
) -> Entry:
    """Write a planned operation whose diff the user confirmed (see the module docstring)."""
    with journal.locked():
        recover_locked(vault, journal)
        entry = _planned_entry(journal, op_id)
        check_token(confirmed_diff_sha, entry.diff_sha, f"operation {op_id}", op_id)
        op = journal.operation(entry)
        check_not_open(vault, op.path, allow_open)
        target, found = state_of(vault, op.path)
        if found != op.before:
            journal.set_state(entry, "conflict", "the note differed from `before`")
            raise conflict(op, found)
        refuse_unwritable(journal, [(entry, op, target)])
        try:
            return write_entry(vault, journal, entry, op, target)
        except KeyboardInterrupt:
            raise _interrupted(vault, journal, op_id) from None


def refuse_unwritable(journal: Journal, items: list[tuple[Entry, Operation, Path]]) -> None:
    """Before the first write: every note (and its folder) must be writable, or nothing is written
    and each entry is settled ``not_applied`` saying why (never left ``writing``)."""
    for _, op, target in items:
        try:
            check_writable(target, op.path)
        except WriteRefused as exc:
            for entry, _, _ in items:
                journal.set_state(entry, "not_applied", f"refused before writing: {exc.message}")
            raise


def write_entry(vault: Path, journal: Journal, entry: Entry, op: Operation, target: Path) -> Entry:
    """Mark ``writing``, swap the bytes, read them back and mark the outcome."""
    journal.set_state(entry, "writing")
    try:
        _swap(target, op, vault.resolve(strict=True))
    except WriteConflict:
        journal.set_state(entry, "conflict", "the note changed during the write")
        raise
    except VaultlensError as exc:  # refused before the rename: the note was never replaced
        journal.set_state(entry, "not_applied", f"refused: {exc.message}")
        raise
    except OSError as exc:  # the temporary file is gone; the note was never replaced
        journal.set_state(entry, "not_applied", str(exc))
        raise translate_error(exc, f"write {op.path}", target) from exc
    if current_bytes(target) != op.after:
        journal.set_state(entry, "diverged", "read back after the write, the note differs from `after`")
        raise WriteRefused(f"{op.path} did not read back as written; it is left as found.", path=op.path)
    _settle_undo(journal, entry)
    return journal.set_state(entry, "applied")


def _interrupted(vault: Path, journal: Journal, op_id: str) -> WriteInterrupted:
    """Ctrl-C during a write: settle the entry from the note's bytes (as recovery does) and say so."""
    entry = journal.entry(op_id)  # as last saved: the interrupt may have come before or after any mark
    if entry.state == "writing":
        settle(vault, journal, entry)
    path, state = entry.path, entry.state
    if state == "applied":
        message = f"Interrupted after the write: {path} was written (operation {op_id} is applied)."
        hint = f"`vaultlens undo {op_id}` puts back what was there before."
    elif state in ("planned", "not_applied"):
        message = f"Interrupted before the write: {path} is unchanged (operation {op_id} is {state.replace('_', ' ')})."
        hint = (
            f"`vaultlens apply {op_id}` writes it."
            if state == "planned"
            else "Plan the change again to write it."
        )
    else:
        message = (
            f"Interrupted: {path} is {state.replace('_', ' ')}; it was left as it is (operation {op_id})."
        )
        hint = f"`{SHOW_BEFORE.format(op=op_id)}` gives back what the note held before."
    return WriteInterrupted(message, hint=hint, path=path, op_id=op_id, state=state)


def _settle_undo(journal: Journal, entry: Entry) -> None:
    """An applied undo marks the operation it reverses as undone; when that operation was itself an
    undo (a group's rollback put back), the operation it had undone is applied again."""
    if entry.undo_of:
        original = journal.entry(entry.undo_of)
        if original.state == "applied":
            journal.set_state(original, "undone", f"by {entry.op_id}", undone_by=entry.op_id)
            if original.undo_of:
                first = journal.entry(original.undo_of)
                if first.state == "undone" and first.undone_by == original.op_id:
                    journal.set_state(
                        first, "applied", f"its undo {original.op_id} was reversed", undone_by=None
                    )


def recover(vault: Path, journal: Journal) -> list[Recovered]:
    """Settle interrupted writes by looking at the notes (no note is written, nothing re-applied)."""
    with journal.locked():
        return recover_locked(vault, journal)


def recover_locked(vault: Path, journal: Journal) -> list[Recovered]:
    found: list[Recovered] = []
    for entry in journal.entries():
        if entry.state == "applied":
            _settle_undo(journal, entry)  # killed between the undo's write and this mark
        elif entry.state == "writing":
            found.append(settle(vault, journal, entry))
    for group in journal.groups():
        if group.state == "writing":  # killed in the middle of a group: what each note shows, no write
            group = journal.settle_group(group, "vaultlens stopped during the group's apply")
            what = {"partial": f"only some notes were written; `vaultlens undo {group.op_id}` puts them back"}
            found.append(Recovered(group.op_id, group.path, group.state, what.get(group.state, "settled")))
        elif group.state != "planned":
            journal.settle_group(group)
    return found


def settle(vault: Path, journal: Journal, entry: Entry) -> Recovered:
    """A ``writing`` entry becomes what its note shows: ``after`` applied, ``before`` not, else diverged."""
    op = journal.operation(entry)
    state: State
    try:
        target, now = state_of(vault, op.path)
    except VaultlensError as exc:
        state, detail = "diverged", f"the note cannot be read: {exc.message}"
    else:
        _remove_litter(target)
        if now == op.after:
            state, detail = "applied", "the write had completed before vaultlens stopped"
            _settle_undo(journal, entry)
        elif now == op.before:
            state, detail = "not_applied", "vaultlens stopped before the write; the note is unchanged"
        else:
            state, detail = (
                "diverged",
                (
                    "the note equals neither side; it was left as it is "
                    f"(`{SHOW_BEFORE.format(op=entry.op_id)}` gives back what it held before)"
                ),
            )
    journal.set_state(entry, state, detail)
    return Recovered(entry.op_id, entry.path, state, detail)
