"""Reading notes for callers that may be hostile: one note whole or in bounded slices, and paged listings.

The HTTP API and the MCP server hand these to programs and agents, so a path is checked with
:func:`~vaultlens.vault.safepath.check_untrusted` (encoded, look-alike and ``~`` tricks on top
of the rules every path obeys), resolved inside the vault with
:func:`~vaultlens.vault.safepath.resolve_note_path`, and then must be a note the vault's own
scan would list (:meth:`VaultRules.classify`): a hidden, ignored, oversized or non-Markdown
file is refused even though it sits inside the vault. A program's text comes out in bounded
slices, so one call never returns a 10 MB note; the page reads a note whole, once
(:func:`note_text`: one read, its text and the hash of those very bytes), bounded by
``index.max_file_mb`` like every note vaultlens reads.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
import unicodedata
from bisect import bisect_right
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from vaultlens.chunking.source import RawNote, read_note
from vaultlens.errors import InvalidInput, NoteNotFound, VaultError
from vaultlens.index.store import StoreReads
from vaultlens.services.serial import AsDict
from vaultlens.vault.links import LinkResolver
from vaultlens.vault.model import Link
from vaultlens.vault.parse import NotText, decode_note
from vaultlens.vault.safepath import check_untrusted, resolve_note_path
from vaultlens.vault.scan import TOO_LARGE, Skipped, VaultFile, VaultRules

DEFAULT_SLICE = 4_000  # code points returned when the caller does not say
MAX_SLICE = 20_000  # code points: about 5k tokens, a bounded bite for an agent's context
DEFAULT_PAGE = 100
MAX_PAGE = 500
IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".bmp": "image/bmp",
}  # not .svg: an SVG can carry script
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
class NoteText(AsDict):
    """A whole note read once: ``text`` (BOM dropped, LF line endings) is decoded from the very
    bytes ``content_hash`` hashes, so a note saved while it is read shows as one version, not two."""

    path: str  # as spelled on disk, vault-relative
    length: int  # code points in ``text``
    content_hash: str  # SHA-256 of the file's bytes (the hash the index stores for it)
    text: str


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


@dataclass(frozen=True, slots=True)
class NoteGraph(AsDict):
    """A note's place among its neighbours: the notes it links to (resolved), the notes that link
    to it, and its link targets that lead nowhere or to several notes."""

    path: str
    outgoing: list[str] = field(default_factory=list)
    backlinks: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)


def note_graph(path: str, links: dict[str, list[Link]], resolver: LinkResolver) -> NoteGraph:
    """``path``'s resolved outgoing links and backlinks, from the index's links as written. Only a
    link whose target names ``path``'s file is resolved for the backlinks (not every link)."""
    outgoing: dict[str, None] = {}
    unresolved: dict[str, None] = {}
    for link in links.get(path, ()):
        found = resolver.resolve(link.target, path)
        if found.path is None:
            unresolved[link.target] = None
        elif found.path != path:
            outgoing[found.path] = None
    stem = path.rpartition("/")[2].casefold().removesuffix(".md")
    backlinks = sorted(
        source
        for source, written in links.items()
        if source != path
        and any(
            link.target.rpartition("/")[2].casefold().removesuffix(".md") == stem
            and resolver.resolve(link.target, source).path == path
            for link in written
        )
    )
    return NoteGraph(path, list(outgoing), backlinks, list(unresolved))


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


def resolve_untrusted(vault_rules: VaultRules, rel: str, also: Collection[str] = ()) -> str:
    """The one rule for a note path from a program or an agent (read a slice, find related notes):
    a vault-relative path to a note the scan lists, as spelled on disk (an NFD spelling of an NFC
    name finds it; another case, a missing extension or a bare name do not). Returns that spelling.
    ``also``: the other kinds of file taken (similar: the PDFs and canvases the index reads)."""
    listed = _listed(vault_rules, rel)
    if listed.kind != "note" and listed.kind not in also:
        what = {"canvas": "a Canvas file", "base": "a Bases file", "pdf": "a PDF"}.get(
            listed.kind, "an attachment"
        )
        raise VaultError(f"Refusing note path {rel!r}: it is {what}, not a Markdown note.")
    return listed.path


def _listed(vault_rules: VaultRules, rel: str) -> VaultFile:
    check_untrusted_arg(rel)
    found = resolve_note_path(vault_rules.root, rel)
    listed = vault_rules.classify(found.rel)
    if isinstance(listed, Skipped) and listed.reason.startswith(TOO_LARGE):
        raise VaultError(
            f"Note {rel!r} is {listed.reason}: vaultlens does not read it, so none of it is shown.",
            hint="Open it in Obsidian, or raise index.max_file_mb to read (and index) it here.",
        )
    if not isinstance(listed, VaultFile):
        why = listed.reason if listed is not None else "the vault's scan does not list it"
        raise VaultError(
            f"Refusing note path {rel!r}: it is not a note vaultlens reads ({why}).",
            hint="Only Markdown notes the index would list can be read; see `vaultlens status`.",
        )
    return listed


