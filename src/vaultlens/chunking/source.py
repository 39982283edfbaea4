"""The one note-loading seam: a vault-relative path in; bytes, hash, text, parse and chunks out.

The indexer and every later feature (search-hit checks, Ask, audits, safe writes) load a note
through :func:`load_note`, so they agree on what a note's bytes, text and chunks are, and none of
them can be talked into reading outside the vault (:mod:`vaultlens.vault.safepath`).

Offsets. :func:`~vaultlens.vault.parse.decode_note` drops a UTF-8 BOM and turns CRLF and lone
CR into LF, and the parser and chunker count code points in that text; chunk ids and content
hashes depend on it (a CRLF note chunks like its LF twin), so it stays normalised. Instead,
:class:`NoteSource` maps any offset of its ``text`` back to a byte offset of ``raw`` exactly:
``raw[slice(*source.byte_span(chunk.start, chunk.end))]`` is a chunk's original bytes, CRLF kept, and
everything outside that slice (the BOM, the rest of the file) is untouched by a byte-exact
write that replaces it.
"""

from __future__ import annotations

import codecs
import os
import stat
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from vaultlens.chunking.attachments import kind_of
from vaultlens.chunking.chunker import Chunk, MarkdownChunker
from vaultlens.errors import NoteNotFound, VaultError, VaultlensError, translate_error
from vaultlens.fsutil import sha256_hex
from vaultlens.vault.model import ParsedNote
from vaultlens.vault.parse import NotText, decode_note, parse_note
from vaultlens.vault.safepath import check_relative, resolve_note_path

__all__ = ["NoteReader", "NoteSource", "NotText", "RawNote", "load_note", "note_from_bytes", "read_note"]

_BOM = codecs.BOM_UTF8
_STEP = 1024  # code points between two byte-offset checkpoints


@dataclass(frozen=True, slots=True)
class RawNote:
    """A note's bytes as read from disk: ``path`` as spelled on disk (vault-relative, POSIX)."""

    path: str
    raw: bytes
    file_hash: str  # sha256_hex(raw)
    real: str | None = field(default=None, compare=False)  # the file read, when read from disk


@dataclass(frozen=True)
class NoteSource:
    """One note, loaded: its bytes and everything derived from them.

    ``text`` is the decoded, normalised text (no BOM, LF line endings) that ``note`` and
    ``chunks`` refer to; :meth:`byte_offset` maps its offsets back into ``raw``.
    """

    path: str  # vault-relative, POSIX separators, as spelled on disk
    raw: bytes
    file_hash: str  # sha256_hex(raw), the file hash the index stores
    text: str
    note: ParsedNote
    chunks: list[Chunk]

    @property
    def bom(self) -> bool:
        """True when the file starts with a UTF-8 byte order mark."""
        return self.raw.startswith(_BOM)

    @property
    def newline(self) -> str:
        """The line ending a write should use: the file's first one (``"\\n"`` when it has none)."""
        cr, lf = self.raw.find(b"\r"), self.raw.find(b"\n")
        if cr == -1 or (lf != -1 and lf < cr):
            return "\n"
        return "\r\n" if lf == cr + 1 else "\r"

    def byte_offset(self, offset: int) -> int:
        """The offset in ``raw`` of the character at code-point ``offset`` of ``text``.

        ``len(text)`` maps to ``len(raw)``. A line break that is CRLF on disk maps to its ``\\r``,
        so a span that ends before the break ends before the ``\\r`` too, and one that starts
        after it starts after the ``\\n``. Raises :class:`ValueError` outside ``0..len(text)``.
        """
        if not 0 <= offset <= len(self.text):
            raise ValueError(f"offset {offset} is outside the note text (0..{len(self.text)})")
        return self._map.byte_offset(offset)

    def byte_span(self, start: int, end: int) -> tuple[int, int]:
        """``(byte_start, byte_end)`` of the text span ``[start, end)``."""
        if end < start:
            raise ValueError(f"span end {end} is before its start {start}")
        return self.byte_offset(start), self.byte_offset(end)

    @cached_property
    def _map(self) -> _ByteMap:
        return _ByteMap(self.raw)


class _ByteMap:
    """Code-point offsets of the normalised text -> byte offsets of the raw file."""

    def __init__(self, raw: bytes) -> None:
        self.bom = len(_BOM) if raw.startswith(_BOM) else 0
        self.original = raw[self.bom :].decode("utf-8")  # with its CRs
        # normalised offsets of the "\n" of every CRLF: one CR was dropped before each later offset
        self.crlf: list[int] = []
        pos = self.original.find("\r\n")
        while pos != -1:
            self.crlf.append(pos - len(self.crlf))
            pos = self.original.find("\r\n", pos + 2)
        self.ascii = self.original.isascii()
        self.checkpoints: list[int] = []  # byte length of original[: k * _STEP], for k = 0, 1, ...
        self.size = len(raw) - self.bom
        if not self.ascii:
            total = 0
            for k in range(0, len(self.original), _STEP):
                self.checkpoints.append(total)
                total += len(self.original[k : k + _STEP].encode("utf-8"))

    def byte_offset(self, offset: int) -> int:
        cp = offset + bisect_left(self.crlf, offset)  # code points in the original text
        if self.ascii:
            return self.bom + cp
        k = cp // _STEP
        if k >= len(self.checkpoints):  # the very end of a text whose length is a multiple of _STEP
            return self.bom + self.size
        return self.bom + self.checkpoints[k] + len(self.original[k * _STEP : cp].encode("utf-8"))


