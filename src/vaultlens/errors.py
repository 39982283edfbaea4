"""The one exception root for vaultlens, and the one translator from sqlite3 and OS errors.

Every error a user can cause or meet derives from :class:`VaultlensError` and carries three
stable numbers: a ``code`` (a machine-readable name), an ``exit_code`` for the CLI and an
``http_status`` for servers; its message is a sentence that says what happened, its ``hint``
what to do. Interfaces render them in one place each, never as a traceback.

    VaultlensError                  code                 exit  http
     ├── ConfigError                config                  2   400  bad config file, unknown setting, bad value
     ├── ConfirmationRequired       confirmation_required   7   403  a verb stopped before an act the user must agree to (a Proposal)
     │    ├── ConsentRequired       consent_required        7   403  note text would leave the machine; ask first
     │    └── WriteUnconfirmed      write_unconfirmed       9   409  a note would be written; confirm its exact diff first
     ├── VaultError                 vault                   2   400  vault path missing / not a folder, bad input path
     │    ├── NoteNotFound          note_not_found          2   404  no indexed note by that name
     │    └── NoteChanged           note_changed            2   409  the note changed since the page showed it (reload)
     ├── EmptyQuery                 empty_query             2   400  a search with nothing to search for
     ├── InvalidInput               invalid_input           2   400  an argument out of range (a slice, a cursor, a limit)
     ├── ProviderError              provider                3   502  embedding provider failed (HTTP error, garbage)
     │    ├── ProviderTimeout       provider_timeout        3   504
     │    ├── ProviderUnreachable   provider_unreachable    3   502  no server answers at the endpoint
     │    ├── ProviderAuthError     provider_auth           3   502  the server refused the API key (401/403)
     │    ├── ModelNotFound         model_not_found         3   502  the server has no model by that name
     │    ├── MalformedStream       malformed_stream        3   502  a streamed answer broke the protocol or stopped early
     │    └── InvalidModelOutput    invalid_model_output    3   502  structured output that does not validate, twice
     │         ├── InvalidQuery     invalid_query           3   502  a generated Dataview query fails the check in code
     │         ├── HiddenCharacters hidden_characters       3   502  model text with a control or bidi character (twice)
     │         └── AnswerTooLong    answer_too_long         3   502  an answer past llm.MAX_ANSWER_CHARS (reading stops)
     ├── StoreError                 store                   4   500  index unreadable, from a newer version, other sqlite errors
     │    ├── IndexNotFound         index_not_found         4   404  no index for this vault yet
     │    ├── IndexEmpty            index_empty             4   409  the index holds no notes (cleared or empty vault)
     │    ├── StoreCorrupt          store_corrupt           4   500  the index file is damaged (fix: vaultlens rebuild)
     │    ├── SpaceMismatch         space_mismatch          5   409  index built with another embedding space
     │    ├── IndexLocked           index_locked            6   423  another process is writing this index
     │    └── StoreBusy             store_busy              6   503  SQLite lock held by someone else; retry
     ├── FileSystemError            filesystem              8   500  the OS refused a read or write (strerror + path)
     │    ├── DiskFull              disk_full               8   507  no space left (or quota exceeded)
     │    └── PermissionDenied      permission_denied       8   500  not allowed to read/write a path, read-only file
     ├── WriteRefused               write_refused           9   409  safewrite would not write a note (see subclasses)
     │    ├── WriteConflict         write_conflict          9   409  the note changed since the diff was shown
     │    ├── NoteOpenInObsidian    note_open               9   423  the note is open in Obsidian (override needed)
     │    ├── UndoRefused           undo_refused            9   409  the note changed after the write; undo keeps it
     │    ├── PlanRefused           plan_refused            9   409  no safe place or link for the planned edit
     │    │    └── OutsideSelection outside_selection       9   409  a rewrite would change text outside its selection
     │    └── OperationNotFound     operation_not_found     9   404  no journal entry with that id
     └── Cancelled                  cancelled             130   499  the user interrupted a long job (state is kept)
          └── WriteInterrupted      write_interrupted     130   499  Ctrl-C during apply: says whether the note was written

Third-party exceptions are translated where they occur. For sqlite3 and the OS that is
:func:`translated_errors` (a context manager and decorator) or :func:`translate_error` (one
exception)::

    with translated_errors("write the index", db_path):
        conn.execute(...)
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal


class VaultlensError(Exception):
    code = "error"
    exit_code = 1
    http_status = 500

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"

    def details(self) -> dict[str, Any]:
        """Extra, machine-readable facts a subclass carries (a path, a destination); JSON-safe."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """What an HTTP or MCP server sends back: code, message, hint and the subclass's details."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        out.update(self.details())
        return out


