"""From an accepted recommendation to one exact operation, with parameters the user can change.

- ``add_link``: a line ``See also: [[target]]`` inserted as its own paragraph after a chosen
  block of the linking note. The link text is the shortest one that Obsidian resolves to the
  intended file from that note (path-qualified when names collide), checked with the vault's own
  resolver before anything is planned. A note that already links the target (in any form the
  resolver takes to that file: a wikilink with an alias or a heading, an embed, a Markdown link, a
  path, a front-matter property) gets nothing: the same link twice is clutter, not a relation.
- ``consider_merge``: one chosen block of one note copied after a chosen block of the other;
  the note it comes from stays unchanged.
- ``keep_separate`` and ``manual_review``: no operation.

Insertions go between top-level blocks only, never inside code, a table, HTML or front
matter: a place after such a block is refused rather than guessed. The note's bytes outside
the insertion are kept exactly (BOM, CRLF, a missing final newline); the inserted lines use
the note's own line ending.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vaultlens.chunking.source import NoteSource
from vaultlens.errors import PlanRefused
from vaultlens.services.changing.review.catalog import Catalog, Fragment, Side, current_hashes
from vaultlens.vault.links import LinkResolver
from vaultlens.vault.model import Link, block_phrase
from vaultlens.vault.outline import outline_note
from vaultlens.vault.scan import scan_vault

__all__ = ["INSERTABLE_AFTER", "PlannedEdit", "insertion", "plan_add_link", "plan_merge"]

INSERTABLE_AFTER = frozenset({"paragraph", "list", "quote", "heading"})


@dataclass(frozen=True, slots=True)
class PlannedEdit:
    """An insertion into one note: the exact bytes before and after, and where (a byte offset)."""

    path: str
    before: bytes
    after: bytes
    offset: int
    inserted: bytes
    summary: str


def _current(catalog: Catalog, side: Side, vault: Path) -> NoteSource:
    source = catalog.sources[side]
    if current_hashes(vault, catalog)[side] != source.file_hash:
        raise PlanRefused(
            f"{source.path} changed after the review was prepared (or cannot be read); nothing was planned.",
            hint="Review the pair again.",
            path=source.path,
        )
    return source


def _anchor(catalog: Catalog, side: Side, after: str | None) -> Fragment | None:
    """The block to insert after: the chosen fragment of ``side``, or the last one (None: empty note)."""
    own = catalog.side(side)
    if after is None:
        if not own and catalog.cut(side):  # its text goes on past what the model saw: no known last block
            raise PlanRefused(
                f"No whole block of {catalog.paths[side]} fits in the {catalog.max_chars:,} characters "
                "the review sent; nothing was planned.",
                path=catalog.paths[side],
            )
        return own[-1] if own else None
    found = catalog.get(after)
    if found is None:
        raise PlanRefused(f"Block {short_id(after)} is not a block of this review; nothing was planned.")
    if found.side != side:
        raise PlanRefused(
            f"The block chosen to insert after (lines {found.start_line}-{found.end_line}) is in "
            f"{catalog.paths[found.side]}, but the text goes into {catalog.paths[side]}; nothing was planned.",
            hint=f"Choose a block of {catalog.paths[side]}, or change which note gets it.",
            path=catalog.paths[side],
        )
    return found


def short_id(fragment_id: str) -> str:
    """``<nonce>:A:3`` as a user may type it (``A:3``): the nonce is new for every review."""
    return ":".join(fragment_id.split(":")[-2:])


def insertion(source: NoteSource, anchor: Fragment | None, lines: list[str]) -> tuple[int, bytes]:
    """Where to insert ``lines`` as a paragraph of their own after ``anchor``, and their exact bytes."""
    if anchor is not None and anchor.kind not in INSERTABLE_AFTER:
        raise PlanRefused(
            f"Refusing to insert after {block_phrase(anchor.kind)} (lines {anchor.start_line}-{anchor.end_line}); "
            "choose a paragraph, list, quote or heading.",
            path=source.path,
        )
    if b"\r" in source.raw and b"\n" not in source.raw:
        raise PlanRefused(
            f"{source.path} ends its lines with CR alone (classic Mac OS); rather than guess where its "
            "paragraphs end, nothing is planned.",
            hint="Convert the note to LF or CRLF line endings, then review it again.",
            path=source.path,
        )
    eol = b"\r\n" if b"\r\n" in source.raw else b"\n"
    body = eol.join(line.encode("utf-8") for line in lines)
    text = source.text
    if anchor is None:  # an empty note: the paragraph is its text
        return source.byte_offset(len(text)), body + eol
    # after the anchor's last non-blank line (a block's line map may take in blank lines after it)
    content_end = anchor.start + len(text[anchor.start : anchor.end].rstrip())
    newline = text.find("\n", content_end)
    if newline == -1:  # the end of a file without a final newline stays without one
        return source.byte_offset(len(text)), eol + eol + body
    at = newline + 1
    follows = text[at : at + 1]
    return source.byte_offset(at), eol + body + eol + (eol if follows not in ("", "\n") else b"")


def _edit(source: NoteSource, anchor: Fragment | None, lines: list[str], summary: str) -> PlannedEdit:
    offset, inserted = insertion(source, anchor, lines)
    after = source.raw[:offset] + inserted + source.raw[offset:]
    return PlannedEdit(source.path, source.raw, after, offset, inserted, summary)


def _existing_link(source: NoteSource, target: str, resolver: LinkResolver) -> Link | None:
    """The first link of ``source`` (body or property) that Obsidian resolves to ``target``, if any."""
    outline = outline_note(source.text, source.path)
    links = sorted([*outline.links, *(p.link for p in outline.property_links)], key=lambda link: link.line)
    for link in links:
        if not link.target:  # [[#heading]]: a link into the note itself
            continue
        found = resolver.resolve(link.target, source.path)
        if found.status == "resolved" and found.path == target:
            return link
    return None


def plan_add_link(
    vault: Path,
    catalog: Catalog,
    source_side: Side,
    after: str | None = None,
    label: str = "See also",
    max_file_bytes: int = 50_000_000,
) -> PlannedEdit:
    """Link from ``source_side``'s note to the other one, after block ``after`` (default: the last)."""
    target_side: Side = "B" if source_side == "A" else "A"
    source = _current(catalog, source_side, vault)
    target = catalog.paths[target_side]
    resolver = LinkResolver(f.path for f in scan_vault(vault, max_file_bytes).files)
    try:
        linktext = resolver.shortest_linktext(target)
    except KeyError:
        raise PlanRefused(f"{target} is not a file of the vault any more.", path=target) from None
    found = resolver.resolve(linktext, source.path)
    if found.status != "resolved" or found.path != target:
        raise PlanRefused(f"No link text from {source.path} resolves to {target} alone.", path=source.path)
    present = _existing_link(source, target, resolver)
    if present is not None:
        raise PlanRefused(
            f"{source.path} already links to {target} (line {present.line + 1}); nothing was planned.",
            path=source.path,
        )
    line = f"{label}: [[{linktext}]]" if label else f"[[{linktext}]]"
    return _edit(source, _anchor(catalog, source_side, after), [line], f"link {source.path} → {target}")


def plan_merge(vault: Path, catalog: Catalog, fragment: str, after: str | None = None) -> PlannedEdit:
    """Copy block ``fragment`` into the other note after block ``after`` (default: its last block)."""
    chosen = catalog.get(fragment)
    if chosen is None:
        raise PlanRefused(f"Block {short_id(fragment)} is not a block of this review; nothing was planned.")
    into: Side = "B" if chosen.side == "A" else "A"
    _current(catalog, chosen.side, vault)
    destination = _current(catalog, into, vault)
    return _edit(
        destination,
        _anchor(catalog, into, after),
        chosen.text.split("\n"),
        f"copy lines {chosen.start_line}-{chosen.end_line} of {catalog.paths[chosen.side]} into {destination.path}",
    )
