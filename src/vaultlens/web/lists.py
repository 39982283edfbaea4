"""Duplicates and History: long lists rendered on the server one page at a time (``?page=N``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from vaultlens.errors import VaultlensError
from vaultlens.services.verbs import changing, finding
from vaultlens.services.verbs.changing import SHOW_BEFORE, Befores, Entry, Group
from vaultlens.services.verbs.finding import Dismissed, DuplicatePair, DuplicateReport
from vaultlens.web.layout import h, note_href, page, section_ref, tag
from vaultlens.web.pages import problem
from vaultlens.web.state import WebState

NOT_A_PAIR = "Exact copies are listed as a set and cannot be dismissed."
PAGE = 25  # items per kind (duplicates) or entries (history) on one page
KINDS = [
    ("exact", "Exact copies"),
    ("near_duplicate", "Near duplicates"),
    ("contained", "Contained in another note"),
    ("translation", "Translations"),
    ("shared_passage", "Shared passages"),
]
# what a pair's score is, per kind: the word shown after it, and the sentence under the kind's heading
SCORES = {
    "near_duplicate": (
        "overlap",
        "The score is the share of one note's sections found in the other; both notes are covered at least "
        "as far as the duplicate threshold.",
    ),
    "contained": (
        "contained",
        "The score is the share of the smaller note's sections found in the larger one.",
    ),
    "translation": (
        "matched",
        "The score is the share of each note's sections matched by a section of the other across the two "
        "languages (the lower of the two notes).",
    ),
    "shared_passage": (
        "alike",
        "The score is how closely the copied passage matches in the two notes (100% is the same lines); the "
        "rest of the notes differs.",
    ),
}
COPY_KINDS = ("near_duplicate", "contained")  # whole-note pairs that can be copies of one text
EXACT_HELP = (
    "Notes whose text is the same (line endings, a BOM and trailing spaces aside), each set listed once."
)


def pager(href: str, page_no: int, more: bool) -> str:
    links = []
    if page_no > 0:
        links.append(
            tag("a", "Previous page", id="prev-page", href=f"{href}?{urlencode({'page': page_no - 1})}")
        )
    if more:
        links.append(tag("a", "Next page", id="next-page", href=f"{href}?{urlencode({'page': page_no + 1})}"))
    return tag("nav", " ".join(links), class_="pager", aria_label="Pages of this list") if links else ""


def score_html(kind: str, score: float) -> str:
    word, meaning = SCORES[kind]
    return tag("span", f"{score:.0%} {word}", class_="score", title=meaning, data_score=f"{score:.4f}")


def pair_html(a: str, b: str, score: str = "", extra: str = "", why_not: str | None = None) -> str:
    """One pair with its actions; ``why_not``: why it cannot be dismissed (the button stays, disabled)."""
    review = "/review?" + urlencode({"a": a, "b": b})
    head = tag("a", h(a), href=note_href(a)) + " ↔ " + tag("a", h(b), href=note_href(b)) + score
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


def set_html(paths: list[str], what: str, extra: str = "", why_not: str | None = None) -> str:
    """Copies of one text as one item: every note of the set, each a link (not every pair of them)."""
    notes = tag(
        "ul", "".join(tag("li", tag("a", h(p), href=note_href(p))) for p in paths), class_="set-notes"
    )
    actions = tag(
        "a",
        "Review two of them",
        href="/review?" + urlencode({"a": paths[0], "b": paths[1]}),
        class_="review-pair",
    ) + tag(
        "a",
        "Merge into…",
        href="/merge?" + urlencode({"keep": paths[0], "other": paths[1]}),
        class_="merge-pair",
        aria_label=f"Merge into… {paths[0]} kept, {paths[1]} merged into it",
    )
    if why_not:
        actions += tag("button", "Dismiss", type="button", class_="dismiss", disabled=True, title=why_not)
    return tag(
        "li",
        tag("strong", h(f"{len(paths)} {what}")) + notes + extra + tag("div", actions, class_="actions"),
        class_="copy-set",
        data_paths="\n".join(paths),
        data_size=str(len(paths)),
    )


def passages_html(pair: DuplicatePair) -> str:
    rows = "".join(
        tag("li", section_ref(p.a, pair.a) + " ↔ " + section_ref(p.b, pair.b)) for p in pair.passages
    )
    if not rows:
        ev = pair.evidence
        rows = tag("li", section_ref(ev.source, pair.a) + " ↔ " + section_ref(ev.other, pair.b))
    return tag("ul", rows, class_="passages")


def copy_sets(pairs: list[DuplicatePair]) -> tuple[list[list[DuplicatePair]], list[DuplicatePair]]:
    """Whole notes that are all copies of one another (three or more, every pair of them listed as a
    near duplicate or contained): (those sets, each as its pairs; the other pairs)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    copies = [p for p in pairs if p.kind in COPY_KINDS]
    for p in copies:
        parent[find(p.a)] = find(p.b)
    members: dict[str, set[str]] = {}
    sets: dict[str, list[DuplicatePair]] = {}
    for p in copies:
        members.setdefault(find(p.a), set()).update((p.a, p.b))
        sets.setdefault(find(p.a), []).append(p)
    whole = {
        r
        for r, ps in sets.items()
        if len(members[r]) >= 3 and len(ps) == len(members[r]) * (len(members[r]) - 1) // 2
    }
    return [sets[r] for r in sets if r in whole], [
        p for p in pairs if p.kind not in COPY_KINDS or find(p.a) not in whole
    ]


