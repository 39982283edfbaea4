"""Duplicates and History: long lists rendered on the server one page at a time (``?page=N``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse

from vaultlens.errors import VaultlensError
from vaultlens.services.verbs import changing, finding
from vaultlens.services.verbs.changing import SHOW_BEFORE, Befores, Entry, Group
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
Record = Entry | Group


def local_time(stamp: str) -> str:
    """A journal time (UTC, ISO with microseconds) in this machine's zone to the second; the UTC
    time in its title."""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return h(stamp)
    utc = when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    shown = when.astimezone().strftime("%Y-%m-%d %H:%M:%S")
    return tag("time", h(shown), datetime=when.astimezone(UTC).isoformat(timespec="seconds"), title=utc)


def notes_cell(record: Record) -> str:
    """The notes a record changed, each a link; an operation group (a split, a merge) names several."""
    paths = record.paths if isinstance(record, Group) else [record.path]
    links = ", ".join(tag("a", h(p), href=note_href(p)) for p in paths[:3])
    more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
    return tag("td", (f"{len(paths)} notes: " if len(paths) > 1 else "") + links + more)


def threads(records: list[Record]) -> list[tuple[Record, list[Record]]]:
    """Each operation, newest first, with the undos of it (and undos of those) in the order made."""
    by_id = {r.op_id: r for r in records}

    def root(r: Record) -> Record:
        seen = {r.op_id}
        while r.undo_of in by_id and r.undo_of not in seen:
            r = by_id[r.undo_of]
            seen.add(r.op_id)
        return r

    under: dict[str, list[Record]] = {}
    tops: list[Record] = []
    for r in records:  # oldest first
        top = root(r)
        if top is r:
            tops.append(r)
        else:
            under.setdefault(top.op_id, []).append(r)
    return [(top, under.get(top.op_id, [])) for top in reversed(tops)]


def actions_cell(r: Record, label: str) -> str:
    buttons = []
    if r.state in UNDOABLE and not r.undone_by:
        buttons.append(tag("button", "Undo", type="button", class_="undo", aria_label=f"Undo: {label}"))
    if r.state == "planned":
        buttons.append(
            tag("button", "Discard", type="button", class_="discard", aria_label=f"Discard: {label}")
        )
    return tag("td", " ".join(buttons), class_="row-actions")


def history_row(r: Record, undo_of: Record | None = None) -> str:
    """One operation; ``undo_of``: the operation this row undoes (shown under it)."""
    label = r.summary if undo_of is None else f"undo of {undo_of.summary}"
    change = (
        tag("span", h(r.summary), class_="summary-text")
        if undo_of is None
        else tag("span", "Undo of the change above", class_="undo-label")
    )
    before = tag(
        "a", "Text before", href=before_href(r.op_id), class_="before", aria_label=f"Text before: {label}"
    )
    return tag(
        "tr",
        notes_cell(r)
        + tag("td", change + " " + before, class_="summary")
        + tag("td", local_time(r.updated), class_="when")
        + tag("td", h(r.state.replace("_", " ")), class_="state")
        + actions_cell(r, label),
        class_="entry" if undo_of is None else "entry undo-entry",
        data_op=r.op_id,
        data_state=r.state,
        data_undo_of=undo_of.op_id if undo_of else None,
    )


def history_body(records: list[Record], page_no: int) -> str:
    """The journal's operations, newest first, a page of them; each undo under what it undid."""
    found = threads(records)
    shown = found[page_no * PAGE : (page_no + 1) * PAGE]
    rows = "".join(history_row(top) + "".join(history_row(u, top) for u in undos) for top, undos in shown)
    head = "".join(tag("th", t, scope="col") for t in ("Note", "Change", "When", "State", "Actions"))
    table = tag("table", tag("thead", tag("tr", head)) + tag("tbody", rows), id="history")
    if not shown:
        table = tag("p", "No change was planned or made in this vault yet.", class_="empty")
    return (
        tag("div", table + pager("/history", page_no, len(found) > (page_no + 1) * PAGE), id="history-list")
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
            records = changing.history(state.app)
        except VaultlensError as exc:
            return HTMLResponse(page("History", "/history", problem(exc), csrf), exc.http_status)
        return HTMLResponse(page("History", "/history", history_body(records, page_no), csrf, "history"))

    @router.get("/history/{op_id}/before", response_class=HTMLResponse)
    def before_page(op_id: str) -> HTMLResponse:
        title = "Text before the change"
        try:
            found = changing.show_before(state.app, op_id)
        except VaultlensError as exc:
            return HTMLResponse(page(title, "/history", problem(exc), csrf), exc.http_status)
        return HTMLResponse(page(title, "/history", before_body(found), csrf))

    return router
