"""The vault as Obsidian's metadata cache sees it: every file, every note's outline, every link resolved.

Read once per audit, with no index and no model: the scan lists the files (ignore rules applied), each note is
read through the note-loading seam and outlined (:mod:`vaultlens.vault.outline`), and each link is resolved
with :class:`~vaultlens.vault.links.LinkResolver`, the resolver review's planner uses, so an audit and a
planned link agree on where a link goes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from vaultlens.chunking.source import NotText, read_note
from vaultlens.errors import VaultError
from vaultlens.vault.links import LinkResolver
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


@dataclass(frozen=True, slots=True)
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


def anchor_key(text: str) -> str:
    """How a heading subpath is compared: Obsidian matches ``[[Note#Step 1: Go]]`` to the heading
    ``Step 1 Go`` (it drops characters a link cannot hold), so only letters and digits count, case-insensitively."""
    folded = unicodedata.normalize("NFC", text).casefold()
    return " ".join(_ANCHOR_NOISE.sub(" ", folded).split())


def _missing_anchor(link: Link, outline: NoteOutline | None) -> str | None:
    """The subpath ``link`` asks for that ``outline`` does not have (None when present or not checkable)."""
    if outline is None:
        return None
    if link.block is not None:
        wanted = link.block.casefold()
        return None if any(b.casefold() == wanted for b in outline.block_ids) else "^" + link.block
    if link.heading is not None:
        have = {anchor_key(h.text) for h in outline.headings}
        parts = [p for p in link.heading.split("#") if p.strip()]
        missing = [p for p in parts if anchor_key(p) not in have]
        return link.heading if missing else None
    return None


def _resolve(
    resolver: LinkResolver, outlines: dict[str, NoteOutline], source: str, link: Link, kind: LinkKindName
) -> LinkRecord:
    raw = _raw(link)
    embed = link.kind == "embed"
    found = resolver.resolve(link.target, source)
    if found.status == "unresolved":
        return LinkRecord(raw, UNRESOLVED, kind, link.line, embed)
    if found.status == "ambiguous":
        return LinkRecord(raw, AMBIGUOUS, kind, link.line, embed, found.candidates)
    path = found.path or source
    anchor = _missing_anchor(link, outlines.get(path)) if path.lower().endswith(".md") else None
    return LinkRecord(raw, path, kind, link.line, embed, (path,), anchor)


def resolve_links(resolver: LinkResolver, outlines: dict[str, NoteOutline]) -> dict[str, list[LinkRecord]]:
    """Every link of every outlined note, resolved: property links first, then the body in document order."""
    out: dict[str, list[LinkRecord]] = {}
    for path, outline in outlines.items():
        records = [_resolve(resolver, outlines, path, p.link, "property") for p in outline.property_links]
        for link in outline.links:
            records.append(_resolve(resolver, outlines, path, link, link.kind))
        out[path] = records
    return out


def _outline(vault: Path, rel: str, max_bytes: int) -> NoteOutline | str:
    try:
        raw = read_note(vault, rel, max_bytes)
        return outline_note(decode_note(raw.raw), rel)
    except NotText as exc:
        return str(exc)
    except VaultError as exc:  # too large, refused path, removed while read
        return exc.message


def read_vault(vault: Path, max_note_bytes: int) -> VaultGraph:
    """Scan ``vault`` and read, outline and resolve every note (notes over ``max_note_bytes`` are listed, not read)."""
    scan = scan_vault(vault, _LIST_ANY_SIZE)
    resolver = LinkResolver(f.path for f in scan.files)
    outlines: dict[str, NoteOutline] = {}
    unread: dict[str, str] = {}
    reports: set[str] = set()
    for f in scan.files:
        if f.kind != "note":
            continue
        result = _outline(vault, f.path, max_note_bytes)
        if isinstance(result, str):
            unread[f.path] = result
        elif REPORT_PROPERTY in result.frontmatter:
            reports.add(f.path)
        else:
            outlines[f.path] = result
    return VaultGraph(
        files=scan.files,
        outlines=outlines,
        links=resolve_links(resolver, outlines),
        unread=unread,
        skipped=len(scan.skipped),
        resolver=resolver,
        reports=reports,
    )