class ConfigError(VaultlensError):
    code = "config"
    exit_code = 2
    http_status = 400


@dataclass(frozen=True, slots=True)
class Proposal:
    """Exactly what a verb would do that needs the user's yes: note text sent where, or a note written how.

    Every interface shows it its own way (the CLI prints it and asks, a server returns it with
    403/409, a page shows the diff) and calls the verb again with the grant. ``preview`` is the
    exact prompt or diff when one exists before the yes ("" when the text is chosen afterwards,
    as in Ask); ``token`` is its SHA-256, which a write's confirmation must bring back.
    """

    kind: Literal["send", "write"]
    destination: str  # a model and its endpoint, or the note's vault-relative path
    what: str  # a sentence: what would be sent or written
    preview: str = ""
    op_id: str | None = None  # a write: the planned operation a yes applies
    remarks: tuple[str, ...] = ()  # e.g. a note of which only the start is sent
    question: str = ""  # Ask: the question as it will be asked (a follow-up after its rewrite)
    passages: tuple[dict[str, Any], ...] = field(
        default=(), compare=False
    )  # Ask: note, section, lines, chars
    # What the verb prepared (a prompt with its nonce, a batch plan), so the call with the grant
    # sends exactly what was shown; never serialised. A server keeps it by ``token``.
    payload: object = field(default=None, compare=False, repr=False)

    @property
    def token(self) -> str:
        return token_of(self.preview)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "destination": self.destination, "what": self.what}
        if self.preview:
            out.update(preview=self.preview, token=self.token)
        if self.op_id:
            out["op_id"] = self.op_id
        if self.remarks:
            out["remarks"] = list(self.remarks)
        if self.question:
            out["question"] = self.question
        if self.passages:
            out["passages"] = list(self.passages)
        return out


def token_of(preview: str) -> str:
    """The token of a proposal's exact text: its SHA-256, which a yes brings back."""
    return hashlib.sha256(preview.encode("utf-8")).hexdigest()


