"""Parse one note: front matter, top-level blocks with exact lines and offsets, headings, links, tags.

markdown-it-py gives block line maps; offsets are derived from them so the chunker can cut
the original text at block boundaries and never inside a code block or a table.
"""

from __future__ import annotations

import codecs
import re
from functools import lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import yaml

from vaultlens.vault.links import extract_links, extract_tags, masked_spans, normalize_tag
from vaultlens.vault.model import Block, BlockKind, Heading, ParsedNote

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

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
    # imported on the first parse: commands that never parse a note (status, --help) skip markdown-it
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    # without text_join, escapes (``\[``) stay separate ``text_special`` tokens, so heading text can
    # tell a written ``[[`` from an escaped one; block parsing (maps, kinds) is unaffected.
    # Without the core "inline" rule a parse stops at blocks: only headings need their inline tokens
    # (see _heading), and skipping every paragraph's inline parse is a third of the parse's time
    return MarkdownIt("commonmark").enable("table").use(front_matter_plugin).disable(["text_join", "inline"])


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
    if isinstance(value, list | tuple):  # nested lists and mappings are not tags or aliases
        return [str(v).strip() for v in value if not isinstance(v, list | dict | None) and str(v).strip()]
    if isinstance(value, dict):
        return []
    return [str(value)]


def _plain(md: MarkdownIt, content: str) -> bool:
    """No character of ``content`` stops markdown-it's inline ``text`` rule, so its inline parse is one
    text token holding ``content`` (most headings: the parse is skipped for them)."""
    return md.inline.terminator_re.search(content) is None


def _heading(md: MarkdownIt, token: Token, env: dict[str, Any]) -> str:
    """The text of heading ``token`` (an inline token, not parsed yet: see :func:`_md`); ``env`` holds
    the note's link reference definitions, so ``[x]`` in a heading is a link exactly when it is one."""
    if _plain(md, token.content):
        return _shown(token.content)
    token.children = []
    md.inline.parse(token.content, md, env, token.children)
    return _heading_text(token)


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
    return _shown("".join(parts))


def _shown(text: str) -> str:
    """Heading text from its inline text: wikilinks as their display, marks dropped, protected characters back."""
    text = _WIKILINK.sub(_wikilink_display, text)
    while (unmarked := _PAIRED_MARK.sub(r"\2", text)) != text:  # ~~==x==~~ -> x
        text = unmarked
    return text.translate(_RESTORE).strip()


def _wikilink_display(m: re.Match[str]) -> str:
    target, _, display = m.group(1).partition("|")
    return display.strip() or target.strip()


# Bounds on what front matter may be (issue 9): YAML aliases can make 300 bytes stand for
# hundreds of millions of values (an "alias bomb"), and deep nesting exhausts the recursion of
# whatever walks the values later. Front matter beyond them is reported and the note is indexed
# as plain text, like malformed YAML.
MAX_FRONT_MATTER_BYTES = 64 * 1024  # of YAML text, UTF-8
MAX_ALIAS_VALUES = 10_000  # values that aliases may add to the document once expanded
MAX_FRONT_MATTER_DEPTH = 50  # nesting levels of lists and mappings, aliases expanded


_TOO_DEEP = f"front matter too complex: nested more than {MAX_FRONT_MATTER_DEPTH} levels deep"


class FrontMatterTooComplex(yaml.YAMLError):
    """Front matter beyond the bounds above (raised before any value is built); the message is
    the whole reason, e.g. ``front matter too complex: aliases expand to more than 10,000 values``."""


