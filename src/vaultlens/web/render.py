"""A note's Markdown as HTML (raw HTML disabled, Obsidian's syntax from :mod:`vaultlens.web.obsidian`,
code highlighted by :mod:`vaultlens.web.highlight`), each top-level block carrying its source lines.

``data-lines="A-B"`` (1-based, inclusive, as search results and related sections count them) lets
the page mark and scroll to the blocks a result's ``lines`` cover (class ``target``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from vaultlens.web.highlight import highlight
from vaultlens.web.layout import h, tag
from vaultlens.web.obsidian import NoteLinks, use_obsidian, without_comments

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt
    from mdit_py_plugins.footnote import footnote_plugin
    from mdit_py_plugins.front_matter import front_matter_plugin
    from mdit_py_plugins.tasklists import tasklists_plugin

    # commonmark with html off: a note's <script> or <img onerror> is shown as text, never run
    md = MarkdownIt("commonmark", {"html": False, "highlight": highlight}).enable(["table", "strikethrough"])
    md.use(front_matter_plugin).use(footnote_plugin).use(tasklists_plugin, label=True)
    use_obsidian(md)
    return md


def parse_lines(value: str | None) -> tuple[int, int] | None:
    """``"12-20"`` → (12, 20); anything else (absent, malformed, reversed) → None."""
    if not value:
        return None
    start, _, end = value.partition("-")
    if not (start.isdigit() and (end or start).isdigit()):
        return None
    a, b = int(start), int(end or start)
    return (a, b) if 1 <= a <= b else None


def note_html(
    text: str,
    target: tuple[int, int] | None,
    links: NoteLinks | None = None,
    first_line: int = 1,
    doc_id: str | None = None,
) -> str:
    """The rendered note; blocks overlapping ``target`` get the class ``target``. With ``links``
    its links point at their notes' views; inside an embed (``links.depth`` > 0) blocks carry no lines.
    ``text`` starts at line ``first_line`` of its note (a part of a huge note: :mod:`.note_parts`,
    its footnotes' ids prefixed with ``doc_id`` so two parts' never clash)."""
    md = _markdown()
    env: dict[str, object] = {"links": links} if links is not None else {}
    if doc_id is not None:
        env["docId"] = doc_id
    tokens = md.parse(without_comments(text), env)
    numbered = links is None or links.depth == 0
    front = ""
    for token in tokens:
        align = token.attrs.pop("style", None)  # a table column's text-align: a class, not style= (CSP)
        if isinstance(align, str) and align.startswith("text-align:"):
            token.attrJoin("class", "align-" + align.removeprefix("text-align:"))
        if token.level != 0 or token.nesting == -1 or token.map is None or not numbered:
            continue
        first, last = token.map[0] + first_line, token.map[1] + first_line - 1
        hit = target is not None and first <= target[1] and last >= target[0]
        if token.type == "front_matter":  # shown as the YAML it is (search results can point at it)
            lines = "\n".join(text.split("\n")[token.map[0] : token.map[1]])
            front = tag(
                "pre",
                h(lines),
                class_="front-matter" + (" target" if hit else ""),
                data_lines=f"{first}-{last}",
            )
            continue
        token.attrSet("data-lines", f"{first}-{last}")
        if hit:
            token.attrJoin("class", "target")
    html: str = md.renderer.render(tokens, md.options, env)
    return front + html


def obsidian_url(vault_name: str, path: str, page: int | None = None) -> str:
    """``obsidian://open?vault=NAME&file=PATH`` (the path without ``.md``, as Obsidian names notes; a PDF
    at ``page`` with Obsidian's ``#page=N``)."""
    file = path[:-3] if path.lower().endswith(".md") else path
    file += f"#page={page}" if page is not None else ""
    return f"obsidian://open?vault={quote(vault_name, safe='')}&file={quote(file, safe='')}"
