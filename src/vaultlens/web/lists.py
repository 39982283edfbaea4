"""Duplicates and History: long lists rendered on the server one page at a time (``?page=N``)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from vaultlens.errors import VaultlensError
from vaultlens.services.verbs import changing, finding
from vaultlens.services.verbs.changing import SHOW_BEFORE, Befores
from vaultlens.web.layout import h, note_href, page, tag
from vaultlens.web.pages import problem, section_ref
from vaultlens.web.state import WebState

NOT_A_PAIR = "Exact copies are listed as a group and cannot be dismissed."
PAGE = 25  # items per kind (duplicates) or entries (history) on one page
KINDS = [
    ("exact", "Exact copies"),
    ("near_duplicate", "Near duplicates"),
    ("contained", "Contained in another note"),
    ("translation", "Translations"),
    ("shared_passage", "Shared passages"),
]


def pager(href: str, page_no: int, more: bool) -> str:
    links = []
    if page_no > 0:
        links.append(
            tag("a", "Previous page", id="prev-page", href=f"{href}?{urlencode({'page': page_no - 1})}")
        )
    if more:
        links.append(tag("a", "Next page", id="next-page", href=f"{href}?{urlencode({'page': page_no + 1})}"))
    return tag("nav", " ".join(links), class_="pager", aria_label="Pages of this list") if links else ""


def pair_html(a: str, b: str, score: float | None, extra: str = "", why_not: str | None = None) -> str:
    """One pair with its actions; ``why_not``: why it cannot be dismissed (the button stays, disabled)."""
    review = "/review?" + urlencode({"a": a, "b": b})
    head = (
        tag("a", h(a), href=note_href(a))
        + " ↔ "
        + tag("a", h(b), href=note_href(b))
        + (tag("span", f"{score:.2f}", class_="score") if score is not None else "")
    )
    merge = "/merge?" + urlencode({"keep": a, "other": b})
    actions = (
        tag("a", "Review this pair", href=review, class_="review-pair")
        + tag(
            "a",
            "Merge into…",
            href=merge,
            class_="merge-pair",
            aria_label=f"Merge into… {a} kept, {b} merged into it",
        )
        + tag(
            "button",
            "Dismiss",
            type="button",
            class_="dismiss",
            disabled=why_not is not None,
            title=why_not,
            aria_label=f"Dismiss {a} and {b}",
        )
    )
    return tag("li", head + extra + tag("div", actions, class_="actions"), class_="pair", data_a=a, data_b=b)


def passages_html(pair: dict[str, Any]) -> str:
    rows = "".join(
        tag("li", section_ref({**p["a"]}, pair["a"]) + " ↔ " + section_ref({**p["b"]}, pair["b"]))
        for p in pair.get("passages", [])
    )
    if not rows:
        rows = tag(
            "li",
            section_ref(pair["evidence"]["source"], pair["a"])
            + " ↔ "
            + section_ref(pair["evidence"]["other"], pair["b"]),
        )
    return tag("ul", rows, class_="passages")


def duplicates_body(report: dict[str, Any], page_no: int) -> str:
    lo, hi = page_no * PAGE, (page_no + 1) * PAGE
    items: dict[str, list[str]] = {kind: [] for kind, _ in KINDS}
    for group in report["exact"][lo:hi]:
        first, *rest = group["paths"]
        items["exact"] += [pair_html(first, other, None, why_not=NOT_A_PAIR) for other in rest]
    for pair in report["pairs"][lo:hi]:
        items[pair["kind"]].append(pair_html(pair["a"], pair["b"], pair["score"], passages_html(pair)))
    for pair in report["shared_passages"][lo:hi]:
        items["shared_passage"].append(pair_html(pair["a"], pair["b"], pair["score"], passages_html(pair)))
    sections = "".join(
        tag(
            "section",
            tag("h2", h(title))
            + (
                tag("ul", "".join(items[kind]), class_="pairs")
                if items[kind]
                else tag("p", "None.", class_="empty")
            ),
            class_="kind",
            data_kind=kind,
        )
        for kind, title in KINDS
    )
    same = [
        pair_html(first, other, None, why_not="Same-named notes are listed by name, not by content.")
        for first, *rest in report["same_name"][lo:hi]
        for other in rest
    ]
    if same:
        sections += tag(
            "section",
            tag("h2", "Same name, different folders") + tag("ul", "".join(same), class_="pairs"),
            id="same-name",
        )
    more = any(len(report[key]) > hi for key in ("exact", "same_name")) or (
        report["total_pairs"] > hi or report["total_shared_passages"] > hi
    )
    return sections + pager("/duplicates", page_no, more) + tag("p", "", id="status", role="status")


UNDOABLE = ("applied", "partial")  # a group a crash cut short is undone like an applied one (the CLI's undo)


def notes_cell(entry: dict[str, Any]) -> str:
    """The notes an entry changed, each a link; an operation group (a split, a merge) names several."""
    paths = entry["paths"] if entry.get("kind") == "group" else [entry["path"]]
    links = ", ".join(tag("a", h(p), href=note_href(p)) for p in paths[:3])
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return tag("td", (f"{len(paths)} notes: " if len(paths) > 1 else "") + links + more)


def history_body(entries: list[dict[str, Any]], page_no: int) -> str:
    newest = entries[::-1]
    shown = newest[page_no * PAGE : (page_no + 1) * PAGE]
    rows = "".join(
        tag(
            "tr",
            notes_cell(e)
            + tag(
                "td",
                h(e["summary"])
                + " "
                + tag(
                    "a",
                    "Text before",
                    href=before_href(e["op_id"]),
                    class_="before",
                    aria_label=f"Text before: {e['summary']}",
                ),
            )
            + tag("td", tag("time", h(e["updated"]), datetime=e["updated"]))
            + tag("td", h(e["state"]) + (" (undone)" if e.get("undone_by") else ""), class_="state")
            + tag(
                "td",
                tag("button", "Undo", type="button", class_="undo", aria_label=f"Undo: {e['summary']}")
                if e["state"] in UNDOABLE and not e.get("undone_by")
                else "",
            ),
            class_="entry",
            data_op=e["op_id"],
            data_state=e["state"],
        )
        for e in shown
    )
    head = "".join(tag("th", t, scope="col") for t in ("Note", "Change", "When", "State", "Undo"))
    table = tag("table", tag("thead", tag("tr", head)) + tag("tbody", rows), id="history")
    if not shown:
        table = tag("p", "No change was planned or made in this vault yet.", class_="empty")
    return (
        table
        + pager("/history", page_no, len(newest) > (page_no + 1) * PAGE)
        + tag("section", "", id="diff", aria_label="Diff")
        + tag("p", "", id="status", role="status")
    )


def before_href(op_id: str) -> str:
    return f"/history/{quote(op_id, safe='')}/before"


def before_body(found: Befores) -> str:
    """The journal's copy of what each note held before the operation: read-only, escaped, with
    what a browser would hide made visible (``vaultlens history OP --show-before`` gives the bytes)."""
    parts = []
    for b in found.items:
        head = tag("h2", h(b.path)) + tag(
            "p", f"Operation {h(b.op_id)} · {h(b.state.replace('_', ' '))}", class_="meta"
        )
        if b.data is None:
            body = tag("p", "The note did not exist before: this operation created it.", class_="empty")
        else:
            body = tag("pre", h(b.visible()), class_="before-text", aria_label=f"Text of {b.path} before")
        parts.append(tag("section", head + body, class_="before", data_op=b.op_id, data_path=b.path))
    exact = SHOW_BEFORE.format(op=found.op_id)
    return (
        tag("p", "What vaultlens's journal kept of each note before the change; nothing here writes.")
        + "".join(parts)
        + tag(
            "p",
            f"The exact bytes, to save to a file outside the vault: {tag('code', h(exact) + ' --output FILE')}",
        )
        + tag("p", tag("a", "Back to History", href="/history"))
    )


def build(state: WebState) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    csrf = state.csrf.token

    @router.get("/duplicates", response_class=HTMLResponse)
    def duplicates_page(page_no: Annotated[int, Query(alias="page", ge=0, le=100_000)] = 0) -> HTMLResponse:
        try:
            report = finding.duplicates(state.app, limit=(page_no + 1) * PAGE).as_dict()
        except VaultlensError as exc:
            return HTMLResponse(page("Duplicates", "/duplicates", problem(exc), csrf), exc.http_status)
        return HTMLResponse(
            page("Duplicates", "/duplicates", duplicates_body(report, page_no), csrf, "duplicates")
        )

    @router.get("/history", response_class=HTMLResponse)
    def history_page(page_no: Annotated[int, Query(alias="page", ge=0, le=100_000)] = 0) -> HTMLResponse:
        try:
            entries = [e.as_dict() for e in changing.history(state.app)]
        except VaultlensError as exc:
            return HTMLResponse(page("History", "/history", problem(exc), csrf), exc.http_status)
        return HTMLResponse(page("History", "/history", history_body(entries, page_no), csrf, "history"))

    @router.get("/history/{op_id}/before", response_class=HTMLResponse)
    def before_page(op_id: str) -> HTMLResponse:
        title = "Text before the change"
        try:
            found = changing.show_before(state.app, op_id)
        except VaultlensError as exc:
            return HTMLResponse(page(title, "/history", problem(exc), csrf), exc.http_status)
        return HTMLResponse(page(title, "/history", before_body(found), csrf))

    return router
