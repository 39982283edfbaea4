"""The frame every page shares: the document head (CSRF token, styles, its script), the nav, main.

Pages build their bodies from small escaped pieces (:func:`h`, :func:`tag`); nothing the vault
holds reaches the page unescaped, and note Markdown is rendered with raw HTML disabled.
"""

from __future__ import annotations

from html import escape
from typing import Protocol
from urllib.parse import urlencode

from vaultlens.web.csrf import KEY_HINT

NAV = [
    ("/", "Search"),
    ("/note", "Note"),
    ("/duplicates", "Duplicates"),
    ("/review", "Review"),
    ("/history", "History"),
    ("/ask", "Ask"),
    ("/audit", "Audit"),
    ("/status", "Status"),
]


def h(text: object) -> str:
    """Escaped for element text and attribute values."""
    return escape(str(text), quote=True)


def prose(text: object) -> str:
    """A message or hint written for the terminal, escaped, its `command` spans as <code> (a page
    that showed the backticks read as if they were to be typed); common.js's ``prose`` does the same."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no spans
        return h(text)
    return "".join(tag("code", h(p)) if i % 2 else h(p) for i, p in enumerate(parts))


def tag(name: str, body: str = "", /, **attrs: object) -> str:
    """``<name attrs>body</name>``: attribute names with ``_`` become ``-`` (``data_path``), a
    trailing ``_`` is dropped (``class_``); None and False leave an attribute out, True keeps its name."""
    parts = [name]
    for key, value in attrs.items():
        attr = key.rstrip("_").replace("_", "-")
        if value is None or value is False:
            continue
        parts.append(attr if value is True else f'{attr}="{h(value)}"')
    return f"<{' '.join(parts)}>{body}</{name}>"


def void(name: str, /, **attrs: object) -> str:
    """A void element (``input``, ``meta``): :func:`tag` without the closing tag."""
    return tag(name, **attrs).removesuffix(f"</{name}>")


def labelled(id_: str, label: str, kind: str = "input", /, **attrs: object) -> str:
    """A control with its ``<label>`` (every control has one: the page is checked with axe-core)."""
    attrs.setdefault("name", id_)
    control = void("input", id=id_, **attrs) if kind == "input" else tag(kind, id=id_, **attrs)
    return tag("label", h(label), for_=id_) + control


def page(title: str, current: str, body: str, csrf: str | None, script: str | None = None) -> str:
    """A whole HTML document; ``current`` is the nav entry marked as this page, ``script`` its own JS.
    ``csrf``: the page token, "" for a browser without the page key (a read-only page, which says
    how to get the key), None for a page that writes nothing either way (an error page)."""
    links = "".join(
        tag("a", h(label), href=href, aria_current="page" if href == current else None) for href, label in NAV
    )
    scripts = '<script src="/ui/static/common.js" defer></script>' + (
        f'<script src="/ui/static/{h(script)}.js" defer></script>' if script else ""
    )
    read_only = (
        ""
        if csrf != ""
        else tag("p", prose(f"This page is read-only here. {KEY_HINT}"), id="read-only", class_="notice")
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f'<meta name="vaultlens-csrf" content="{h(csrf or "")}">'
        f"<title>{h(title)} · vaultlens</title>"
        '<link rel="icon" href="data:,">'  # no favicon request (nothing to fetch, no 404)
        '<link rel="stylesheet" href="/ui/static/app.css">'
        f"{scripts}</head><body>"
        '<a class="skip" href="#main">Skip to content</a>'
        f'<header><span class="brand">vaultlens</span><nav aria-label="Pages">{links}</nav></header>'
        f'<main id="main"><h1>{h(title)}</h1>{read_only}{body}</main></body></html>'
    )


class Lines(Protocol):
    """A section as the duplicate finder names it (a ``Section`` or a passage's ``LineRange``)."""

    @property
    def heading_path(self) -> tuple[str, ...]: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...


def section_ref(section: Lines, link_to: str | None = None) -> str:
    """A section's heading path and lines (a link to them in ``link_to``, when given)."""
    heading = h(" › ".join(section.heading_path) or "(top)")
    start, end = section.start_line, section.end_line
    lines = tag("span", f"lines {start}-{end}", class_="lines", data_lines=f"{start}-{end}")
    if link_to is None:
        return tag("span", heading, class_="heading-path") + " " + lines
    page_no: int | None = getattr(section, "page", None)  # a PDF's page (a Section's; a passage has none)
    href = note_href(link_to, start, end, page_no)
    return tag("a", heading, href=href, class_="heading-path") + " " + lines


def lines_attr(start: int, end: int) -> str:
    return f"{start}-{end}"


def note_href(path: str, start: int | None = None, end: int | None = None, page: int | None = None) -> str:
    """The note view of ``path`` at lines ``start``-``end``; a PDF's or canvas's redirects to Obsidian, a
    PDF at ``page``."""
    query: dict[str, str] = {"path": path}
    if start is not None and end is not None:
        query["lines"] = lines_attr(start, end)
    if page is not None:
        query["page"] = str(page)
    return "/note?" + urlencode(query)


def tag_href(name: str) -> str:
    """The tag view of ``name`` (without the "#"): the notes carrying it, never a meaning search."""
    return "/tag?" + urlencode({"name": name})


def table(table_id: str, header: list[str], rows: list[list[str]]) -> str:
    """A table with column headers; each row's cells are HTML already (escaped by the caller)."""
    head = "".join(tag("th", h(t), scope="col") for t in header)
    body = "".join(tag("tr", "".join(tag("td", c) for c in row)) for row in rows)
    return tag("table", tag("thead", tag("tr", head)) + tag("tbody", body), id=table_id)
