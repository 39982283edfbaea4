"""Audit: the structure dashboard (charts, tag tree, graph, link tables), the Canvas map, topics."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse, HTMLResponse

from vaultlens.errors import InvalidInput
from vaultlens.services.verbs.auditing import MAP
from vaultlens.web.charts import bar_chart
from vaultlens.web.layout import h, note_href, page, table, tag
from vaultlens.web.lists import PAGE, pager
from vaultlens.web.state import WebState

TOP = 15  # rows in a chart or a short list; tables of links are paginated
MAX_DEPTH = 6  # tag tree indents app.css has a rule for (no style= attribute: the page's CSP refuses it)


def clusters_html(state: WebState) -> str:
    """The topic clusters, once found from this page (stored vectors, no model)."""
    button = tag("button", "Find topic clusters (no model)", id="run-clusters", type="button")
    if state.topics is None:
        return button
    found = state.topics.as_dict()
    items = "".join(
        tag(
            "li",
            tag("strong", h(c["name"]))
            + h(f" — {c['size']} notes; {', '.join(c['terms'][:6])}")
            + tag("ul", "".join(tag("li", tag("a", h(p), href=note_href(p))) for p in c["notes"][:TOP])),
            class_="cluster",
            data_size=str(c["size"]),
        )
        for c in found["clusters"][:50]
    )
    return (
        button + tag("ol", items, id="clusters")
        if items
        else button + tag("p", "No cluster found.", id="clusters")
    )


def audit_body(state: WebState, page_no: int) -> str:
    button = tag("button", "Run the structure audit", id="run-audit", type="button") + tag(
        "p", "", id="audit-progress", role="status"
    )
    topics = tag("h2", "Topics") + clusters_html(state)
    result = state.audit
    if result is None:
        return button + tag("p", "No audit run yet since the server started.", class_="empty") + topics
    r = result.audit.report.as_dict()
    s = r["summary"]
    summary = tag(
        "dl",
        "".join(tag("dt", h(k.replace("_", " "))) + tag("dd", str(v), data_summary=k) for k, v in s.items()),
        class_="summary",
    )
    folders = sorted(
        ((f.strip("/") or "(vault root)", c.get("notes", 0)) for f, c in r["folders"].items()),
        key=lambda x: -x[1],
    )
    tags = sorted(r["tag_counts"].items(), key=lambda x: -x[1])
    tree = tag(
        "ul",
        "".join(
            tag(
                "li",
                h(t) + " " + tag("span", str(n), class_="count"),
                data_depth=min(t.count("/"), MAX_DEPTH),
            )
            for t, n in sorted(r["tag_tree"].items())[:200]
        ),
        id="tag-tree",
    )
    components = tag(
        "ol",
        "".join(
            tag(
                "li",
                f"{c['size']} notes: " + ", ".join(tag("a", h(p), href=note_href(p)) for p in c["notes"][:5]),
            )
            for c in r["components"][:TOP]
        ),
        id="components",
    )
    hubs = tag(
        "ol",
        "".join(
            tag("li", tag("a", h(x["path"]), href=note_href(x["path"])) + h(f" ({_degree(x)})"))
            for x in r["hubs"]
        ),
        id="hubs",
    )
    lo, hi = page_no * PAGE, (page_no + 1) * PAGE

    def link_rows(items: list[dict[str, Any]], extra: str) -> list[list[str]]:
        return [
            [
                tag("a", h(i["source"]), href=note_href(i["source"], i["line"], i["line"])),
                str(i["line"]),
                tag("code", h(i["raw"])),
                h(", ".join(i.get(extra) or []) if isinstance(i.get(extra), list) else i.get(extra) or ""),
            ]
            for i in items[lo:hi]
        ]

    more = len(r["broken_links"]) > hi or len(r["ambiguous_links"]) > hi
    return (
        button
        + summary
        + tag(
            "a",
            "Download the Canvas map",
            id="canvas-download",
            href="/ui/api/audit/canvas",
            download="vault-map.canvas",
        )
        + tag("h2", "Notes per folder")
        + bar_chart("chart-folders", "Notes per folder", folders[:TOP])
        + tag("h2", "Tags")
        + bar_chart("chart-tags", "Notes per tag", tags[:TOP])
        + tree
        + tag("h2", "Link graph")
        + tag("h3", "Components")
        + components
        + tag("h3", "Hubs")
        + hubs
        + tag("h2", "Broken links")
        + table(
            "broken-links", ["Note", "Line", "Link", "Alias of"], link_rows(r["broken_links"], "alias_of")
        )
        + tag("h2", "Ambiguous links")
        + table(
            "ambiguous-links",
            ["Note", "Line", "Link", "Candidates"],
            link_rows(r["ambiguous_links"], "candidates"),
        )
        + pager("/audit", page_no, more)
        + topics
    )


def _degree(hub: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in hub.items() if k != "path")


def build(state: WebState) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/audit", response_class=HTMLResponse)
    def audit_page(page_no: Annotated[int, Query(alias="page", ge=0, le=100_000)] = 0) -> str:
        return page("Audit", "/audit", audit_body(state, page_no), state.csrf.token, "audit")

    @router.get("/ui/api/audit/canvas")
    def canvas() -> FileResponse:
        if state.audit is None or MAP not in state.audit.files:
            raise InvalidInput(
                "No structure audit has run since the server started.", hint="Run it on /audit first."
            )
        return FileResponse(
            state.audit.files[MAP], media_type="application/json", filename="vault-map.canvas"
        )

    return router