def kind_items(report: DuplicateReport, lo: int, hi: int) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Each kind's items on this page, and each kind's count (a set of copies counts once, as a near
    duplicate, in place of its pairs)."""
    items: dict[str, list[str]] = {kind: [] for kind, _ in KINDS}
    counts = dict(report.counts)
    for group in report.exact[lo:hi]:
        what = "identical copies" if group.kind == "identical" else "copies (the front matter differs)"
        items["exact"].append(set_html(group.paths, what, why_not=NOT_A_PAIR))
    sets, single = copy_sets(report.pairs[lo:hi])
    for found in sets:
        paths = sorted({x for p in found for x in (p.a, p.b)})
        inner = tag(
            "details",
            tag("summary", f"The {len(found)} pairs")
            + tag(
                "ul", "".join(pair_html(p.a, p.b, score_html(p.kind, p.score)) for p in found), class_="pairs"
            ),
        )
        items["near_duplicate"].append(set_html(paths, "near-identical copies", inner))
        for p in found:
            counts[p.kind] -= 1
        counts["near_duplicate"] += 1
    for pair in (*single, *report.shared_passages[lo:hi]):
        items[pair.kind].append(
            pair_html(pair.a, pair.b, score_html(pair.kind, pair.score), passages_html(pair))
        )
    return items, counts


def duplicates_body(report: DuplicateReport, dismissed: list[Dismissed], page_no: int) -> str:
    lo, hi = page_no * PAGE, (page_no + 1) * PAGE
    items, counts = kind_items(report, lo, hi)
    summary = tag(
        "ul",
        "".join(
            tag("li", tag("a", h(title), href=f"#kind-{kind}") + f": {counts.get(kind, 0)}", data_count=kind)
            for kind, title in KINDS
        )
        + tag("li", f"Dismissed pairs: {len(dismissed)}", data_count="dismissed"),
        class_="kind-counts",
        aria_label="How many of each kind",
    )
    sections = "".join(
        tag(
            "section",
            tag("h2", h(f"{title} ({counts.get(kind, 0)})"))
            + tag("p", h(SCORES[kind][1] if kind in SCORES else EXACT_HELP), class_="score-help")
            + (
                tag("ul", "".join(items[kind]), class_="pairs")
                if items[kind]
                else tag("p", "None.", class_="empty")
            ),
            class_="kind",
            id=f"kind-{kind}",
            data_kind=kind,
        )
        for kind, title in KINDS
    )
    same = [
        set_html(
            names, "notes with the same name", why_not="Same-named notes are listed by name, not by content."
        )
        for names in report.same_name[lo:hi]
    ]
    if same:
        sections += tag(
            "section",
            tag("h2", h(f"Same name, different folders ({counts.get('same_name', 0)})"))
            + tag("ul", "".join(same), class_="pairs"),
            id="same-name",
        )
    more = any(len(x) > hi for x in (report.exact, report.same_name)) or (
        report.total_pairs > hi or report.total_shared_passages > hi
    )
    return tag(
        "div",
        summary + sections + dismissed_html(dismissed) + pager("/duplicates", page_no, more),
        id="duplicates-list",
    ) + tag("p", "", id="status", role="status")


def dismissed_html(dismissed: list[Dismissed]) -> str:
    """The pairs hidden until either note changes, each with Restore."""
    items = "".join(
        tag(
            "li",
            tag("a", h(d.a), href=note_href(d.a))
            + " ↔ "
            + tag("a", h(d.b), href=note_href(d.b))
            + " "
            + tag(
                "button", "Restore", type="button", class_="restore", aria_label=f"Restore {d.a} and {d.b}"
            ),
            class_="dismissed-pair",
            data_a=d.a,
            data_b=d.b,
        )
        for d in dismissed
    )
    return tag(
        "section",
        tag("h2", h(f"Dismissed pairs ({len(dismissed)})"))
        + tag("p", "Hidden until either note changes; Restore lists a pair again.", class_="score-help")
        + (tag("ul", items) if items else tag("p", "None.", class_="empty")),
        id="dismissed",
    )


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

    @router.get("/duplicates", response_class=HTMLResponse)
    def duplicates_page(
        request: Request, page_no: Annotated[int, Query(alias="page", ge=0, le=100_000)] = 0
    ) -> HTMLResponse:
        csrf = state.csrf.token_for(request)
        try:
            report = finding.duplicates(state.app, limit=(page_no + 1) * PAGE)
            dismissed = finding.dismissed(state.app)
        except VaultlensError as exc:
            return HTMLResponse(page("Duplicates", "/duplicates", problem(exc), csrf), exc.http_status)
        body = duplicates_body(report, dismissed, page_no)
        return HTMLResponse(page("Duplicates", "/duplicates", body, csrf, "duplicates"))

    @router.get("/history", response_class=HTMLResponse)
    def history_page(
        request: Request, page_no: Annotated[int, Query(alias="page", ge=0, le=100_000)] = 0
    ) -> HTMLResponse:
        csrf = state.csrf.token_for(request)
        try:
            records = changing.history(state.app)
        except VaultlensError as exc:
            return HTMLResponse(page("History", "/history", problem(exc), csrf), exc.http_status)
        return HTMLResponse(page("History", "/history", history_body(records, page_no), csrf, "history"))

    @router.get("/history/{op_id}/before", response_class=HTMLResponse)
    def before_page(request: Request, op_id: str) -> HTMLResponse:
        csrf = state.csrf.token_for(request)
        title = "Text before the change"
        try:
            found = changing.show_before(state.app, op_id)
        except VaultlensError as exc:
            return HTMLResponse(page(title, "/history", problem(exc), csrf), exc.http_status)
        return HTMLResponse(page(title, "/history", before_body(found), csrf))

    return router
