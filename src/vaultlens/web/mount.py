"""Put the page on the server's FastAPI app: its routers, ``/ui/events`` and ``/ui/static``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import FastAPI, Query
from fastapi.responses import StreamingResponse
from fastapi.staticfiles import StaticFiles

from vaultlens.errors import VaultlensError
from vaultlens.web import (
    audit_page,
    lists,
    merge_page,
    pages,
    read_routes,
    status_page,
    tag_page,
    write_routes,
)
from vaultlens.web.events import event_stream
from vaultlens.web.layout import page
from vaultlens.web.pages import problem
from vaultlens.web.state import WebState

STATIC = Path(__file__).with_name("static")
# what a program asks (JSON errors); a browser's other GETs are visits to the page's own routes
NOT_PAGES = (
    "/v1/",
    "/ui/api/",
    "/ui/events",
    "/ui/static/",
    "/ui/file",
    "/mcp",
    "/openapi",
    "/docs",
    "/redoc",
)
STREAM_S = 300.0  # one event stream's life; the browser reconnects


def mount_web(api: FastAPI, state: WebState) -> None:
    for module in (pages, tag_page, merge_page, lists, audit_page, status_page, read_routes, write_routes):
        api.include_router(module.build(state))
    api.include_router(read_routes.build_files(state))

    @api.get("/ui/events", include_in_schema=False)
    def events(seconds: Annotated[float, Query(ge=0, le=STREAM_S)] = STREAM_S) -> StreamingResponse:
        return StreamingResponse(
            event_stream(state.hub, state.watcher, seconds),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )

    api.mount("/ui/static", StaticFiles(directory=STATIC), name="static")


def error_page(method: str, path: str, accept: str, error: VaultlensError) -> str | None:
    """A refusal or a missing page as an HTML page (the message, its hint, the nav), for a browser's
    visit to the page's own routes (``?page=abc``, a mistyped address); None where a program asks."""
    if method != "GET" or "text/html" not in accept or path.startswith(NOT_PAGES):
        return None
    title = "Not found" if error.http_status == 404 else "Cannot show this page"
    return page(title, "", problem(error), None)
