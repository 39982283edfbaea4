"""Status and Audit: the index's coverage, the watcher and providers; the structure dashboard."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse, HTMLResponse

from vaultlens.errors import InvalidInput, VaultlensError
from vaultlens.services.audit.report_files import MAP
from vaultlens.services.verbs import inspecting
from vaultlens.services.verbs.status import status as index_status
from vaultlens.web.charts import bar_chart
from vaultlens.web.layout import h, note_href, page, tag
from vaultlens.web.lists import PAGE, pager
from vaultlens.web.pages import problem
from vaultlens.web.state import WebState

TOP = 15  # rows in a chart or a short list; tables of links are paginated


def _table(table_id: str, header: list[str], rows: list[list[str]]) -> str:
    head = "".join(tag("th", h(t), scope="col") for t in header)
    body = "".join(tag("tr", "".join(tag("td", c) for c in row)) for row in rows)
    return tag("table", tag("thead", tag("tr", head)) + tag("tbody", body), id=table_id)


def watcher_html(info: dict[str, Any] | None) -> str:
    if info is None:
        return tag("p", "This server runs no watcher.", id="watcher", data_state="off")
    words = {
        "watching": "Watching the vault: the index follows every change.",
        "elsewhere": "Another process (vaultlens watch) keeps the index current.",
        "off": "Not watching (--no-watch): the index changes only when you run vaultlens index.",
        "stopped": "The watcher stopped: the index no longer follows the vault.",
    }
    text = words.get(info["state"], info["state"]) + (f" {info['reason']}" if info.get("reason") else "")
    return tag("p", h(text), id="watcher", data_state=info["state"])


def status_body(state: WebState, page_no: int) -> str:
    st: dict[str, Any] | None = None
    try:
        st = index_status(state.app).as_dict()
    except VaultlensError as exc:
        top = problem(exc)
    else:
        files: dict[str, int] = st["files"]
        top = tag(
            "dl",
            "".join(
                tag("dt", h(label)) + tag("dd", str(files[key]), data_count=key)
                for key, label in (("indexed", "Indexed"), ("skipped", "Skipped"), ("failed", "Failed"))
            ),
            class_="counts",
        )
    problems: list[dict[str, Any]] = st["problems"] if st is not None else []
    shown = problems[page_no * PAGE : (page_no + 1) * PAGE]
    rows = [[tag("code", h(p["path"])), h(p["status"]), h(p["reason"])] for p in shown]
    try:
        providers = [p.as_dict() for p in inspecting.providers(state.app)]
        prov = tag(
            "ul",
            "".join(
                tag(
                    "li",
                    tag("strong", h(f"{p['role']}: {p['provider']}"))
                    + h(
                        f" {p['model']} at {p['endpoint']}"
                        + (" (remote)" if p["remote"] else " (this machine)")
                    )
                    + tag("p", h(f"Receives {p['receives']}"), class_="receives"),
                    class_="provider",
                    data_role=p["role"],
                )
                for p in providers
            ),
        )
    except VaultlensError as exc:
        prov = problem(exc)
    progress = state.hub.progress()
    return (
        top
        + tag("h2", "Problems")
        + _table("problems", ["Path", "Status", "Reason"], rows)
        + pager("/status", page_no, len(problems) > (page_no + 1) * PAGE)
        + tag("h2", "Watcher")
        + watcher_html(state.watcher() if state.watcher else None)
        + tag("h2", "Progress")
        + tag(
            "div",
            tag("p", h(progress_text(progress)), class_="phase")
            + tag(
                "progress",
                "",
                max=str(max(1, progress["total"]) if progress else 1),
                value=str(progress["done"] if progress else 0),
                aria_label="Progress of the current index run",
            ),
            id="progress",
        )
        + tag("ol", "", id="flushes", aria_label="Recent index updates")
        + tag("h2", "Providers")
        + tag("section", prov, id="providers")
    )


def progress_text(progress: dict[str, Any] | None) -> str:
    if progress is None:
        return "No index run since the server started."
    return f"{progress['phase']}: {progress['done']:,} of {progress['total']:,}"


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
            tag("li", h(t) + " " + tag("span", str(n), class_="count"), style=f"--depth:{t.count('/')}")
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
        + _table(
            "broken-links", ["Note", "Line", "Link", "Alias of"], link_rows(r["broken_links"], "alias_of")
        )
        + tag("h2", "Ambiguous links")
        + _table(
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
    csrf = state.csrf.token

    @router.get("/status", response_class=HTMLResponse)
    def status_page(page_no: Annotated[int, Query(alias="page", ge=0, le=100_000)] = 0) -> str:
        return page("Status", "/status", status_body(state, page_no), csrf, "status")

    @router.get("/audit", response_class=HTMLResponse)
    def audit_page(page_no: Annotated[int, Query(alias="page", ge=0, le=100_000)] = 0) -> str:
        return page("Audit", "/audit", audit_body(state, page_no), csrf, "audit")

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