def read_image(vault_rules: VaultRules, rel: str, max_bytes: int) -> tuple[bytes, str]:
    """An image a note embeds, by the rules of a note path (inside the vault, listed by the scan),
    and its media type; any other file is refused."""
    types = IMAGE_TYPES
    listed = _listed(vault_rules, rel)
    media = types.get(posixpath.splitext(listed.path)[1].lower())
    if listed.kind != "attachment" or media is None:
        raise VaultError(f"Refusing file {rel!r}: only images ({', '.join(sorted(types))}) are served.")
    return read_note(vault_rules.root, listed.path, max_bytes).raw, media


def note_text(vault_rules: VaultRules, rel: str, max_bytes: int) -> NoteText:
    """Note ``rel`` whole, from one read of its file (at most ``max_bytes``), with that read's hash."""
    raw = read_untrusted(vault_rules, rel, max_bytes)
    try:
        text = decode_note(raw.raw)
    except NotText as exc:
        raise VaultError(f"Note {raw.path!r} is not readable text ({exc}).") from exc
    return NoteText(raw.path, len(text), raw.file_hash, text)


def note_slice(vault_rules: VaultRules, rel: str, offset: int, length: int, max_bytes: int) -> NoteSlice:
    """At most ``length`` code points of note ``rel`` from ``offset``, with its total length and hash."""
    if offset < 0:
        raise InvalidInput(f"offset must be 0 or more (got {offset}).")
    if not 1 <= length <= MAX_SLICE:
        raise InvalidInput(f"length must be between 1 and {MAX_SLICE} (got {length}).")
    whole = note_text(vault_rules, rel, max_bytes)
    if offset > whole.length:
        raise InvalidInput(
            f"offset {offset} is past the end of {whole.path!r} ({whole.length} characters).",
            hint="Start at 0, or at the next_offset a previous slice returned.",
        )
    part = whole.text[offset : offset + length]
    end = offset + len(part)
    return NoteSlice(
        whole.path,
        offset,
        len(part),
        whole.length,
        whole.content_hash,
        part,
        end if end < whole.length else None,
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
    store: StoreReads, vault_rules: VaultRules, folder: str, cursor: str | None, limit: int, match: str = ""
) -> NoteList:
    """Indexed notes under ``folder`` ("" = all), sorted by path, one page after ``cursor``; with
    ``match``, only the notes whose title, an alias or the path match it (:func:`match_rank`),
    best first (one page: a type-ahead asks again as the user types)."""
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
    records = {
        p: r
        for p, r in store.file_records().items()
        if r.status == "indexed" and r.kind == "note" and p.startswith(prefix)
    }
    if match.strip():
        if len(match) > MAX_PATH_CHARS:
            raise InvalidInput(
                f"match is {len(match)} characters long; at most {MAX_PATH_CHARS} are accepted."
            )
        ranked = sorted(
            (rank, len(p), p)
            for p, r in records.items()
            if (rank := match_rank(match, (r.title or "", *r.aliases, p.removesuffix(".md")))) is not None
        )
        found = [p for _, _, p in ranked[:limit]]
        titles = store.titles(found)
        return NoteList(folder, len(ranked), [NoteEntry(p, titles.get(p) or p) for p in found], None)
    paths = sorted(records)
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


def _folded(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def match_rank(query: str, names: Iterable[str]) -> tuple[int, int] | None:
    """How well ``query`` names a note by any of ``names`` (case-insensitive, any script), lower
    is better: the whole name, its start, a word's start, anywhere inside, then its letters in
    order (fuzzy, ranked by how spread out they are); None when no name holds them at all."""
    want = " ".join(_folded(query).split())
    best: tuple[int, int] | None = None
    for name in names:
        have = _folded(name)
        base = have.rpartition("/")[2]
        at = have.find(want)
        if have == want or base == want:
            rank = (0, 0)
        elif base.startswith(want) or have.startswith(want):
            rank = (1, 0)
        elif at >= 0:
            words = any(have[i - 1] in " /-_." for i in _occurrences(have, want) if i > 0)
            rank = (2, 0) if words else (3, at)
        else:
            spread = _spread(have, want.replace(" ", ""))
            if spread is None:
                continue
            rank = (4, spread)
        best = rank if best is None or rank < best else best
    return best


def _occurrences(text: str, part: str) -> Iterable[int]:
    at = text.find(part)
    while at >= 0:
        yield at
        at = text.find(part, at + 1)


def _spread(text: str, letters: str) -> int | None:
    """Characters between the first and last of ``letters`` found in order in ``text``, or None."""
    first = pos = -1
    for char in letters:
        pos = text.find(char, pos + 1)
        if pos < 0:
            return None
        first = pos if first < 0 else first
    return pos - first
