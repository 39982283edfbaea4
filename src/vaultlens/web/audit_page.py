"""Audit: the structure dashboard (charts, the notes behind each count, the tag tree, the link graph,
link tables), the Canvas map, topics. The last report is kept across restarts (the audit saves it
in the vault's audit folder; ``auditing.saved_structure`` reads it back)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, HTMLResponse

from vaultlens.errors import InvalidInput
from vaultlens.services.verbs import auditing
from vaultlens.services.verbs.auditing import MAP, SavedStructure, StructureReport
from vaultlens.web.charts import bar_chart
from vaultlens.web.layout import h, note_href, page, table, tag
from vaultlens.web.lists import PAGE, pager
from vaultlens.web.state import WebState

TOP = 15  # rows in a chart or a short list; tables of links are paginated
LISTED = 200  # notes named under one count (the saved JSON report lists them all)
TREE = 200  # tags in the tag tree
# the counts that name notes: (the report's list, the heading, what it means)
NAMED = [
    ("orphans", "Orphans", "Notes no other note links to and that link to none."),
    ("orphans_no_incoming", "No incoming links", "Notes no other note links to."),
    ("no_outgoing", "No outgoing links", "Notes that link to no other note."),
]
# what the summary's counts are called (the others by their key)
LABELS = {
    "orphans_no_incoming": "no incoming links",
    "no_outgoing": "no outgoing links",
    "skipped_files": "skipped files",
    "same_name_groups": "same-name groups",
}


def clusters_html(state: WebState) -> str:
    """The topic clusters, once found from this page (stored vectors, no model)."""
    button = tag("button", "Find topic clusters (no model)", id="run-clusters", type="button")
    if state.topics is None:
        return button
    items = "".join(
        tag(
            "li",
            tag("strong", h(c.name))
            + h(f" — {c.size} notes; {', '.join(c.terms[:6])}")
            + tag("ul", "".join(tag("li", tag("a", h(p), href=note_href(p))) for p in c.notes[:TOP])),
            class_="cluster",
            data_size=str(c.size),
        )
        for c in state.topics.clusters.clusters[:50]
    )
    return (
        button + tag("ol", items, id="clusters")
        if items
        else button + tag("p", "No cluster found.", id="clusters")
    )


def last_audit(state: WebState) -> SavedStructure | None:
    """The last structure report: this process's, else the one an earlier run saved."""
    if state.audit is None:
        state.audit = auditing.saved_structure(state.app)
    return state.audit


def note_list(paths: Sequence[str], id_: str) -> str:
    links = "".join(tag("li", tag("a", h(p), href=note_href(p))) for p in paths[:LISTED])
    more = (
        tag("p", f"And {len(paths) - LISTED} more (the saved JSON report lists them all).", class_="empty")
        if len(paths) > LISTED
        else ""
    )
    return tag("ul", links, id=id_, class_="named-notes") + more


def named_html(r: StructureReport) -> str:
    """The notes behind each count, each a link to its note view (collapsed: a list can be long)."""
    lists = {"orphans": r.orphans, "orphans_no_incoming": r.orphans_no_incoming, "no_outgoing": r.no_outgoing}
    parts = []
    for key, title, meaning in NAMED:
        paths = lists[key]
        body = tag("p", h(meaning), class_="hint") + (
            note_list(paths, f"notes-{key}") if paths else tag("p", "None.", class_="empty")
        )
        parts.append(tag("details", tag("summary", h(f"{title} ({len(paths)})")) + body, id=f"named-{key}"))
    broken = sorted({str(i["source"]) for i in r.broken_links})
    parts.append(
        tag(
            "details",
            tag("summary", h(f"Notes with broken links ({len(broken)})"))
            + tag("p", "Each broken link, with its line, is in the table below.", class_="hint")
            + (note_list(broken, "notes-broken_links") if broken else tag("p", "None.", class_="empty")),
            id="named-broken_links",
        )
    )
    return tag("h2", "The notes behind the counts") + "".join(parts)


def summary_html(r: StructureReport) -> str:
    anchors = {key: f"#named-{key}" for key, _, _ in NAMED} | {"broken_links": "#named-broken_links"}
    items = []
    for key, value in r.summary().items():
        count = tag("a", str(value), href=anchors[key]) if key in anchors and value else str(value)
        items.append(
            tag("dt", h(LABELS.get(key, key.replace("_", " ")))) + tag("dd", count, data_summary=key)
        )
    return tag("dl", "".join(items), class_="summary")