class ConfirmationRequired(VaultlensError):
    """A verb stopped before an act the user must agree to; :attr:`proposal` says exactly what.

    Nothing was sent or written. The caller shows the proposal, asks, and calls the verb again
    with the grant (``consent=True`` for a send, ``confirmed=`` the accepted proposal or its token
    for a write)."""

    code = "confirmation_required"
    exit_code = 7
    http_status = 403

    def __init__(self, proposal: Proposal, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.proposal = proposal

    def details(self) -> dict[str, Any]:
        return {"proposal": self.proposal.as_dict()}


class ConsentRequired(ConfirmationRequired):
    """Note text would leave this machine for a destination the user has not agreed to.

    Interfaces catch it and ask: the CLI shows ``what`` and ``destination`` and asks (or takes
    ``--yes``), a server returns 403 with both so its client can ask; then the call is repeated
    with the grant (see :func:`vaultlens.config.consent.require_consent`). Nothing was sent.
    """

    code = "consent_required"
    exit_code = 7
    http_status = 403

    def __init__(
        self,
        destination: str,
        what: str,
        *,
        message: str | None = None,
        hint: str | None = None,
        preview: str = "",
        remarks: tuple[str, ...] = (),
        payload: object = None,
        question: str = "",
        passages: tuple[dict[str, Any], ...] = (),
    ) -> None:
        proposal = Proposal(
            "send",
            destination,
            what,
            preview,
            remarks=remarks,
            payload=payload,
            question=question,
            passages=passages,
        )
        super().__init__(
            proposal,
            message or f"vaultlens needs your agreement before it sends {what} to {destination}.",
            hint=hint or "Nothing was sent. Agree once for this destination (the CLI asks, or pass --yes).",
        )
        self.destination = destination
        self.what = what

    def details(self) -> dict[str, Any]:
        return {"destination": self.destination, "what": self.what, **super().details()}


class WriteUnconfirmed(ConfirmationRequired):
    """A planned write waits for the user to confirm its exact diff (nothing was written)."""

    code = "write_unconfirmed"
    exit_code = 9
    http_status = 409

    def __init__(self, proposal: Proposal, *, message: str | None = None, hint: str | None = None) -> None:
        super().__init__(
            proposal,
            message or f"Not written: confirm the diff of {proposal.op_id} first.",
            hint=hint or "Show it to the user and call again with its token (the CLI asks, or pass --yes).",
        )
        self.op_id = proposal.op_id

    def details(self) -> dict[str, Any]:
        return {"path": self.proposal.destination, "op_id": self.op_id, **super().details()}


class VaultError(VaultlensError):
    code = "vault"
    exit_code = 2
    http_status = 400


class NoteNotFound(VaultError):
    code = "note_not_found"
    http_status = 404


class NoteChanged(VaultError):
    """A part of a note asked for at a content hash the note no longer has: parts of two versions
    are never joined on one page."""

    code = "note_changed"
    http_status = 409


class EmptyQuery(VaultlensError):
    code = "empty_query"
    exit_code = 2
    http_status = 400


class InvalidInput(VaultlensError):
    """An argument a caller (CLI, HTTP, MCP) passed is out of range or malformed."""

    code = "invalid_input"
    exit_code = 2
    http_status = 400


class ProviderError(VaultlensError):
    code = "provider"
    exit_code = 3
    http_status = 502


class ProviderTimeout(ProviderError):
    code = "provider_timeout"
    http_status = 504


class ProviderUnreachable(ProviderError):
    code = "provider_unreachable"


class ProviderAuthError(ProviderError):
    """The server refused the credentials; the message names the variable to fix, never the key."""

    code = "provider_auth"


class ModelNotFound(ProviderError):
    code = "model_not_found"


class MalformedStream(ProviderError):
    code = "malformed_stream"


class InvalidModelOutput(ProviderError):
    code = "invalid_model_output"


class StoreError(VaultlensError):
    code = "store"
    exit_code = 4
    http_status = 500


class IndexNotFound(StoreError):
    code = "index_not_found"
    http_status = 404


class IndexEmpty(StoreError):
    """The index exists but holds no notes (cleared, or nothing indexable was found)."""

    code = "index_empty"
    http_status = 409


class StoreCorrupt(StoreError):
    code = "store_corrupt"


class SpaceMismatch(StoreError):
    code = "space_mismatch"
    exit_code = 5
    http_status = 409


class IndexLocked(StoreError):
    code = "index_locked"
    exit_code = 6
    http_status = 423


class StoreBusy(StoreError):
    code = "store_busy"
    exit_code = 6
    http_status = 503


class FileSystemError(VaultlensError):
    code = "filesystem"
    exit_code = 8
    http_status = 500

    def __init__(self, message: str, *, hint: str | None = None, path: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.path = path

    def details(self) -> dict[str, Any]:
        return {"path": self.path} if self.path else {}


class DiskFull(FileSystemError):
    code = "disk_full"
    http_status = 507


class PermissionDenied(FileSystemError):
    code = "permission_denied"


class WriteRefused(VaultlensError):
    """safewrite did not write a note; the note is as it was (the message says why)."""

    code = "write_refused"
    exit_code = 9
    http_status = 409

    def __init__(
        self, message: str, *, hint: str | None = None, path: str | None = None, op_id: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.path = path
        self.op_id = op_id

    def details(self) -> dict[str, Any]:
        return {k: v for k, v in (("path", self.path), ("op_id", self.op_id)) if v}


class WriteConflict(WriteRefused):
    code = "write_conflict"


class NoteOpenInObsidian(WriteRefused):
    code = "note_open"
    http_status = 423


class UndoRefused(WriteRefused):
    code = "undo_refused"


class PlanRefused(WriteRefused):
    code = "plan_refused"


class OutsideSelection(PlanRefused):
    """A model's rewrite of a selection would change text outside it (e.g. it echoed the lines around)."""

    code = "outside_selection"


class HiddenCharacters(InvalidModelOutput):
    """Model text holding a control or bidi character (ESC, CR, U+202E...), which would make a terminal
    show other text than the note would receive (:mod:`vaultlens.vault.hidden`)."""

    code = "hidden_characters"


class AnswerTooLong(InvalidModelOutput):
    """A model answer longer than :data:`vaultlens.llm.base.MAX_ANSWER_CHARS`; the rest is not read."""

    code = "answer_too_long"


class InvalidQuery(InvalidModelOutput):
    """A generated Dataview query that fails the check in code (syntax, sources or fields the vault lacks)."""

    code = "invalid_query"


class OperationNotFound(WriteRefused):
    code = "operation_not_found"
    http_status = 404


class Cancelled(VaultlensError):
    code = "cancelled"
    exit_code = 130
    http_status = 499


class WriteInterrupted(Cancelled):
    """A write stopped by the user; ``state`` is its journal entry's state once settled, so a
    program sees whether the note was written (``applied``) or not (``not_applied``, ``planned``)."""

    code = "write_interrupted"

    def __init__(self, message: str, *, hint: str | None = None, path: str, op_id: str, state: str) -> None:
        super().__init__(message, hint=hint)
        self.path = path
        self.op_id = op_id
        self.state = state

    def details(self) -> dict[str, Any]:
        return {"path": self.path, "op_id": self.op_id, "state": self.state}


# ---- sqlite3 and OSError -> VaultlensError ------------------------------------------------------

_DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})
_DENIED_ERRNOS = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})

