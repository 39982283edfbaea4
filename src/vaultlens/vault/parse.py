"""Parse one note: front matter, top-level blocks with exact lines and offsets, headings, links, tags.

markdown-it-py gives block line maps; offsets are derived from them so the chunker can cut
the original text at block boundaries and never inside a code block or a table.
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from vaultlens.vault.links import extract_links, extract_tags, masked_spans, normalize_tag
from vaultlens.vault.model import Block, BlockKind, Heading, ParsedNote

_OPEN_KINDS: dict[str, BlockKind] = {
    "heading_open": "heading",
    "paragraph_open": "paragraph",
    "table_open": "table",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "blockquote_open": "quote",
}
_LEAF_KINDS: dict[str, BlockKind] = {"fence": "code", "code_block": "code", "html_block": "html", "hr": "hr"}
# Obsidian syntax CommonMark leaves as text: wikilinks/embeds and ==highlight== / ~~strike~~ pairs
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+)\]\]")
_PAIRED_MARK = re.compile(r"(==|~~)(?=\S)(.*?\S)\1")
# characters of code spans and escapes are swapped for Unicode noncharacters while the markup
# regexes run, so a `[[x]]` in code or an escaped \[[x]] is never read as a wikilink
_PROTECT = str.maketrans({c: chr(0xFDD0 + i) for i, c in enumerate("[]|=~!")})
_RESTORE = str.maketrans({chr(0xFDD0 + i): c for i, c in enumerate("[]|=~!")})


class NotText(ValueError):
    """The bytes are not a Markdown note vaultlens can read (binary, not UTF-8)."""


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    # without text_join, escapes (``\[``) stay separate ``text_special`` tokens, so heading text can
    # tell a written ``[[`` from an escaped one; block parsing (maps, kinds) is unaffected
    return MarkdownIt("commonmark").enable("table").use(front_matter_plugin).disable("text_join")


def decode_note(data: bytes) -> str:
    """Bytes -> text with LF line endings and no BOM, or :class:`NotText` with a specific reason.

    Offsets into this text map back to the bytes with
    :meth:`vaultlens.chunking.source.NoteSource.byte_offset` (CRLF and a BOM are accounted for).
    """
    if b"\x00" in data[:8192]:
        raise NotText("binary content (NUL bytes), not a text note")
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotText(f"not valid UTF-8 (first bad byte at offset {bom + exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def line_starts(text: str) -> list[int]:
    """Offset of the first character of every line."""
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def _as_strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _heading_text(inline: Token) -> str:
    """A heading as Obsidian shows it, from markdown-it's inline tokens.

    Link text without the URL, code spans without backticks, emphasis and inline HTML dropped,
    an image's alt text; ``[[target|display]]`` gives ``display`` and ``[[target]]`` gives
    ``target`` (wikilinks are not CommonMark, so they arrive as text); ``==x==`` and ``~~x~~``
    give ``x``. Code spans and escaped characters are literal: ``\\[[x]]`` stays ``[[x]]``.
    """
    parts: list[str] = []

    def walk(children: list[Token]) -> None:
        for child in children:
            if child.type == "text":
                parts.append(child.content)
            elif child.type in ("code_inline", "text_special"):
                parts.append(child.content.translate(_PROTECT))
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
            elif child.type == "image":
                walk(child.children or [])
            # link_open/close, em/strong open/close, html_inline: markup, dropped

    walk(inline.children or [])
    text = _WIKILINK.sub(_wikilink_display, "".join(parts))
    while (unmarked := _PAIRED_MARK.sub(r"\2", text)) != text:  # ~~==x==~~ -> x
        text = unmarked
    return text.translate(_RESTORE).strip()


def _wikilink_display(m: re.Match[str]) -> str:
    target, _, display = m.group(1).partition("|")
    return display.strip() or target.strip()


def parse_note(text: str, path: str) -> ParsedNote:
    """Parse decoded note text (see :func:`decode_note`); ``path`` gives the fallback title."""
    tokens = _md().parse(text)
    starts = line_starts(text)

    def offset(line: int) -> int:
        return starts[line] if line < len(starts) else len(text)

    frontmatter: dict[str, Any] = {}
    fm_error: str | None = None
    body_line = 0
    blocks: list[Block] = []
    headings: list[Heading] = []
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.map is None:
            continue
        start_line, end_line = tok.map
        if tok.type == "front_matter":
            body_line = end_line
            try:
                loaded = yaml.safe_load(tok.content) if tok.content.strip() else {}
                if isinstance(loaded, dict):
                    frontmatter = {str(k): v for k, v in loaded.items()}
                else:
                    fm_error = "front matter is not a mapping of keys to values"
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                # the mark counts lines inside the YAML; the note's line adds the opening fence
                where = f" at line {start_line + mark.line + 2}" if mark is not None else ""
                fm_error = f"malformed YAML front matter{where}"
            continue
        kind = _OPEN_KINDS.get(tok.type) or _LEAF_KINDS.get(tok.type)
        if kind is None:
            continue
        level, heading = 0, ""
        if kind == "heading":
            level = int(tok.tag[1:])
            heading = _heading_text(tokens[i + 1])
            headings.append(Heading(level, heading, start_line))
        blocks.append(Block(kind, start_line, end_line, offset(start_line), offset(end_line), level, heading))

    body_start = offset(body_line)
    body = text[body_start:]
    masked = masked_spans(body)
    tags = [normalize_tag(t) for key in ("tags", "tag") for t in _as_strings(frontmatter.get(key))]
    seen = {t.casefold() for t in tags}
    for tag in extract_tags(body, masked):
        if tag.casefold() not in seen:
            seen.add(tag.casefold())
            tags.append(tag)
    aliases = [a for key in ("aliases", "alias") for a in _as_strings(frontmatter.get(key))]
    title = frontmatter.get("title")
    return ParsedNote(
        text=text,
        frontmatter=frontmatter,
        frontmatter_error=fm_error,
        body_start=body_start,
        body_start_line=body_line,
        title=str(title).strip() if isinstance(title, str) and title.strip() else PurePosixPath(path).stem,
        aliases=tuple(aliases),
        tags=tuple(t for t in tags if t),
        headings=tuple(headings),
        blocks=tuple(blocks),
        links=tuple(extract_links(body, masked, line_offset=body_line)),
    )
