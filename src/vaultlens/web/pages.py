"""The pages that are mostly script: Search, Review and Ask (their data comes from ``/ui/api``),
and the Note view, rendered here from the ``note`` and ``similar`` verbs."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from vaultlens.chunking.attachments import kind_of
from vaultlens.errors import InvalidInput, NoteChanged, VaultlensError
from vaultlens.services.verbs import finding
from vaultlens.services.verbs.drafting import PRESETS
from vaultlens.vault.links import LinkResolver
from vaultlens.web import note_parts
from vaultlens.web.layout import h, labelled, note_href, page, prose, section_ref, tag, void
from vaultlens.web.note_parts import Part, PartedNote
from vaultlens.web.obsidian import Embedder, NoteLinks, anchor, heading_section
from vaultlens.web.render import note_html, obsidian_url, parse_lines
from vaultlens.web.state import WebState

Text = Annotated[str, Query(max_length=finding.MAX_PATH_CHARS)]


def problem(error: VaultlensError) -> str:
    """A verb's refusal as the page shows it: the message and its hint, never a traceback."""
    hint = f" {tag('span', prose(error.hint), class_='hint')}" if error.hint else ""
    return tag("p", prose(error.message) + hint, class_="error", role="alert", data_code=error.code)


def read_note(state: WebState, path: str) -> finding.NoteText:
    """The whole note, from one read of its file (the ``note_text`` verb: its safe-path rules apply)."""
    return finding.note_text(state.app, path)


def rendered_note(state: WebState, note: finding.NoteText, target: tuple[int, int] | None) -> str:
    """A note's text as Obsidian shows it, its links resolved against the vault's files."""
    return note_html(note.text, target, _note_links(state, note.path))


def _note_links(state: WebState, path: str) -> NoteLinks:
    resolver = finding.link_resolver(state.app)
    return NoteLinks(resolver, path, _embedder(state, resolver))


def note_part_html(
    state: WebState, note: PartedNote, path: str, index: int, target: tuple[int, int] | None = None
) -> str:
    """Part ``index`` of a huge note, rendered, its blocks numbered with the note's own lines."""
    part = note.parts[index]
    body = note_html(note.part_text(index), target, _note_links(state, path), part.first, f"p{index}")
    return tag(
        "section", body, class_="note-part", data_part=index, data_first=part.first, data_last=part.last
    )


def _pending_part(path: str, part: Part) -> str:
    """A part not rendered yet: note_parts.js loads it near the viewport; without script, a link."""
    href = "/note?" + urlencode({"path": path, "part": part.index})
    text = f"Lines {part.first}-{part.last} are not shown yet: show them"
    return tag(
        "section",
        tag("p", tag("a", text, href=href), class_="empty"),
        class_="note-part pending",
        data_part=part.index,
        data_first=part.first,
        data_last=part.last,
        data_chars=part.end - part.start,
    )


def parted_note_html(
    state: WebState,
    note: finding.NoteText,
    parts: PartedNote,
    shown: list[int],
    target: tuple[int, int] | None,
) -> str:
    """A huge note's view: the parts in ``shown`` rendered, the others as placeholders, and a
    "Load the rest" button (a plain GET of the whole note without script)."""
    sections = "".join(
        note_part_html(state, parts, note.path, p.index, target)
        if p.index in shown
        else _pending_part(note.path, p)
        for p in parts.parts
    )
    pending = len(parts.parts) - len(shown)
    rest = (
        (
            '<form action="/note" method="get" id="load-rest">'
            + void("input", type="hidden", name="path", value=note.path)
            + void("input", type="hidden", name="whole", value="1")
            + tag(
                "p",
                f"A long note: {pending} of its {len(parts.parts)} parts load as you scroll. "
                + tag("button", "Load the rest", type="submit"),
                class_="hint",
            )
            + "</form>"
        )
        if pending
        else ""
    )
    article = tag(
        "article",
        sections,
        id="note-body",
        data_path=note.path,
        data_hash=note.content_hash,
        data_parts=len(parts.parts),
    )
    return rest + article + '<script src="/ui/static/note_parts.js" defer></script>'


def markdown_html(state: WebState, text: str) -> str:
    """Text that is not a note (an Ask answer, its passages) as Obsidian Markdown: links resolved
    against the vault's files, no embeds, no line numbers."""
    return note_html(text, None, NoteLinks(finding.link_resolver(state.app), "", None, depth=1))