def read_note(vault: Path, rel: str, max_bytes: int | None = None) -> RawNote:
    """Read the bytes of note ``rel`` (a path relative to ``vault``) and hash them.

    Raises :class:`~vaultlens.errors.VaultError` for a refused path (outside the vault, ``..``,
    absolute, a symlink that leads out, control characters; see :mod:`vaultlens.vault.safepath`)
    and for a file over ``max_bytes``; :class:`~vaultlens.errors.NoteNotFound` (a VaultError)
    when it does not exist; ``PermissionDenied`` / ``FileSystemError`` when the OS refuses the read.
    """
    found = resolve_note_path(vault, rel)
    try:
        with open(found.real, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise _too_large(found.rel, size, max_bytes)
            # sized to the file, not to the limit: read(n) allocates n bytes up front
            raw = fh.read(size + 1)
            if len(raw) > size:  # it grew while we read: take the rest, up to just over the limit
                raw += fh.read() if max_bytes is None else fh.read(max(0, max_bytes + 1 - len(raw)))
    except VaultlensError:
        raise
    except FileNotFoundError as exc:  # deleted between the check and the read
        raise NoteNotFound(f"No note {found.rel!r} in the vault (it was removed while being read).") from exc
    except OSError as exc:
        raise translate_error(exc, f"read the note {found.rel!r}") from exc
    if max_bytes is not None and len(raw) > max_bytes:  # grew while we looked
        raise _too_large(found.rel, len(raw), max_bytes)
    return RawNote(found.rel, raw, sha256_hex(raw), str(found.real))


class NoteReader:
    """Reads many notes of one vault with :func:`read_note`'s refusals, checking each folder once.

    For callers that read every note a scan just listed (the structure audit reads 5,000 notes in seconds):
    :func:`read_note` examines every component of every path, which costs more than reading the note. Here a
    folder is checked once (its real path must be itself: no symlink on the way, so it is inside the vault);
    the note must be a regular file, not a symlink, and the file opened must be the one checked (same device
    and inode). Anything else (a symlink, an NFC/NFD spelling, a file over ``max_bytes``, any OS error) goes
    to :func:`read_note`, which gives the answer or the error, so both agree on every path.
    """

    def __init__(self, vault: Path, max_bytes: int | None = None) -> None:
        self.vault = vault
        self.max_bytes = max_bytes
        try:
            self._root = str(vault.resolve(strict=True))
        except OSError as exc:
            raise VaultError(f"Vault folder {vault} cannot be opened ({exc.strerror or exc}).") from exc
        self._plain_folders: dict[str, bool] = {}

    def read(self, rel: str) -> RawNote:
        parts = check_relative(rel)
        folder = os.path.join(self._root, *parts[:-1])
        plain = self._plain_folders.get(folder)
        if plain is None:
            plain = self._plain_folders[folder] = os.path.realpath(folder) == folder
        path = os.path.join(folder, parts[-1])
        raw = self._read_plain(path) if plain else None
        return (
            RawNote(rel, raw, sha256_hex(raw), path)
            if raw is not None
            else read_note(self.vault, rel, self.max_bytes)
        )

    def _read_plain(self, path: str) -> bytes | None:
        """The bytes of a regular file at ``path``, or None when :func:`read_note` must decide."""
        limit = self.max_bytes
        try:
            checked = os.lstat(path)
            if not stat.S_ISREG(checked.st_mode) or (limit is not None and checked.st_size > limit):
                return None
            with open(path, "rb") as fh:
                opened = os.fstat(fh.fileno())
                if (opened.st_dev, opened.st_ino) != (checked.st_dev, checked.st_ino):
                    return None  # replaced between the check and the open
                # read() to the end, not read(limit + 1): that allocates the whole limit for every note
                raw = fh.read()
        except OSError:
            return None
        return None if limit is not None and len(raw) > limit else raw


def note_from_bytes(raw: RawNote, chunker: MarkdownChunker) -> NoteSource:
    """Decode, parse and chunk bytes already read (the indexer reads, compares the hash, then calls this).

    Raises :class:`NotText` (a :class:`ValueError`, not a VaultlensError: the indexer records it
    as a skip reason) when the bytes are binary or not UTF-8. An empty note gives no chunks.
    """
    text = decode_note(raw.raw)
    note = parse_note(text, raw.path)
    return NoteSource(raw.path, raw.raw, raw.file_hash, text, note, chunker.chunk(note, raw.path))


def load_note(vault: Path, rel: str, chunker: MarkdownChunker, max_bytes: int | None = None) -> NoteSource:
    """Load note ``rel`` of ``vault``: bytes, hash, text, parse and chunks, all from one read.

    Errors: :class:`~vaultlens.errors.VaultError` for a refused path (a PDF or a canvas too: never
    loaded as a note, so no note tool or review edits one) or a file over ``max_bytes``,
    :class:`~vaultlens.errors.NoteNotFound` for a missing file, ``PermissionDenied`` /
    ``FileSystemError`` for an unreadable one (see :func:`read_note`), and :class:`NotText`
    when the bytes are not a UTF-8 text note (see :func:`note_from_bytes`).
    """
    kind = kind_of(rel)
    if kind is not None:  # indexed for search, but no feature reads (or writes) it as a note
        raise VaultError(
            f"{rel!r} is {'a PDF' if kind == 'pdf' else 'a Canvas file'}, not a Markdown note: vaultlens "
            "searches its text but never edits it.",
            hint="Give the path of a Markdown note (.md).",
        )
    return note_from_bytes(read_note(vault, rel, max_bytes), chunker)


def _too_large(rel: str, size: int, limit: int) -> VaultError:
    return VaultError(
        f"Note {rel!r} is too large ({size / 1e6:.1f} MB > {limit / 1e6:g} MB limit).",
        hint="Raise index.max_file_mb if this note should be read.",
    )
