"""Outlines of unchanged notes, kept between structure audits under VAULTLENS_HOME (never in the vault).

Reading and outlining is most of an audit's time (about 0.8 ms a note); a note whose size and modification time
(nanoseconds) are what they were last time is taken from here instead, the first tier the indexer uses too.
JSON, not pickle: the file is data and loading it runs no code. A cache that cannot be read or written (a
read-only data folder, a version from other code) is ignored: the audit then reads every note.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from vaultlens.fsutil import atomic_write
from vaultlens.vault.model import Heading, Link
from vaultlens.vault.outline import NoteOutline, PropertyLink

__all__ = ["Cached", "load", "save"]

# bump when NoteOutline or what outline_note finds changes, so no audit uses outlines made by other code
VERSION = 1
Cached = dict[str, tuple[int, int, NoteOutline]]  # path -> (size, mtime_ns, outline)


def _link(item: list[Any]) -> Link:
    kind, target, line, display, heading, block = item
    return Link(kind, target, line, display, heading, block)


def _link_row(link: Link) -> list[Any]:
    return [link.kind, link.target, link.line, link.display, link.heading, link.block]


def _row(size: int, mtime_ns: int, o: NoteOutline) -> list[Any]:
    return [
        size,
        mtime_ns,
        list(o.properties),
        o.frontmatter_error,
        list(o.aliases),
        list(o.tags),
        [[h.level, h.text, h.line] for h in o.headings],
        list(o.block_ids),
        [_link_row(link) for link in o.links],
        [[p.key, _link_row(p.link)] for p in o.property_links],
        o.words,
    ]


def _outline(path: str, row: list[Any]) -> tuple[int, int, NoteOutline]:
    size, mtime_ns, properties, problem, aliases, tags, headings, blocks, links, props, words = row
    return (
        size,
        mtime_ns,
        NoteOutline(
            path=path,
            properties=tuple(properties),
            frontmatter_error=problem,
            aliases=tuple(aliases),
            tags=tuple(tags),
            headings=tuple(Heading(level, text, line) for level, text, line in headings),
            block_ids=tuple(blocks),
            links=tuple(_link(item) for item in links),
            property_links=tuple(PropertyLink(key, _link(item)) for key, item in props),
            words=words,
        ),
    )


def load(file: Path) -> Cached:
    """The cached outlines, or {} when there is no usable cache."""
    try:
        data = json.loads(file.read_bytes())
        if data.get("version") != VERSION:
            return {}
        return {path: _outline(path, row) for path, row in data["notes"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def save(file: Path, cached: Cached) -> None:
    """Replace the cache (atomically, not fsynced: a cache lost to a power cut is only rebuilt)."""
    notes = {path: _row(size, mtime_ns, o) for path, (size, mtime_ns, o) in cached.items()}
    data = json.dumps({"version": VERSION, "notes": notes}, ensure_ascii=False, separators=(",", ":"))
    with contextlib.suppress(OSError):  # a read-only data folder: the next audit reads every note again
        atomic_write(file, data, durable=False)
