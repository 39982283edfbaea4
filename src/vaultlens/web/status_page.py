"""Status: indexed / skipped / failed with reasons, the watcher, live progress, the providers."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from vaultlens.config import paths
from vaultlens.errors import VaultlensError
from vaultlens.services.app import App
from vaultlens.services.verbs import inspecting
from vaultlens.services.verbs.status import IndexStatus, TierStatus
from vaultlens.services.verbs.status import status as index_status
from vaultlens.web.events import Phase
from vaultlens.web.layout import h, page, table, tag
from vaultlens.web.lists import PAGE, pager
from vaultlens.web.pages import problem
from vaultlens.web.state import WebState


def watcher_html(info: Mapping[str, object] | None) -> str:
    if info is None:
        return tag("p", "This server runs no watcher.", id="watcher", data_state="off")
    words = {
        "watching": "Watching the vault: the index follows every change.",
        "elsewhere": "Another process writes the index; this server waits for the writer lock.",
        "off": "Not watching (--no-watch): the index changes only when you run vaultlens index.",
        "stopped": "The watcher stopped: the index no longer follows the vault.",
        "closing": "The server is shutting down: the index no longer follows the vault until it is back.",
    }
    state, reason = str(info["state"]), info.get("reason")
    text = words.get(state, state) + (f" {reason}" if reason else "")
    return tag("p", h(text), id="watcher", data_state=state)


def status_body(state: WebState, page_no: int) -> str:
    st: IndexStatus | None = None
    try:
        st = index_status(state.app)
    except VaultlensError as exc:
        top = problem(exc)
    else:
        if not st.indexed:
            return no_index(state) + providers_html(state, None)
        top = tag(
            "dl",
            "".join(
                tag("dt", h(label)) + tag("dd", str(st.files.get(key, 0)), data_count=key)
                for key, label in (("indexed", "Indexed"), ("skipped", "Skipped"), ("failed", "Failed"))
            ),
            class_="counts",
        )
    problems = st.problems if st is not None else []
    shown = problems[page_no * PAGE : (page_no + 1) * PAGE]
    rows = [[tag("code", h(p.path)), h(p.status), h(p.reason)] for p in shown]
    return (
        top
        + tag("h2", "Problems")
        + table("problems", ["Path", "Status", "Reason"], rows)
        + pager("/status", page_no, len(problems) > (page_no + 1) * PAGE)
        + watcher_and_progress(state)
        + providers_html(state, st.tier if st is not None else None)
    )


def no_index(state: WebState) -> str:
    """What the page says before the first index run: that there is none, and the command that builds it."""
    watching = state.watcher is not None and state.watcher()["state"] == "watching"
    return (
        tag("p", h(f"There is no index for {state.app.vault} yet."), id="no-index", role="status")
        + tag(
            "p",
            (
                "This server's watcher is building it now (its progress is below); the counts appear "
                "when it is done. To build it yourself, stop the server and run "
                if watching
                else "Build it by running "
            )
            + tag("code", h(index_command(state.app)), id="index-command")
            + (" then reload this page." if not watching else "."),
        )
        + watcher_and_progress(state)
    )


def index_command(app: App) -> str:
    """The exact `vaultlens index` that builds this server's index: its vault, data folder and --set values."""
    words = ["vaultlens", "index", "--vault", str(app.vault)]
    for key, origin in app.loaded.origins.items():
        if origin == "--set":
            group, _, name = key.partition(".")
            value = getattr(getattr(app.settings, group), name)
            words += ["--set", f"{key}={str(value).lower() if isinstance(value, bool) else value}"]
    home = f"VAULTLENS_HOME={shlex.quote(str(paths.home()))} " if os.environ.get("VAULTLENS_HOME") else ""
    return home + shlex.join(words)


def watcher_and_progress(state: WebState) -> str:
    progress = state.hub.progress()
    return (
        tag("h2", "Watcher")
        + watcher_html(state.watcher() if state.watcher else None)
        + tag("h2", "Progress")
        + tag(
            "div",
            tag("p", h(progress_text(progress)), class_="phase")
            + tag(
                "progress",
                "",
                max=str(max(1, progress.total) if progress else 1),
                value=str(progress.done if progress else 0),
                aria_label="Progress of the current index run",
            ),
            id="progress",
        )
        + tag("ol", "", id="flushes", aria_label="Recent index updates")
    )


def providers_html(state: WebState, tier: TierStatus | None) -> str:
    try:
        prov = tag(
            "ul",
            "".join(
                tag(
                    "li",
                    tag("strong", h(f"{p.role}: {p.provider}"))
                    + h(f" {p.model} at {p.endpoint}" + (" (remote)" if p.remote else " (this machine)"))
                    + tag("p", h(f"Receives {p.receives}"), class_="receives"),
                    class_="provider",
                    data_role=p.role,
                )
                for p in inspecting.providers(state.app)
            ),
        )
    except VaultlensError as exc:
        prov = problem(exc)
    if tier is not None and tier.reason:  # embedding.tier = auto: which tier this vault got, and why
        prov += tag(
            "p", h(f"embedding.tier = {tier.setting} picked {tier.chosen}: {tier.reason}"), id="tier-choice"
        )
    return tag("h2", "Providers") + tag("section", prov, id="providers")


def progress_text(progress: Phase | None) -> str:
    if progress is None:
        return "No index run since the server started."
    return f"{progress.phase}: {progress.done:,} of {progress.total:,}"


def build(state: WebState) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/status", response_class=HTMLResponse)
    def status_page(
        request: Request, page_no: Annotated[int, Query(alias="page", ge=0, le=100_000)] = 0
    ) -> str:
        return page("Status", "/status", status_body(state, page_no), state.csrf.token_for(request), "status")

    return router