class _BadValue(yaml.YAMLError):
    """A value YAML accepts but Python cannot build (``2024-02-30``)."""


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses documents too deep to compose or too big once expanded.

    Composing stops at :data:`MAX_FRONT_MATTER_DEPTH` levels (the composer recurses); the node
    graph is then measured with every alias expanded (:func:`_check_expansion`), which costs one
    visit per distinct node, before a single Python value is constructed.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_FRONT_MATTER_DEPTH:
                raise FrontMatterTooComplex(_TOO_DEEP)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_expansion(root: yaml.Node) -> None:
    """Raise :class:`FrontMatterTooComplex` when ``root``, aliases expanded, has more than
    :data:`MAX_ALIAS_VALUES` values beyond its distinct ones, is nested deeper than
    :data:`MAX_FRONT_MATTER_DEPTH`, or contains itself (a recursive alias).

    Iterative and memoised per node: linear in the distinct nodes whatever they expand to.
    """
    size: dict[int, int] = {}  # id(node) -> values once expanded, for finished nodes
    depth: dict[int, int] = {}
    active: set[int] = set()  # nodes on the current path: meeting one again is a cycle
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            active.discard(key)
            if depth[key] > MAX_FRONT_MATTER_DEPTH:
                raise FrontMatterTooComplex(_TOO_DEEP)
            # every node below this one is finished, so len(size) bounds its distinct nodes
            if size[key] - len(size) > MAX_ALIAS_VALUES:
                raise FrontMatterTooComplex(
                    f"front matter too complex: aliases expand to more than {MAX_ALIAS_VALUES:,} values"
                )
            continue
        if key in size:
            continue
        if key in active:
            raise FrontMatterTooComplex(
                "front matter too complex: an alias refers to the value that contains it"
            )
        active.add(key)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in size)


# libyaml is about 7x faster than the pure-Python loader (0.26 ms against 1.9 ms for a typical note's front matter),
# which is what lets a structure audit read 5,000 notes in seconds. It is used only where the bounds above cannot be
# reached: no anchor or alias can appear without "&" or "*" (so nothing expands), and a short text cannot nest deep
# enough to strain its recursive composer; nesting depth is then checked on the built value. Anything else, and any
# text libyaml rejects, goes through the bounded pure-Python loader, which gives the authoritative error.
_FAST_LOADER: type[yaml.CSafeLoader] | None = getattr(yaml, "CSafeLoader", None)
_FAST_MAX_CHARS = 4096
_SLOW = object()


def _load_small_plain(yaml_text: str) -> Any:
    """The value via libyaml, or ``_SLOW`` when the bounded loader must decide."""
    if _FAST_LOADER is None or len(yaml_text) > _FAST_MAX_CHARS or "&" in yaml_text or "*" in yaml_text:
        return _SLOW
    try:
        value = yaml.load(yaml_text, Loader=_FAST_LOADER)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError):
        return _SLOW
    if _depth(value) > MAX_FRONT_MATTER_DEPTH:
        raise FrontMatterTooComplex(_TOO_DEEP)
    return value


