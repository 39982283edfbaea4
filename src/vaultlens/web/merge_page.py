"""Merge two notes from the page: the plan of ``POST /ui/api/merge`` reviewed (OTHER's sections to
carry over as checkboxes, the notes whose links are repointed, where OTHER goes), its one combined
exact diff, Apply, then Undo: the same verbs as ``vaultlens merge``, ``apply`` and ``undo``."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from vaultlens.web.layout import h, page, tag
from vaultlens.web.pages import Text, two_notes_form
from vaultlens.web.state import WebState


def build(state: WebState) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/merge", response_class=HTMLResponse)
    def merge_page(request: Request, keep: Text = "", other: Text = "") -> str:
        csrf = state.csrf.token_for(request)
        if not (keep and other):
            fields = (("keep", "The note to keep", keep),
                      ("other", "The note merged into it (then moved to the trash)", other))  # fmt: skip
            form = two_notes_form("/merge", fields, "Plan the merge")
            return page("Merge", "/merge", form, csrf, "picker")
        swap = "/merge?" + urlencode({"keep": other, "other": keep})
        body = (
            tag(
                "p",
                f"{tag('code', h(other))} into {tag('code', h(keep))} ("
                + tag("a", "keep the other one instead", href=swap, id="swap")
                + ")",
                id="merge-pair",
                data_keep=keep,
                data_other=other,
            )
            + tag("section", "", id="merge-plan", aria_label="What the merge does")
            + tag("section", "", id="diff", aria_label="Diff")
            + tag("p", "", id="status", role="status")
        )
        return page("Merge", "/merge", body, csrf, "merge")

    return router