def tag_tree_html(tree: Mapping[str, int]) -> str:
    """The tag tree, folded: the whole tree closed, each tag with sub-tags a fold of its own."""
    shown = sorted(tree.items())[:TREE]
    children: dict[str, list[str]] = {}
    for name, _ in shown:
        parent = name.rpartition("/")[0]
        children.setdefault(parent if parent in tree else "", []).append(name)

    def branch(name: str) -> str:
        label = h(name.rpartition("/")[2]) + " " + tag("span", str(tree[name]), class_="count")
        kids = children.get(name)
        if not kids:
            return tag("li", label, data_tag=name)
        inner = tag("ul", "".join(branch(k) for k in kids))
        return tag("li", tag("details", tag("summary", label) + inner), data_tag=name)

    roots = "".join(branch(name) for name in children.get("", []))
    return tag(
        "details",
        tag("summary", h(f"Tag tree ({len(tree)} tags)")) + tag("ul", roots, id="tag-tree"),
        id="tag-tree-box",
    )


def audit_body(state: WebState, page_no: int) -> str:
    button = tag("button", "Run the structure audit", id="run-audit", type="button") + tag(
        "p", "", id="audit-progress", role="status"
    )
    topics = tag("h2", "Topics") + clusters_html(state)
    saved = last_audit(state)
    if saved is None:
        return button + tag("p", "No structure audit has run on this vault yet.", class_="empty") + topics
    r = saved.report
    when = saved.saved.astimezone()
    last = tag(
        "p",
        "Last run: "
        + tag(
            "time",
            h(when.strftime("%Y-%m-%d %H:%M:%S")),
            datetime=saved.saved.astimezone(UTC).isoformat(timespec="seconds"),
            title=saved.saved.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        )
        + ". Run it again to see the vault as it is now.",
        id="audit-when",
    )
    folders = sorted(
        ((f.strip("/") or "(vault root)", c.get("notes", 0)) for f, c in r.folders.items()),
        key=lambda x: -x[1],
    )
    tags = sorted(r.tag_counts.items(), key=lambda x: -x[1])
    components = tag(
        "ol",
        "".join(
            tag("li", f"{len(c)} notes: " + ", ".join(tag("a", h(p), href=note_href(p)) for p in c[:5]))
            for c in r.components[:TOP]
        ),
        id="components",
    )
    hubs = tag(
        "ol",
        "".join(
            tag(
                "li",
                tag("a", h(x["path"]), href=note_href(str(x["path"])))
                + h(f" ({', '.join(f'{k} {v}' for k, v in x.items() if k != 'path')})"),
            )
            for x in r.hubs
        ),
        id="hubs",
    )
    lo, hi = page_no * PAGE, (page_no + 1) * PAGE

    def link_rows(items: Sequence[Mapping[str, object]], extra: str) -> list[list[str]]:
        def shown(value: object) -> str:
            return ", ".join(map(str, value)) if isinstance(value, list) else str(value or "")

        return [
            [
                tag(
                    "a",
                    h(i["source"]),
                    href=note_href(str(i["source"]), int(str(i["line"])), int(str(i["line"]))),
                ),
                str(i["line"]),
                tag("code", h(i["raw"])),
                h(shown(i.get(extra))),
            ]
            for i in items[lo:hi]
        ]

    more = len(r.broken_links) > hi or len(r.ambiguous_links) > hi
    return (
        button
        + last
        + summary_html(r)
        + tag(
            "a",
            "Download the Canvas map",
            id="canvas-download",
            href="/ui/api/audit/canvas",
            download="vault-map.canvas",
        )
        + named_html(r)
        + tag("h2", "Notes per folder")
        + bar_chart("chart-folders", "Notes per folder", folders[:TOP])
        + tag("h2", "Tags")
        + bar_chart("chart-tags", "Notes per tag", tags[:TOP])
        + tag_tree_html(r.tag_tree)
        + tag("h2", "Link graph")
        + tag("h3", "Components")
        + components
        + tag("h3", "Hubs")
        + hubs
        + tag("h2", "Broken links")
        + table("broken-links", ["Note", "Line", "Link", "Alias of"], link_rows(r.broken_links, "alias_of"))
        + tag("h2", "Ambiguous links")
        + table(
            "ambiguous-links",
            ["Note", "Line", "Link", "Candidates"],
            link_rows(r.ambiguous_links, "candidates"),
        )
        + pager("/audit", page_no, more)
        + topics
    )


def build(state: WebState) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/audit", response_class=HTMLResponse)
    def audit_page(
        request: Request, page_no: Annotated[int, Query(alias="page", ge=0, le=100_000)] = 0
    ) -> str:
        return page("Audit", "/audit", audit_body(state, page_no), state.csrf.token_for(request), "audit")

    @router.get("/ui/api/audit/canvas")
    def canvas() -> FileResponse:
        saved = last_audit(state)
        if saved is None or MAP not in saved.files:
            raise InvalidInput(
                "No structure audit has run on this vault yet.", hint="Run it on /audit first."
            )
        return FileResponse(saved.files[MAP], media_type="application/json", filename="vault-map.canvas")

    return router
