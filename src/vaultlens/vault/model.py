"""Value types of the vault layer: what a note is made of, with exact source positions.

Lines are 0-based and end-exclusive (``start_line <= line < end_line``), like markdown-it's
``token.map``; offsets are code-point offsets into the note's decoded text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["heading", "paragraph", "code", "table", "list", "quote", "html", "hr", "other"]
LinkKind = Literal["wiki", "embed", "markdown"]
_BLOCK_PHRASES: dict[str, str] = {
    "html": "an HTML block",
    "hr": "a horizontal rule",
    "other": "an unrecognised block",
}


def block_phrase(kind: BlockKind) -> str:
    """A block kind as a message names it, article included ("a code block", "an HTML block")."""
    return _BLOCK_PHRASES.get(kind, f"a {kind} block")


@dataclass(frozen=True, slots=True)
class Block:
    """One top-level Markdown block (a paragraph, a fenced code block, a table...)."""

    kind: BlockKind
    start_line: int
    end_line: int
    start: int
    end: int
    level: int = 0  # heading level for headings, else 0
    text: str = ""  # heading text for headings (inline markup stripped), else ""


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Link:
    """A link as written: ``[[target#heading|display]]``, ``![[embed]]`` or ``[display](target)``."""

    kind: LinkKind
    target: str  # note part only, without #heading / #^block; "" for a same-note link
    line: int
    display: str | None = None
    heading: str | None = None
    block: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedNote:
    """Everything the index needs from one note's text."""

    text: str
    frontmatter: dict[str, Any]
    frontmatter_error: str | None
    body_start: int  # offset of the first character after the front matter
    body_start_line: int
    title: str
    aliases: tuple[str, ...]
    tags: tuple[str, ...]
    headings: tuple[Heading, ...]
    blocks: tuple[Block, ...]
    links: tuple[Link, ...] = field(default=())