def _embedder(state: WebState, resolver: LinkResolver) -> Embedder:
    def embed(path: str, heading: str | None, depth: int) -> str:
        """``![[Note]]`` / ``![[Note#Heading]]`` inline, read through the note verb's path rules."""
        href = note_href(path) + ("#" + anchor(heading) if heading else "")
        head = tag("a", h(path.removesuffix(".md") + (f" › {heading}" if heading else "")), href=href)
        try:
            text = read_note(state, path).text
        except VaultlensError as exc:
            return tag("div", head + problem(exc), class_="embed")
        part = heading_section(text, heading) if heading else text
        if part is None:
            return tag(
                "div",
                head + tag("p", h(f"No heading '{heading}' in {path}."), class_="error"),
                class_="embed",
            )
        body = note_html(part, None, NoteLinks(resolver, path, embed, depth))
        return tag("div", head + body, class_="embed", data_path=path)

    return embed


def related_html(state: WebState, path: str) -> str:
    try:
        found = finding.similar(state.app, path, untrusted=True)
    except VaultlensError as exc:
        return problem(exc)
    items = []
    for other in found.results:
        pairs = "".join(
            tag("li", section_ref(m.source, path) + " ↔ " + section_ref(m.other, other.path), class_="match")
            for m in other.matches
        )
        head = tag("a", h(other.title or other.path), href=note_href(other.path)) + tag(
            "span", f"{other.score:.2f}", class_="similarity"
        )
        review = tag(
            "a",
            "Review with this note",
            href="/review?" + urlencode({"a": path, "b": other.path}),
            class_="review",
        )
        items.append(
            tag("li", head + " " + review + tag("ul", pairs), class_="related", data_path=other.path)
        )
    if not items:
        return tag("p", h(found.notice or "No related notes."), class_="empty")
    return tag("ul", "".join(items), class_="related-list")


def graph_html(graph: finding.NoteGraph) -> str:
    """Backlinks and outgoing links, each a link to its note view."""

    def listed(title: str, paths: list[str], class_: str) -> str:
        items = "".join(tag("li", tag("a", h(p), href=note_href(p)), data_path=p) for p in paths)
        return tag("h3", h(title)) + (
            tag("ul", items, class_=class_) if items else tag("p", "None.", class_="empty")
        )

    missing = "".join(tag("li", h(t), class_="unresolved") for t in graph.unresolved)
    return (
        listed(f"Linked from ({len(graph.backlinks)})", graph.backlinks, "backlinks")
        + listed(f"Links to ({len(graph.outgoing)})", graph.outgoing, "outgoing")
        + (tag("h3", "Links that lead nowhere") + tag("ul", missing) if missing else "")
    )


