"""The tag view: the notes carrying a ``#tag`` (the ``tagged`` verb), where the note view's tags link to, and the
fragment the search box shows above a meaning search when its query is exactly one ``#tag``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from vaultlens.errors import VaultlensError
from vaultlens.services.verbs import finding
from vaultlens.web.layout import h, note_href, page, tag
from vaultlens.web.pages import problem
from vaultlens.web.state import WebState

Name = Annotated[str, Query(max_length=finding.MAX_PATH_CHARS)]


def tagged_html(found: finding.TaggedNotes) -> str:
    """The notes carrying the tag, each linking to its note view at the tag's first line."""
    heading = tag("h2", "Notes tagged " + tag("span", h("#" + found.tag), class_="tag"), id="tagged-heading")
    if not found.notes:
        return heading + tag("p", "No note carries this tag.", class_="empty")
    items = "".join(
        tag(
            "li",
            tag(
                "a",
                h(n.title),
                href=note_href(n.path, n.lines[0], n.lines[0]) if n.lines else note_href(n.path),
            )
            + " "
            + tag("code", h(n.path))
            + " "
            + tag("span", h(" ".join("#" + t for t in n.tags)), class_="meta")
            + (" " + tag("span", "lines " + ", ".join(map(str, n.lines)), class_="lines") if n.lines else ""),
            class_="tagged-note",
            data_path=n.path,
        )
        for n in found.notes
    )
    more = (
        tag("p", f"{len(found.notes)} of {found.total} notes shown.", class_="notice")
        if found.total > len(found.notes)
        else ""
    )
    return heading + tag("ul", items, class_="tagged") + more


def _tagged(state: WebState, name: str) -> tuple[str, int]:
    if not name.strip().lstrip("#"):  # the page's own address, no tag named yet: say how to name one
        hint = "Click a tag in a note, or search for <code>#tag</code>, to list the notes that carry it."
        return tag("h2", "Tag", id="tagged-heading") + tag("p", hint), 200
    try:
        return tagged_html(finding.tagged(state.app, name)), 200
    except VaultlensError as exc:
        return problem(exc), exc.http_status


def build(state: WebState) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/tag", response_class=HTMLResponse)
    def tag_page(request: Request, name: Name = "") -> HTMLResponse:
        """Every note carrying ``#name`` or a tag nested under it, as Obsidian's tag search lists them."""
        body, status = _tagged(state, name)
        title = "#" + name.lstrip("#") if name else "Tag"
        return HTMLResponse(
            page(
                title,
                "/tag",
                tag("section", body, aria_labelledby="tagged-heading"),
                state.csrf.token_for(request),
            ),
            status_code=status,
        )

    @router.get("/tag/notes", response_class=HTMLResponse)
    def tag_notes(name: Name = "") -> HTMLResponse:
        """The same list as a fragment: the search page shows it above the results of a ``#tag`` query."""
        body, status = _tagged(state, name)
        return HTMLResponse(body, status_code=status)

    return router
