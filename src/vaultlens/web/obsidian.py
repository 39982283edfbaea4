"""Obsidian's Markdown on top of markdown-it: wikilinks and embeds, ``#tags``, ``==highlights==``,
callouts, block ids and ``%%comments%%``, with every link resolved by the vault's own
:class:`~vaultlens.vault.links.LinkResolver` (the one the index and the audit use).

Links are parsed by :func:`~vaultlens.vault.links.extract_links` (the same reading the index
stores), so the page and the graph never disagree about what a link points at. Everything a note
holds is escaped here; no rule emits the note's own HTML.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote

from vaultlens.services.verbs.finding import IMAGE_TYPES
from vaultlens.vault.links import LinkResolver, extract_links, masked_spans, tag_at
from vaultlens.web.layout import h, note_href, tag, tag_href

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_core import StateCore
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

    from vaultlens.vault.model import Link

MAX_EMBED_DEPTH = 2  # a note embedded in an embedded note is shown; one level further is a link
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_CALLOUT_RE = re.compile(r"\[!([\w-]+)\]([+-]?)[ \t]*([^\n]*)")
_BLOCK_ID_RE = re.compile(r"[ \t]\^([A-Za-z0-9-]+)$")

# (path of the embedded note, heading or None, depth it is shown at) → its HTML
Embedder = Callable[[str, "str | None", int], str]


@dataclass(frozen=True, slots=True)
class NoteLinks:
    """What the renderer needs to link a note: the vault's resolver, the note's own path, how to
    show an embedded note, and how deep this rendering already is inside embeds."""

    resolver: LinkResolver
    source: str
    embed: Embedder | None = None
    depth: int = 0


def anchor(heading: str) -> str:
    """The element id of a heading (``h-`` + its words joined by ``-``), as links to it name it."""
    return "h-" + "-".join(heading.split())


def file_href(path: str) -> str:
    return "/ui/file?path=" + quote(path, safe="")


def without_comments(text: str) -> str:
    """``%%comments%%`` blanked out, their line breaks kept (the line maps stay the note's)."""
    parts: list[str] = []
    prev = 0
    for start, end in masked_spans(text):
        if text.startswith("%%", start):
            parts += [text[prev:start], "\n" * text.count("\n", start, end)]
            prev = end
    return "".join(parts) + text[prev:] if parts else text


def use_obsidian(md: MarkdownIt) -> None:
    """Add Obsidian's syntax to ``md``; links need ``env["links"]`` (a :class:`NoteLinks`)."""
    md.inline.ruler.before("link", "wikilink", _wikilink)
    md.inline.ruler.before("emphasis", "highlight", _highlight)
    md.inline.ruler.push("vault_tag", _vault_tag)
    md.core.ruler.push("obsidian_blocks", _blocks)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("vault_tag", lambda _r, tokens, idx, *_: _render_tag(tokens[idx].meta["tag"]))
    md.add_render_rule("callout_title", _render_callout_title)


# ---- inline rules ----------------------------------------------------------------------------


def _wikilink(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    embed = src.startswith("![[", pos)
    if not (embed or src.startswith("[[", pos)):
        return False
    end = src.find("]]", pos)
    inner = src[pos + (3 if embed else 2) : end]
    if end < 0 or not inner or any(c in inner for c in "[]\n"):
        return False
    found = extract_links(src[pos : end + 2])
    if len(found) != 1:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.meta = {"link": found[0], "embed": embed}
    state.pos = end + 2
    return True


def _highlight(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    if not src.startswith("==", pos) or src.startswith("===", pos):
        return False
    end = src.find("==", pos + 2)
    if end < 0 or end == pos + 2 or src[pos + 2].isspace() or src[end - 1].isspace():
        return False
    if not silent:
        state.push("mark_open", "mark", 1)
        old_max = state.posMax
        state.pos, state.posMax = pos + 2, end
        state.md.inline.tokenize(state)
        state.posMax = old_max
        state.push("mark_close", "mark", -1)
    state.pos = end + 2
    return True


def _vault_tag(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] != "#":
        return False
    name = tag_at(state.src, state.pos)
    if name is None:
        return False
    if not silent:
        state.push("vault_tag", "", 0).meta = {"tag": name}
    state.pos += 1 + len(name)
    return True


# ---- block structure: callouts, heading ids, block ids, links to notes -----------------------


def _blocks(state: StateCore) -> None:
    links: NoteLinks | None = state.env.get("links")
    tokens = state.tokens
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.type == "blockquote_open":
            _callout(tokens, i)
        elif token.type == "heading_open" and tokens[i + 1].children is not None:
            token.attrSet("id", anchor(tokens[i + 1].content))
        elif token.type == "paragraph_open":
            _block_id(token, tokens[i + 1])
            children = tokens[i + 1].children or []
            if len(children) == 1 and children[0].type == "wikilink" and children[0].meta["embed"]:
                token.tag = tokens[i + 2].tag = "div"  # an embedded note is blocks, not a paragraph's text
        elif token.type == "inline" and links is not None:
            for child in token.children or ():
                if child.type in ("link_open", "image"):
                    _note_link(child, links)
        i += 1


def _callout(tokens: list[Token], i: int) -> None:
    """``> [!type]+/- title``: the quote becomes a callout (a ``<details>`` when it folds)."""
    if i + 2 >= len(tokens) or tokens[i + 1].type != "paragraph_open":
        return
    inline = tokens[i + 2]
    m = _CALLOUT_RE.match(inline.content)
    if m is None:
        return
    kind, fold, title = m.group(1).lower(), m.group(2), m.group(3).strip()
    children = inline.children or []
    cut = next((k for k, c in enumerate(children) if c.type in ("softbreak", "hardbreak")), len(children))
    inline.children = children[cut + 1 :]
    inline.content = inline.content[m.end() :].lstrip("\n")
    close = next(
        k
        for k in range(i + 1, len(tokens))
        if tokens[k].type == "blockquote_close" and tokens[k].level == tokens[i].level
    )
    box = "details" if fold else "div"
    tokens[i].tag = tokens[close].tag = box
    tokens[i].attrJoin("class", f"callout callout-{kind}")
    tokens[i].attrSet("data-callout", kind)
    if fold == "+":
        tokens[i].attrSet("open", "")
    from markdown_it.token import Token

    head = Token("callout_title", "", 0)
    head.meta = {"title": title or kind.capitalize(), "summary": bool(fold)}
    tokens.insert(i + 1, head)
    if not inline.children:  # the title was all the paragraph held
        del tokens[i + 2 : i + 5]


def _block_id(paragraph: Token, inline: Token) -> None:
    """A paragraph ending in `` ^id``: the id (``b-id``) on the paragraph, the marker hidden."""
    m = _BLOCK_ID_RE.search(inline.content)
    last = inline.children[-1] if inline.children else None
    if m is None or last is None or last.type != "text" or not last.content.endswith(m.group(0)):
        return
    last.content = last.content[: -len(m.group(0))]
    paragraph.attrSet("id", "b-" + m.group(1))


def _note_link(token: Token, links: NoteLinks) -> None:
    """A Markdown link or image to a vault file: pointed at its note view (or the file route)."""
    attr = "src" if token.type == "image" else "href"
    raw = str(token.attrGet(attr) or "")
    if not raw or raw.startswith(("#", "//")) or _SCHEME_RE.match(raw):
        return
    target, _, fragment = unquote(raw).partition("#")
    resolution = links.resolver.resolve(target, links.source)
    if resolution.path is None:
        token.attrJoin("class", "unresolved" if resolution.status == "unresolved" else "ambiguous")
        token.attrSet(attr, "#")
        return
    if token.type == "image":
        token.attrSet("src", file_href(resolution.path) if _is_image(resolution.path) else "")
        return
    token.attrSet("href", note_href(resolution.path) + _fragment(fragment))
    token.attrJoin("class", "internal-link")


# ---- rendering -------------------------------------------------------------------------------


def _fragment(fragment: str | None, block: str | None = None) -> str:
    if block:
        return "#b-" + quote(block, safe="")
    if fragment:
        if fragment.startswith("^"):
            return "#b-" + quote(fragment[1:], safe="")
        return "#" + quote(anchor(fragment.split("#")[-1]), safe="-")
    return ""


def _is_image(path: str) -> bool:
    return posixpath.splitext(path)[1].lower() in IMAGE_TYPES


def _label(link: Link) -> str:
    if link.display:
        return link.display
    name = link.target.rpartition("/")[2]
    name = name[:-3] if name.lower().endswith(".md") else name
    part = link.heading or (f"^{link.block}" if link.block else None)
    return " › ".join(p for p in (name, part) if p)


def _render_wikilink(
    _renderer: object, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    link: Link = tokens[idx].meta["link"]
    embed: bool = tokens[idx].meta["embed"]
    links: NoteLinks | None = env.get("links")
    label = h(_label(link))
    if links is None:
        return tag("span", label, class_="wikilink")
    resolution = links.resolver.resolve(link.target, links.source)
    if resolution.status == "unresolved":
        return tag("span", label, class_="wikilink unresolved", title=f"No note '{link.target}' in the vault")
    if resolution.path is None:
        listed = ", ".join(resolution.candidates)
        return tag("span", label, class_="wikilink ambiguous", title=f"Ambiguous: {listed}")
    path = resolution.path
    if embed and _is_image(path):
        return tag(
            "img", "", src=file_href(path), alt=link.display or path, class_="embed-image"
        ).removesuffix("</img>")
    if embed and links.embed is not None and path.lower().endswith(".md") and links.depth < MAX_EMBED_DEPTH:
        return links.embed(path, link.heading, links.depth + 1)
    href = (note_href(path) if resolution.status != "self" else "") + _fragment(link.heading, link.block)
    return tag("a", label, href=href or "#", class_="internal-link", data_path=path)


def _render_tag(name: str) -> str:
    return tag("a", h("#" + name), href=tag_href(name), class_="tag")


def _render_callout_title(
    _renderer: object, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    meta = tokens[idx].meta
    return tag("summary" if meta["summary"] else "div", h(meta["title"]), class_="callout-title")


_HEADING_RE = re.compile(r"(#{1,6})[ \t]+(.*?)[ \t#]*$")


def heading_section(text: str, heading: str) -> str | None:
    """The lines under ``heading`` (its own line included) up to the next heading of its level or
    above, as ``![[Note#Heading]]`` embeds them; None when the note has no such heading."""
    wanted = " ".join(heading.split("#")[-1].split()).casefold()
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = _HEADING_RE.fullmatch(line)
        if m is None or " ".join(m.group(2).split()).casefold() != wanted:
            continue
        level = len(m.group(1))
        end = next(
            (
                k
                for k in range(i + 1, len(lines))
                if (n := _HEADING_RE.fullmatch(lines[k])) and len(n.group(1)) <= level
            ),
            len(lines),
        )
        return "\n".join(lines[i:end])
    return None