def build(state: WebState) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/", response_class=HTMLResponse)
    def search_page(request: Request) -> str:
        csrf = state.csrf.token_for(request)
        body = (
            '<form id="search-form" role="search" action="/" data-scripted>'
            + labelled("q", "Search the vault", type="search", autocomplete="off", autofocus=True)
            + "</form>"
            + tag("p", "Every match is weak: the vault may not hold this.", id="weak-notice", hidden=True)
            + tag("p", "", id="search-notices", class_="notice", hidden=True)
            # a query that is exactly one #tag: the notes carrying it, above the meaning search (tag_page.py)
            + tag(
                "section", "", id="tagged", aria_labelledby="tagged-heading", aria_live="polite", hidden=True
            )
            + tag("div", "", id="results", aria_live="polite")
        )
        return page("Search", "/", body, csrf, "search")

    @router.get("/note", response_class=HTMLResponse, response_model=None)
    def note_page(
        request: Request,
        path: Text = "",
        lines: Annotated[str, Query(max_length=40)] = "",
        at_page: Annotated[int | None, Query(alias="page", ge=1, le=10**6)] = None,
        part: Annotated[int | None, Query(ge=0, le=10**6)] = None,
        whole: bool = False,
    ) -> HTMLResponse | RedirectResponse:
        csrf = state.csrf.token_for(request)
        if kind_of(path) is not None:  # a PDF (at the page asked for) or a canvas: Obsidian shows it
            return RedirectResponse(obsidian_url(state.app.vault.name, path, at_page), status_code=303)
        if not path:
            form = (
                '<form action="/note" method="get">'
                + labelled("note-path", "Note (title, alias or path)", name="path", data_picker=True)
                + tag("button", "Open", type="submit")
                + "</form>"
            )
            return HTMLResponse(page("Note", "/note", form, csrf, "picker"))
        try:
            note = read_note(state, path)
        except VaultlensError as exc:
            return HTMLResponse(page("Note", "/note", problem(exc), csrf), status_code=exc.http_status)
        target = parse_lines(lines)
        parts = None if whole else note_parts.parted(note.text, note.content_hash)
        if parts is None:
            text = tag("article", rendered_note(state, note, target), id="note-body")
        else:  # a huge note: the first part and the asked-for ones now, the rest as the user scrolls
            shown = parts.shown_first(target)
            if part is not None and part < len(parts.parts):
                shown = sorted({*shown, part})
            text = parted_note_html(state, note, parts, shown, target)
        body = (
            tag("p", tag("code", h(note.path)), class_="note-path")
            + tag(
                "a",
                "Open in Obsidian",
                id="open-obsidian",
                href=obsidian_url(state.app.vault.name, note.path),
            )
            + text
            + transform_form(note.path)
            + tag("h2", "Related notes and links", id="related-heading")
            + tag(  # filled after the note (note.js): a huge note's text is not held up by them
                "section",
                tag("p", "Finding related notes…", class_="empty"),
                id="related",
                aria_labelledby="related-heading",
                aria_busy="true",
                data_src="/note/related?" + urlencode({"path": note.path}),
            )
        )
        return HTMLResponse(page(note.path, "/note", body, csrf, "note"))

    @router.get("/ui/api/note/part", response_model=None)
    def note_part(
        path: Text,
        hash: Annotated[str, Query(min_length=64, max_length=64)],
        n: Annotated[int | None, Query(ge=0, le=10**6)] = None,
        anchor: Annotated[str | None, Query(max_length=finding.MAX_PATH_CHARS)] = None,
    ) -> Response:
        """Part ``n`` of a huge note (or the part holding element ``anchor``), rendered at content hash
        ``hash``: refused once the note changed, so a page never joins parts of two versions."""
        note = read_note(state, path)
        if note.content_hash != hash:
            raise NoteChanged(
                f"{note.path} changed since this page showed it: its other parts are not loaded.",
                hint="Reload the page to see the note as it is now.",
            )
        parts = note_parts.parted(note.text, note.content_hash)
        if parts is None:
            raise InvalidInput(f"{note.path} is shown whole, not in parts.", hint="Reload the page.")
        if anchor is not None:
            holding = parts.holding(anchor)
            if holding is None:
                return Response(status_code=204)  # no such heading or block: the page stays where it is
            n = holding.index
        if n is None or n >= len(parts.parts):
            raise InvalidInput(f"{note.path} has {len(parts.parts)} parts (0-{len(parts.parts) - 1}).")
        return HTMLResponse(note_part_html(state, parts, note.path, n))

    @router.get("/note/related", response_class=HTMLResponse)
    def note_related(path: Text = "") -> HTMLResponse:
        """The note view's related notes, backlinks and outgoing links: a fragment note.js loads."""
        if not path:
            return HTMLResponse(tag("p", "No note given.", class_="empty"))
        try:
            graph = finding.note_graph(state.app, path)
        except VaultlensError as exc:
            return HTMLResponse(problem(exc), status_code=exc.http_status)
        return HTMLResponse(related_html(state, graph.path) + graph_html(graph))

    @router.get("/review", response_class=HTMLResponse)
    def review_page(request: Request, a: Text = "", b: Text = "") -> str:
        csrf = state.csrf.token_for(request)
        if not (a and b):
            form = two_notes_form("/review", (("a", "Note A", a), ("b", "Note B", b)), "Review")
            return page("Review", "/review", form, csrf, "picker")
        body = (
            tag("p", f"{tag('code', h(a))} and {tag('code', h(b))}", id="pair", data_a=a, data_b=b)
            + tag("section", "", id="consent", aria_label="What is sent")
            + tag("section", "", id="validation", aria_label="Validation")
            + tag("section", "", id="claims", aria_label="Claims")
            + tag("section", PLAN_FORM, id="plan-section", aria_label="Plan", hidden=True)
            + tag("section", "", id="diff", aria_label="Diff")
            + tag("p", "", id="status", role="status")
            + tag(
                "button", "Review again from the current text", id="review-again", type="button", hidden=True
            )
        )
        return page("Review", "/review", body, csrf, "review")

    @router.get("/ask", response_class=HTMLResponse)
    def ask_page(request: Request) -> str:
        """A conversation: the history lives in the page's script while the tab lives (sent with
        each question, never stored); the consent step lists the passages to be sent."""
        turns = state.app.settings.llm.history_turns
        body = (
            tag(
                "section",
                tag("div", "", id="past")
                + tag(
                    "div",
                    tag("p", "", id="asked", class_="asked", hidden=True)
                    + tag("p", "", id="rewritten", class_="rewritten", hidden=True)
                    + tag("div", "", id="answer", aria_live="polite")
                    + tag("section", "", id="sources", aria_label="Sources"),
                    id="turn",
                    class_="turn",
                ),
                id="conversation",
                aria_label="Conversation",
            )
            + tag("section", "", id="consent", aria_label="What is sent", hidden=True)
            + f'<form id="ask-form" data-scripted data-history-turns="{turns}">'
            + labelled("question", "Question (Enter asks; Shift+Enter for a new line)", "textarea", rows="3")
            + tag(
                "label",
                void("input", id="extractive", type="checkbox", name="extractive")
                + " Passages only (no model)",
                for_="extractive",
            )
            + tag(
                "div",
                tag("button", "Ask", id="ask", type="submit")
                + tag("button", "Stop", id="stop", type="button", disabled=True)
                + tag("button", "New conversation", id="new-conversation", type="button"),
                class_="actions",
            )
            + tag("p", "", id="tab-consent", role="status", hidden=True)
            + "</form>"
        )
        return page("Ask", "/ask", body, state.csrf.token_for(request), "ask")

    return router