def _depth(value: Any) -> int:
    """Nesting levels of a value built without aliases (a tree), counted like :func:`_check_expansion`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict):
            stack.extend((v, level + 1) for pair in item.items() for v in pair)
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def load_front_matter(yaml_text: str) -> Any:
    """The value of a front matter block, within the bounds above.

    Raises :class:`yaml.YAMLError` for malformed YAML and :class:`FrontMatterTooComplex` (a
    ``YAMLError``) for YAML that is too large, too deep or expands too much; any other error a
    value raises while being built (an impossible date, say) comes as a ``YAMLError`` too.
    """
    size = len(yaml_text.encode("utf-8", "surrogatepass"))
    if size > MAX_FRONT_MATTER_BYTES:
        raise FrontMatterTooComplex(
            f"front matter too large ({size / 1024:,.0f} KB of YAML > {MAX_FRONT_MATTER_BYTES // 1024} KB limit)"
        )
    fast = _load_small_plain(yaml_text)
    if fast is not _SLOW:
        return fast
    loader = _BoundedLoader(yaml_text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        try:
            return loader.construct_document(node)
        except (ValueError, TypeError, OverflowError) as exc:  # datetime(2024, 2, 30) and the like
            raise _BadValue(str(exc)) from exc
    finally:
        loader.dispose()


_FM_OPEN = re.compile(r"-{3,}[ \t]*(?:\n|\Z)")
_FM_CLOSE = re.compile(r"^(-{3,}|\.\.\.)[ \t]*$", re.M)


def split_front_matter(text: str) -> tuple[dict[str, Any], str | None, int, int]:
    """Front matter without the Markdown parse: ``(mapping, problem, body offset, body line)``.

    The same block :func:`parse_note` reads (``---`` on the first line up to a ``---`` or ``...`` line; unclosed
    is no front matter), for callers that need a note's properties but not its blocks (the structure audit).
    """
    opened = _FM_OPEN.match(text)
    if opened is None:
        return {}, None, 0, 0
    dashes = len(opened.group().rstrip())
    closed = next(
        (
            m
            for m in _FM_CLOSE.finditer(text, opened.end())
            if m.group(1)[0] == "." or len(m.group(1)) >= dashes
        ),
        None,
    )
    if closed is None:
        return {}, None, 0, 0
    line_end = text.find("\n", closed.end())
    body = len(text) if line_end < 0 else line_end + 1
    frontmatter, problem = _front_matter(text[opened.end() : closed.start()].removesuffix("\n"), 0)
    return frontmatter, problem, body, text.count("\n", 0, body)


def _front_matter(content: str, start_line: int) -> tuple[dict[str, Any], str | None]:
    """Front matter as a mapping, or ``{}`` and the reason it cannot be used."""
    if not content.strip():
        return {}, None
    try:
        loaded = load_front_matter(content)
    except FrontMatterTooComplex as exc:
        return {}, str(exc)
    except _BadValue as exc:
        return {}, f"malformed YAML front matter (a value cannot be read: {exc})"
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        # the mark counts lines inside the YAML; the note's line adds the opening fence
        where = f" at line {start_line + mark.line + 2}" if mark is not None else ""
        return {}, f"malformed YAML front matter{where}"
    except RecursionError:  # belt and braces: composing is bounded by MAX_FRONT_MATTER_DEPTH
        return {}, _TOO_DEEP
    if not isinstance(loaded, dict):
        return {}, "front matter is not a mapping of keys to values"
    return {str(k): v for k, v in loaded.items()}, None


def note_tags(frontmatter: dict[str, Any], body: str, masked: list[tuple[int, int]]) -> tuple[str, ...]:
    """Front-matter ``tags`` / ``tag`` then inline ``#tags``, first spelling kept, deduplicated case-insensitively
    (Obsidian counts ``#Idea`` and ``#idea`` as one tag)."""
    tags = [normalize_tag(t) for key in ("tags", "tag") for t in _as_strings(frontmatter.get(key))]
    seen = {t.casefold() for t in tags}
    for tag in extract_tags(body, masked):
        if tag.casefold() not in seen:
            seen.add(tag.casefold())
            tags.append(tag)
    return tuple(t for t in tags if t)


def note_aliases(frontmatter: dict[str, Any]) -> tuple[str, ...]:
    return tuple(a for key in ("aliases", "alias") for a in _as_strings(frontmatter.get(key)))


def sealed_blocks(text: str) -> list[tuple[BlockKind, int, int]]:
    """Every code block (fenced or indented) and table of ``text`` at any depth, in list items and
    block quotes too, as ``(kind, first line, last line)``, 1-based and inclusive: the blocks a
    write may neither cut through nor insert into (``parse_note`` keeps only the top-level ones)."""
    kinds: dict[str, BlockKind] = {"fence": "code", "code_block": "code", "table_open": "table"}
    return [
        (kinds[tok.type], tok.map[0] + 1, tok.map[1])
        for tok in _md().parse(text, {})
        if tok.type in kinds and tok.map is not None
    ]


def parse_note(text: str, path: str) -> ParsedNote:
    """Parse decoded note text (see :func:`decode_note`); ``path`` gives the fallback title."""
    md = _md()
    env: dict[str, Any] = {}
    tokens = md.parse(text, env)
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
            frontmatter, fm_error = _front_matter(tok.content, start_line)
            continue
        kind = _OPEN_KINDS.get(tok.type) or _LEAF_KINDS.get(tok.type)
        if kind is None:
            continue
        level, heading = 0, ""
        if kind == "heading":
            level = int(tok.tag[1:])
            heading = _heading(md, tokens[i + 1], env)
            headings.append(Heading(level, heading, start_line))
        blocks.append(Block(kind, start_line, end_line, offset(start_line), offset(end_line), level, heading))

    body_start = offset(body_line)
    body = text[body_start:]
    masked = masked_spans(body)
    title = frontmatter.get("title")
    return ParsedNote(
        text=text,
        frontmatter=frontmatter,
        frontmatter_error=fm_error,
        body_start=body_start,
        body_start_line=body_line,
        title=str(title).strip() if isinstance(title, str) and title.strip() else PurePosixPath(path).stem,
        aliases=note_aliases(frontmatter),
        tags=note_tags(frontmatter, body, masked),
        headings=tuple(headings),
        blocks=tuple(blocks),
        links=tuple(extract_links(body, masked, line_offset=body_line)),
    )
