"""Reading notes for callers that may be hostile: bounded slices of one note, and paged listings.

The HTTP API and the MCP server hand these to programs and agents, so a path is checked with
:func:`~vaultlens.vault.safepath.check_untrusted` (encoded, look-alike and ``~`` tricks on top
of the rules every path obeys), resolved inside the vault with
:func:`~vaultlens.vault.safepath.resolve_note_path`, and then must be a note the vault's own
scan would list (:meth:`VaultRules.classify`): a hidden, ignored, oversized or non-Markdown
file is refused even though it sits inside the vault. Text comes out in bounded slices, so
one call never returns a 10 MB note.
"""

from __future__ import annotations

import base64
import binascii
from bisect import bisect_right
from dataclasses import dataclass, field

from vaultlens.chunking.source import RawNote, read_note
from vaultlens.errors import InvalidInput, NoteNotFound, VaultError
from vaultlens.index.store import StoreReads
from vaultlens.services.serial import AsDict
from vaultlens.vault.parse import NotText, decode_note
from vaultlens.vault.safepath import check_untrusted, resolve_note_path
from vaultlens.vault.scan import VaultFile, VaultRules

DEFAULT_SLICE = 4_000  # code points returned when the caller does not say
MAX_SLICE = 20_000  # code points: about 5k tokens, a bounded bite for an agent's context
DEFAULT_PAGE = 100
MAX_PAGE = 500
MAX_PATH_CHARS = 1_024  # longer than any real vault path (most file systems stop at 255 per name)


@dataclass(frozen=True, slots=True)
class NoteSlice(AsDict):
    """``text`` = the note's text (BOM dropped, LF line endings) from ``offset`` (code points)."""

    path: str  # as spelled on disk, vault-relative
    offset: int
    length: int  # code points in ``text``
    total_length: int  # code points in the whole note
    content_hash: str  # SHA-256 of the file's bytes (the hash the index stores for it)
    text: str
    next_offset: int | None  # where the next slice starts; None at the end of the note


@dataclass(frozen=True, slots=True)
class NoteEntry:
    path: str
    title: str


@dataclass(frozen=True, slots=True)
class NoteList(AsDict):
    folder: str  # "" = the whole vault
    total: int  # notes in the folder (all pages)
    notes: list[NoteEntry] = field(default_factory=list)
    next_cursor: str | None = None  # pass it back for the next page; None on the last


def check_untrusted_arg(rel: str, what: str = "path") -> None:
    """A path or note name from a program or an agent: bounded, and none of the tricks of
    :func:`~vaultlens.vault.safepath.check_untrusted`."""
    if len(rel) > MAX_PATH_CHARS:
        raise InvalidInput(
            f"The {what} is {len(rel)} characters long; at most {MAX_PATH_CHARS} are accepted."
        )
    check_untrusted(rel)


def read_untrusted(vault_rules: VaultRules, rel: str, max_bytes: int) -> RawNote:
    """The bytes of note ``rel``, or a :class:`VaultError` saying why it may not be read."""
    return read_note(vault_rules.root, resolve_untrusted(vault_rules, rel), max_bytes)


def resolve_untrusted(vault_rules: VaultRules, rel: str) -> str:
    """The one rule for a note path from a program or an agent (read a slice, find related notes):
    a vault-relative path to a note the scan lists, as spelled on disk (an NFD spelling of an NFC
    name finds it; another case, a missing extension or a bare name do not). Returns that spelling."""
    check_untrusted_arg(rel)
    found = resolve_note_path(vault_rules.root, rel)
    listed = vault_rules.classify(found.rel)
    if not isinstance(listed, VaultFile):
        why = listed.reason if listed is not None else "the vault's scan does not list it"
        raise VaultError(
            f"Refusing note path {rel!r}: it is not a note vaultlens reads ({why}).",
            hint="Only Markdown notes the index would list can be read; see `vaultlens status`.",
        )
    if listed.kind != "note":
        what = {"canvas": "a Canvas file", "base": "a Bases file"}.get(listed.kind, "an attachment")
        raise VaultError(f"Refusing note path {rel!r}: it is {what}, not a Markdown note.")
    return found.rel


def note_slice(vault_rules: VaultRules, rel: str, offset: int, length: int, max_bytes: int) -> NoteSlice:
    """At most ``length`` code points of note ``rel`` from ``offset``, with its total length and hash."""
    if offset < 0:
        raise InvalidInput(f"offset must be 0 or more (got {offset}).")
    if not 1 <= length <= MAX_SLICE:
        raise InvalidInput(f"length must be between 1 and {MAX_SLICE} (got {length}).")
    raw = read_untrusted(vault_rules, rel, max_bytes)
    try:
        text = decode_note(raw.raw)
    except NotText as exc:
        raise VaultError(f"Note {raw.path!r} is not readable text ({exc}).") from exc
    if offset > len(text):
        raise InvalidInput(
            f"offset {offset} is past the end of {raw.path!r} ({len(text)} characters).",
            hint="Start at 0, or at the next_offset a previous slice returned.",
        )
    part = text[offset : offset + length]
    end = offset + len(part)
    return NoteSlice(
        raw.path, offset, len(part), len(text), raw.file_hash, part, end if end < len(text) else None
    )


def _encode_cursor(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode("utf-8")).decode("ascii").rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return base64.b64decode(padded, altchars=b"-_", validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput(
            f"The cursor {cursor[:80]!r} is not one this server handed out.",
            hint="Pass the next_cursor of the previous page unchanged, or no cursor for the first page.",
        ) from None


def list_notes(
    store: StoreReads, vault_rules: VaultRules, folder: str, cursor: str | None, limit: int
) -> NoteList:
    """Indexed notes under ``folder`` ("" = all), sorted by path, one page after ``cursor``."""
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInput(f"limit must be between 1 and {MAX_PAGE} (got {limit}).")
    if len(folder) > 1 and folder.endswith("/"):  # "Notes/" is "Notes"; "/" stays absolute (refused)
        folder = folder[:-1]
    if folder:
        check_untrusted_arg(folder, "folder")
        if not vault_rules.folder_visible(folder):
            raise NoteNotFound(
                f"No folder {folder!r} in the vault (or the vault's rules leave it out).",
                hint="Pass a folder relative to the vault root, like 'Projects/2024', or nothing for all notes.",
            )
    prefix = folder + "/" if folder else ""
    paths = sorted(
        p
        for p, r in store.file_records().items()
        if r.status == "indexed" and r.kind == "note" and p.startswith(prefix)
    )
    after = _decode_cursor(cursor) if cursor else None
    start = 0 if after is None else bisect_right(paths, after)
    page = paths[start : start + limit]
    titles = store.titles(page)
    more = start + limit < len(paths)
    return NoteList(
        folder,
        len(paths),
        [NoteEntry(p, titles.get(p) or p) for p in page],
        _encode_cursor(page[-1]) if more and page else None,
    )
