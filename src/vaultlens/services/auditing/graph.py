"""The vault as Obsidian's metadata cache sees it: every file, every note's outline, every link resolved.

Read once per audit, with no index and no model: the scan lists the files (ignore rules applied), each note is
read through the note-loading seam and outlined (:mod:`vaultlens.vault.outline`), and each link is resolved
with :class:`~vaultlens.vault.links.LinkResolver`, the resolver review's planner uses, so an audit and a
planned link agree on where a link goes.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

from vaultlens.chunking.source import NoteReader, NotText
from vaultlens.errors import FileSystemError, VaultError
from vaultlens.services.auditing import outline_cache
from vaultlens.vault.links import LinkResolver, Resolution
from vaultlens.vault.model import Link
from vaultlens.vault.outline import NoteOutline, outline_note
from vaultlens.vault.parse import decode_note
from vaultlens.vault.scan import VaultFile, scan_vault

__all__ = ["AMBIGUOUS", "REPORT_PROPERTY", "UNRESOLVED", "LinkRecord", "VaultGraph", "read_vault"]

UNRESOLVED = "UNRESOLVED"
AMBIGUOUS = "AMBIGUOUS"
# Front matter that marks a note vaultlens generated (an audit dashboard saved in the vault). Such a note links to
# every orphan and broken target it lists, so it is left out of the next audit instead of hiding what it reports.
REPORT_PROPERTY = "vaultlens-report"
LinkKindName = Literal["wiki", "markdown", "embed", "property"]
# The scan lists every file whatever its size (Obsidian does); only notes up to max_bytes are read.
_LIST_ANY_SIZE = 1 << 62


# read-only by convention; not frozen, as a frozen dataclass takes 4x longer to build and there is one per link
@dataclass(slots=True)
class LinkRecord:
    """One link of one note, resolved.

    ``raw`` is the link path as written with its ``#heading`` / ``#^block`` subpath and without display text
    (what Obsidian resolves; URL escapes of Markdown links decoded). ``target`` is the vault path it resolves
    to, :data:`UNRESOLVED` or :data:`AMBIGUOUS` (several files match; ``candidates`` lists them).
    ``missing_anchor`` is the heading or ``^block`` that the target note lacks.
    """

    raw: str
    target: str
    kind: LinkKindName  # "property": written in front matter
    line: int  # 0-based, like the vault model (as_dict gives it 1-based)
    embed: bool = False  # ``![[x]]`` or ``![alt](x)``, in the body or in a property
    candidates: tuple[str, ...] = ()
    missing_anchor: str | None = None

    def as_dict(self) -> dict[str, object]:
        item: dict[str, object] = {
            "raw": self.raw,
            "target": self.target,
            "kind": self.kind,
            "line": self.line + 1,  # 1-based, as editors count
        }
        if self.candidates and self.target == AMBIGUOUS:
            item["candidates"] = list(self.candidates)
        if self.missing_anchor is not None:
            item["missing_anchor"] = self.missing_anchor
        return item


@dataclass
class VaultGraph:
    """Files, outlines and resolved links of one vault, read at one moment."""

    files: list[VaultFile]
    outlines: dict[str, NoteOutline]  # every note that could be read
    links: dict[str, list[LinkRecord]]  # per note (read notes only), document order, property links first
    unread: dict[str, str] = field(default_factory=dict)  # note path -> why its text was not read
    skipped: int = 0  # files the scan left out (ignore rules, dot-folders, odd names)
    resolver: LinkResolver = field(default_factory=lambda: LinkResolver(()))
    reports: set[str] = field(default_factory=set)  # notes marked with REPORT_PROPERTY, left out

    @property
    def notes(self) -> list[str]:
        return [f.path for f in self.files if f.kind == "note" and f.path not in self.reports]


def _raw(link: Link) -> str:
    if link.block is not None:
        return f"{link.target}#^{link.block}"
    if link.heading is not None:
        return f"{link.target}#{link.heading}"
    return link.target


_ANCHOR_NOISE = re.compile(r"[\W_]+")


@lru_cache(maxsize=1 << 16)  # a vault repeats the same few thousand headings in its links
def anchor_key(text: str) -> str:
    """How a heading subpath is compared: Obsidian matches ``[[Note#Step 1: Go]]`` to the heading
    ``Step 1 Go`` (it drops characters a link cannot hold), so only letters and digits count, case-insensitively."""
    folded = unicodedata.normalize("NFC", text).casefold()
    return " ".join(_ANCHOR_NOISE.sub(" ", folded).split())


class _Resolver:
    """Resolves every link of the vault once per distinct question.

    Thousands of links name the same few hundred targets: a bare name resolves the same from every note, and a
    path with ``/`` the same from every note of one folder, so each answer is memoised; the heading keys and
    block ids of each target note are computed once, not once per link.
    """

    def __init__(self, resolver: LinkResolver, outlines: dict[str, NoteOutline]) -> None:
        self._resolver = resolver
        self._outlines = outlines
        self._memo: dict[tuple[str, str], Resolution] = {}
        self._headings: dict[str, set[str]] = {}
        self._blocks: dict[str, set[str]] = {}

    def _resolution(self, target: str, source: str) -> Resolution:
        if not target.strip():
            return self._resolver.resolve(target, source)  # a same-note link: the source itself
        where = posixpath.dirname(source) if "/" in target else ""
        found = self._memo.get((target, where))
        if found is None:
            found = self._memo[(target, where)] = self._resolver.resolve(target, source)
        return found

    def _missing_anchor(self, link: Link, path: str) -> str | None:
        """The subpath ``link`` asks for that note ``path`` lacks (None when present or not checkable)."""
        outline = self._outlines.get(path)
        if outline is None:
            return None
        if link.block is not None:
            blocks = self._blocks.get(path)
            if blocks is None:
                blocks = self._blocks[path] = {b.casefold() for b in outline.block_ids}
            return None if link.block.casefold() in blocks else "^" + link.block
        if link.heading is not None:
            have = self._headings.get(path)
            if have is None:
                have = self._headings[path] = {anchor_key(h.text) for h in outline.headings}
            parts = [p for p in link.heading.split("#") if p.strip()]
            return link.heading if any(anchor_key(p) not in have for p in parts) else None
        return None

    def record(self, source: str, link: Link, kind: LinkKindName) -> LinkRecord:
        raw = _raw(link)
        embed = link.kind == "embed"
        found = self._resolution(link.target, source)
        if found.status == "unresolved":
            return LinkRecord(raw, UNRESOLVED, kind, link.line, embed)
        if found.status == "ambiguous":
            return LinkRecord(raw, AMBIGUOUS, kind, link.line, embed, found.candidates)
        path = found.path or source
        anchor = self._missing_anchor(link, path) if path[-3:].lower() == ".md" else None
        return LinkRecord(raw, path, kind, link.line, embed, (path,), anchor)


def resolve_links(resolver: LinkResolver, outlines: dict[str, NoteOutline]) -> dict[str, list[LinkRecord]]:
    """Every link of every outlined note, resolved: property links first, then the body in document order."""
    links = _Resolver(resolver, outlines)
    out: dict[str, list[LinkRecord]] = {}
    for path, outline in outlines.items():
        records = [links.record(path, p.link, "property") for p in outline.property_links]
        records += [links.record(path, link, link.kind) for link in outline.links]
        out[path] = records
    return out


def _outline(reader: NoteReader, rel: str) -> NoteOutline | str:
    try:
        return outline_note(decode_note(reader.read(rel).raw), rel)
    except NotText as exc:
        return str(exc)
    except VaultError as exc:  # too large, refused path, removed while read
        return exc.message
    except FileSystemError as exc:  # the OS refused the read (permissions, I/O): listed, as `index` does
        why = exc.__cause__.strerror if isinstance(exc.__cause__, OSError) else None
        return f"cannot read: {why}" if why else exc.message


def read_vault(vault: Path, max_note_bytes: int, cache: Path | None = None) -> VaultGraph:
    """Scan ``vault`` and read, outline and resolve every note (notes over ``max_note_bytes`` are listed, not
    read). With ``cache``, outlines of notes whose size and mtime are unchanged come from that file, which is
    then rewritten for the next audit."""
    scan = scan_vault(vault, _LIST_ANY_SIZE)
    resolver = LinkResolver(f.path for f in scan.files)
    reader = NoteReader(vault, max_note_bytes)
    before = outline_cache.load(cache) if cache is not None else {}
    after: outline_cache.Cached = {}
    changed = False
    outlines: dict[str, NoteOutline] = {}
    unread: dict[str, str] = {}
    reports: set[str] = set()
    for f in scan.files:
        if f.kind != "note":
            continue
        hit = before.get(f.path)
        if hit is not None and hit[0] == f.size and hit[1] == f.mtime_ns and f.size <= max_note_bytes:
            result: NoteOutline | str = hit[2]
        else:
            result = _outline(reader, f.path)
            changed = True
        if isinstance(result, str):
            unread[f.path] = result
            continue
        after[f.path] = (f.size, f.mtime_ns, result)
        if REPORT_PROPERTY in result.properties:
            reports.add(f.path)
        else:
            outlines[f.path] = result
    if cache is not None and (changed or after.keys() != before.keys()):
        outline_cache.save(cache, after)
    return VaultGraph(
        files=scan.files,
        outlines=outlines,
        links=resolve_links(resolver, outlines),
        unread=unread,
        skipped=len(scan.skipped),
        resolver=resolver,
        reports=reports,
    )