# SQLite primary result codes (sqlite3.Error.sqlite_errorcode & 0xFF), from sqlite3.h
_SQLITE_PERM, _SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_READONLY = 3, 5, 6, 8
_SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_CANTOPEN, _SQLITE_NOTADB = 11, 13, 14, 26

_REBUILD_HINT = "Run `vaultlens rebuild` to rebuild the index from the vault (the vault itself is untouched)."
_RETRY_HINT = (
    "Another process is using the index right now; try again in a moment. "
    "If this keeps happening, look for a stuck vaultlens process."
)
_SPACE_HINT = (
    "Free some space (or point VAULTLENS_HOME at a disk with room) and run the command again; "
    "work that was already committed is kept."
)


def _sqlite_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def _may(path: Path, mode: int) -> bool:
    """os.access with the effective ids where the platform has them (what the OS will check)."""
    if os.access in os.supports_effective_ids:
        return os.access(path, mode, effective_ids=True)
    return os.access(path, mode)


def _cannot_open_cause(path: str | None) -> tuple[str, type[FileSystemError] | None]:
    """Why SQLite could not open ``path``: it reports CANTOPEN without saying why, so look."""
    if not path:
        return "", None
    target = Path(path)
    folder = target.parent
    try:
        if not folder.exists():  # raises PermissionError when a parent may not be looked into
            return f"the folder {folder} does not exist", FileSystemError
        if not folder.is_dir():
            return f"{folder} is not a folder", FileSystemError
        if not _may(folder, os.X_OK):
            return f"permission denied for the folder {folder}", PermissionDenied
        if target.is_dir():
            return f"{target} is a folder, not a file", FileSystemError
        if target.exists() and not _may(target, os.R_OK | os.W_OK):
            return f"permission denied for {target}", PermissionDenied
        if not target.exists() and not _may(folder, os.W_OK | os.X_OK):
            return f"permission denied for the folder {folder}", PermissionDenied
    except OSError:  # a parent we may not even look into
        return f"permission denied on the way to {target}", PermissionDenied
    return "", None


def _read_only_cause(path: str | None) -> tuple[str, str | None]:
    """Why SQLite found ``path`` read-only: the folder (no journal can be created there) or one of
    its files; ("", None) when both look writable (a connection opened read-only on purpose)."""
    if not path:
        return "", None
    target = Path(path)
    try:
        folder = target if target.is_dir() else target.parent
        if not _may(folder, os.W_OK | os.X_OK):
            return f"the index folder is not writable: {folder}", str(folder)
        if target.is_dir():
            return "", None
        for name in (target.name, f"{target.name}-wal", f"{target.name}-shm", f"{target.name}-journal"):
            part = folder / name
            if part.exists() and not _may(part, os.W_OK):
                return f"the index file is not writable: {part}", str(part)
    except OSError:
        return f"the index folder is not writable: {target.parent}", str(target.parent)
    return "", None


def _say(action: str | None, what: str) -> str:
    """ "Could not <action>: <what>." or, without an action, "<What>." as a sentence."""
    return f"Could not {action}: {what}." if action else f"{what[:1].upper()}{what[1:]}."