def two_notes_form(action: str, fields: tuple[tuple[str, str, str], ...], button: str) -> str:
    """A GET form naming notes with the note picker: each field's (query name, label, value)."""
    pickers = "".join(
        labelled(f"pick-{name}", label, name=name, value=value, data_picker=True)
        for name, label, value in fields
    )
    return (
        f'<form action="{h(action)}" method="get">'
        + pickers
        + tag("button", h(button), type="submit")
        + "</form>"
    )


def transform_form(path: str) -> str:
    """``vaultlens write`` on the note view: transform lines (filled from a selection in the note)
    with a preset or the user's own instruction, continue, flashcards, split; the consent step and
    the diff appear below."""
    presets = tag("option", "(my own instruction)", value="") + "".join(
        tag("option", h(name), value=name) for name in PRESETS
    )
    form = (
        f'<form id="transform" data-scripted data-path="{h(path)}">'
        + tag("p", "Select text in the note to fill in its lines, or type them.", class_="hint")
        + labelled("first", "First line", type="number", min="1", required=True)
        + labelled("last", "Last line", type="number", min="1", required=True)
        + tag("label", "Preset", for_="preset")
        + tag("select", presets, id="preset", name="preset")
        + labelled("instruction", "Or your instruction", "textarea", rows="2")
        + tag("button", "Transform", id="transform-send", type="submit")
        + "</form>"
        + tag(
            "p",
            "".join(
                tag("button", label, type="button", class_="tool", data_tool=name)
                for name, label in (
                    ("continue", "Continue the note"),
                    ("flashcards", "Add flashcards"),
                    ("split", "Split into atomic notes"),
                )
            ),
            class_="tools",
        )
    )
    return tag(
        "section",
        tag("h2", "Note tools", id="transform-heading")
        + form
        + tag("section", "", id="transform-consent", aria_label="What is sent", hidden=True)
        + tag("section", "", id="transform-diff", aria_label="Diff")
        + tag("p", "", id="transform-status", role="status"),
        id="tools",
        aria_labelledby="transform-heading",
    )


PLAN_FORM = (
    '<form id="plan" data-scripted>'
    + tag("label", "The note that gets the link", for_="direction")
    + tag(
        "select",
        tag("option", "A links to B", value="A") + tag("option", "B links to A", value="B"),
        id="direction",
        name="direction",
    )
    + tag("label", "Insert after the block", for_="after")
    + tag(
        "select",
        tag("option", "(the planner's choice)", value=""),
        id="after",
        name="after",
        aria_describedby="after-note",
    )
    + tag("p", "", id="after-note", class_="hint")
    + tag("label", "Link text", for_="link_text")
    + void("input", id="link_text", name="link_text", value="See also")
    + tag("button", "Re-plan", id="replan", type="submit")
    + "</form>"
    + tag("div", "", id="plan-problem", aria_live="polite")
)
