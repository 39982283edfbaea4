"""A note's place in the link graph, read without the full Markdown parse.

The structure audit needs, for every note of a vault, what Obsidian's metadata cache holds: links and embeds
(body and front-matter properties), tags, aliases, headings and block ids. :func:`parse_note` gives most of it
but spends milliseconds per note in markdown-it, which is too slow for 5,000 notes in seconds; this module
reads the same things with the masks and extractors of :mod:`vaultlens.vault.links` and the front matter of
:mod:`vaultlens.vault.parse`, so the two never disagree about what a link or a tag is.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from vaultlens.vault.links import LocatedLink, extract_links, locate_links, masked_spans
from vaultlens.vault.model import Heading, Link
from vaultlens.vault.parse import note_aliases, note_tags, split_front_matter

__all__ = [
    "NoteOutline",
    "PropertyLink",
    "extract_block_ids",
    "extract_headings",
    "located_links",
    "outline_note",
]

# ATX headings as Obsidian lists them: up to 3 spaces, 1-6 "#", then a space (or nothing); "#tag" is no heading.
# Setext headings ("Title\n===") are not listed: Obsidian vaults rarely use them, and telling one from a
# paragraph followed by a thematic break needs the full parse.
_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+([^\n]*))?$", re.M)
_CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t]+)#+$")
# A block id: "^id" at the end of a line, after a space or alone on its line (letters, digits and dashes);
# the character before the "^" is checked after the match, so the pattern starts with a literal.
_BLOCK_ID_RE = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*$", re.M)


@dataclass(frozen=True, slots=True)
class PropertyLink:
    """A wikilink written in a front-matter property (``up: "[[Index]]"``); the line is the note's."""

    key: str
    link: Link


@dataclass(frozen=True, slots=True)
class NoteOutline:
    path: str
    properties: tuple[str, ...]  # front-matter keys
    frontmatter_error: str | None
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    headings: tuple[Heading, ...]
    block_ids: tuple[str, ...]
    links: tuple[Link, ...]  # body links and embeds, in document order
    property_links: tuple[PropertyLink, ...]
    words: int  # whitespace-separated words of the body (front matter excluded)


def _outside(masked: list[tuple[int, int]]) -> Callable[[int], bool]:
    starts = [s for s, _ in masked]

    def visible(offset: int) -> bool:
        i = bisect_right(starts, offset) - 1
        return i < 0 or offset >= masked[i][1]

    return visible


def extract_headings(body: str, masked: list[tuple[int, int]], line_offset: int = 0) -> list[Heading]:
    """ATX headings outside code, math and comments, with their raw text (closing ``#``s removed)."""
    visible = _outside(masked)
    found: list[Heading] = []
    line = line_offset
    prev = 0
    for m in _HEADING_RE.finditer(body):
        if not visible(m.start(1)):
            continue
        line += body.count("\n", prev, m.start())
        prev = m.start()
        text = _CLOSING_HASHES_RE.sub("", (m.group(2) or "").strip()).strip()
        found.append(Heading(len(m.group(1)), text, line))
    return found


def extract_block_ids(body: str, masked: list[tuple[int, int]]) -> list[str]:
    """Block ids (``^id``) outside code, math and comments, in document order."""
    visible = _outside(masked)
    return [
        m.group(1)
        for m in _BLOCK_ID_RE.finditer(body)
        if (m.start() == 0 or body[m.start() - 1] in " \t\n") and visible(m.start())
    ]


def _strings(value: Any) -> Iterator[str]:
    """Every string in a property value, nested lists and mappings included."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))


def _property_links(frontmatter: dict[str, Any], text: str, body_start: int) -> list[PropertyLink]:
    """Wikilinks and embeds inside string property values, as Obsidian links them.

    Only strings count: an unquoted ``up: [[Index]]`` is a YAML list inside a list, which Obsidian does not
    treat as a link either (its help says links in properties must be quoted). Markdown links in properties
    are not links in Obsidian.
    """
    found: list[PropertyLink] = []
    for key, value in frontmatter.items():
        for s in _strings(value):
            if "[[" not in s:
                continue
            where = text.find(s, 0, body_start)
            line = text.count("\n", 0, where) if where >= 0 else 0
            for link in extract_links(s, line_offset=line):
                if link.kind != "markdown":
                    found.append(PropertyLink(key, link))
    return found


def outline_note(text: str, path: str) -> NoteOutline:
    """Read decoded note text (see :func:`~vaultlens.vault.parse.decode_note`) into its outline."""
    frontmatter, problem, body_start, body_line = split_front_matter(text)
    body = text[body_start:]
    masked = masked_spans(body)
    return NoteOutline(
        path=path,
        properties=tuple(frontmatter),
        frontmatter_error=problem,
        aliases=note_aliases(frontmatter),
        tags=note_tags(frontmatter, body, masked),
        headings=tuple(extract_headings(body, masked, body_line)),
        block_ids=tuple(extract_block_ids(body, masked)),
        links=tuple(extract_links(body, masked, line_offset=body_line)),
        property_links=tuple(_property_links(frontmatter, text, body_start)),
        words=len(body.split()),
    )


def located_links(text: str, path: str) -> list[LocatedLink]:
    """Every link of a note with its offsets into the whole text, for a rename: the property links of
    the front matter (wikilinks inside string values only, as Obsidian reads them), then the body's.
    In a front matter that is not valid YAML, every wikilink counts: a template's ``created: {{date}}``
    is such a one, and its ``categories: "[[People]]"`` becomes a link of every note made from it."""
    _, problem, body_start, body_line = split_front_matter(text)
    body = text[body_start:]
    found = [
        LocatedLink(loc.start + body_start, loc.end + body_start, loc.target_start + body_start,
                    loc.target_end + body_start, loc.link)
        for loc in locate_links(body, masked_spans(body), body_line)
    ]  # fmt: skip
    if body_start:
        props = {
            (p.link.target, p.link.heading, p.link.block) for p in outline_note(text, path).property_links
        }
        head = [
            loc
            for loc in locate_links(text[:body_start], [])
            if loc.link.kind != "markdown"
            and (problem is not None or (loc.link.target, loc.link.heading, loc.link.block) in props)
        ]
        found = head + found
    return found