def _from_sqlite(exc: sqlite3.Error, action: str | None, path: str | None) -> VaultlensError:
    code = _sqlite_code(exc)
    text = str(exc).strip().rstrip(".") or type(exc).__name__
    low = text.lower()
    index = f"the index at {path}" if path else "the index"
    if code in (_SQLITE_BUSY, _SQLITE_LOCKED) or "database is locked" in low or "busy" in low:
        return StoreBusy(_say(action, f"{index} is busy"), hint=_RETRY_HINT)
    if code == _SQLITE_FULL or "database or disk is full" in low:
        return DiskFull(_say(action, f"the disk is full ({index} cannot grow)"), hint=_SPACE_HINT, path=path)
    if code in (_SQLITE_READONLY, _SQLITE_PERM) or "readonly database" in low:
        what, where = _read_only_cause(path)
        return PermissionDenied(
            _say(action, what or f"{index} is read-only"),
            hint=f"Check the owner and permissions of {where or 'the index folder'}: vaultlens must be able "
            "to write to it (or set VAULTLENS_HOME to a writable folder). Rebuilding would not help.",
            path=where or path,
        )
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "not a database" in low or "malformed" in low:
        return StoreCorrupt(_say(action, f"{index} is damaged ({text})"), hint=_REBUILD_HINT)
    if code == _SQLITE_CANTOPEN or "unable to open database file" in low:
        cause, cls = _cannot_open_cause(path)
        if cls is PermissionDenied:
            hint = f"Check the owner and permissions of {path} and the folders above it."
            return PermissionDenied(_say(action, cause), hint=hint, path=path)
        if cls is not None:
            return cls(_say(action, cause), path=path)
        return StoreError(_say(action, f"SQLite cannot open {index}"))
    return StoreError(_say(action, f"{index} reported an error: {text}"))


def _from_os(exc: OSError, action: str | None, path: str | None) -> FileSystemError:
    name = exc.filename if exc.filename is not None else path
    shown = os.fsdecode(name) if isinstance(name, str | bytes) else (str(name) if name else None)
    reason = exc.strerror or str(exc) or type(exc).__name__
    where = f" ({shown})" if shown else ""
    if exc.errno in _DISK_FULL_ERRNOS:
        return DiskFull(_say(action, f"the disk is full{where}"), hint=_SPACE_HINT, path=shown)
    if exc.errno in _DENIED_ERRNOS or isinstance(exc, PermissionError):
        subject = shown or "the file"
        why = "the file system is read-only" if exc.errno == errno.EROFS else "permission denied"
        return PermissionDenied(
            _say(action, f"{why} for {subject}"),
            hint=f"Check the owner and permissions of {subject}.",
            path=shown,
        )
    return FileSystemError(_say(action, f"{reason[:1].lower()}{reason[1:]}{where}"), path=shown)


#: The third-party exception types :func:`translate_error` knows how to explain.
TRANSLATED: tuple[type[Exception], ...] = (sqlite3.Error, OSError)


def translate_error(
    exc: BaseException, action: str | None = None, path: str | os.PathLike[str] | None = None
) -> VaultlensError:
    """The :class:`VaultlensError` a user should see for ``exc``.

    ``action`` completes the sentence "Could not …" (for example ``"write the index"``);
    without it the message states only what went wrong. ``path`` names the file involved when
    the exception itself does not (SQLite never does). A :class:`VaultlensError` is returned
    unchanged; a sqlite3 or OS error becomes the matching subclass above (busy, disk full,
    permission denied, corrupt, or the generic store or file system error); anything else
    becomes a plain :class:`VaultlensError` naming its type.
    """
    where = os.fspath(path) if path is not None else None
    if isinstance(exc, VaultlensError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return _from_sqlite(exc, action, where)
    if isinstance(exc, OSError):
        return _from_os(exc, action, where)
    return VaultlensError(_say(action, f"unexpected {type(exc).__name__}: {exc}"))


@contextlib.contextmanager
def translated_errors(
    action: str | None = None, path: str | os.PathLike[str] | None = None
) -> Iterator[None]:
    """Turn any sqlite3 or OS error raised inside the block into a clear :class:`VaultlensError`.

    Use it where the third-party call happens (store, lock, consent file, caches), or around a
    whole service call as a last line; it also works as a decorator. ``action`` and ``path``
    are as in :func:`translate_error`. The original exception is kept as ``__cause__`` for logs;
    a :class:`VaultlensError` raised inside passes through unchanged.
    """
    try:
        yield
    except TRANSLATED as exc:
        raise translate_error(exc, action, path) from exc
