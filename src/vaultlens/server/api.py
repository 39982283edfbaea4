"""The HTTP API: one route per facade verb; parse the query, call the verb, render its JSON.

Routes are plain functions, so FastAPI runs them in its worker threads and a slow search never
blocks the event loop; the :class:`~vaultlens.services.app.App` is shared by all of them (reads
lease a snapshot each, the watcher writes meanwhile). JSON comes from the same serialisers the
CLI's ``--json`` uses. Every error, ours or FastAPI's (a bad parameter, an unknown route), leaves
as ``{"error": {"code", "message", "hint"}}`` with the error's own HTTP status, never a traceback.

``POST /v1/ask`` streams server-sent events (:func:`vaultlens.web.sse.ask_stream`, which the Ask
page shares). The web page (:mod:`vaultlens.web`) is mounted on the same app at ``/`` and
``/ui/...``, outside the OpenAPI schema.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib.metadata import version
from typing import Annotated

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from vaultlens.errors import (
    TRANSLATED,
    VaultError,
    VaultlensError,
    translate_error,
)
from vaultlens.server.envelope import invalid_arguments
from vaultlens.server.limits import MAX_DUPLICATES, MAX_LIMIT, MAX_QUERY_CHARS, MAX_SECTIONS
from vaultlens.services.app import App
from vaultlens.services.verbs import finding
from vaultlens.services.verbs.finding import DuplicateReport, NoteHit, NoteList, NoteSlice, SimilarResult
from vaultlens.services.verbs.status import status as index_status
from vaultlens.vault.safepath import ALLOWED_TEXT_PATTERN
from vaultlens.web.csrf import Csrf
from vaultlens.web.events import EventHub
from vaultlens.web.mount import error_page, mount_web
from vaultlens.web.sse import AskBody, ask_stream
from vaultlens.web.state import WebState

log = logging.getLogger("vaultlens.server")


class ErrorDetail(BaseModel):
    code: str
    message: str
    hint: str | None = None


class ErrorBody(BaseModel):
    """The one error shape of the API (and of ``vaultlens --json`` on the command line)."""

    error: ErrorDetail


_ERRORS: dict[int | str, dict[str, object]] = {
    status: {"model": ErrorBody, "description": why}
    for status, why in [
        (400, "bad input: a refused path, an out-of-range parameter, an empty query"),
        (401, "a token is required and the request did not carry the right one"),
        (403, "a non-loopback Host header on a loopback server"),
        (404, "no such note, folder or index"),
        (409, "the index is empty or was built with another embedding space"),
        (423, "the index is locked by a writer"),
        (500, "the index or the file system failed"),
        (502, "the embedding provider failed"),
        (503, "the index is busy; retry"),
    ]
}


def error_response(error: VaultlensError, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error.to_dict()}, status_code=error.http_status, headers=headers)


CURSOR_PATTERN = "^[A-Za-z0-9_-]*$"  # what finding.list_notes hands out: URL-safe base64, unpadded


def _path_query(what: str, min_length: int = 1) -> object:
    """A path parameter with the limits that otherwise come back as 400s declared in the schema:
    its length, and the characters no note path may have (the rule of ``vault/safepath.py``)."""
    return Query(
        min_length=min_length,
        max_length=finding.MAX_PATH_CHARS,
        pattern=ALLOWED_TEXT_PATTERN,
        description=f"{what} Vault-relative, with '/' separators, as listed by /v1/notes/list. Refused "
        "with a 400: control or bidirectional characters, an absolute path, '~', '\\', a drive letter, "
        "'.', '..' or hidden ('.name') segments, and anything the vault's ignore rules leave out.",
    )


def _json(data: object) -> JSONResponse:
    return JSONResponse(data)


def create_api(
    app: App,
    *,
    lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]] | None = None,
    watcher: Callable[[], dict[str, object]] | None = None,
    hub: EventHub | None = None,
    csrf: Csrf | None = None,
) -> FastAPI:
    """The FastAPI application over ``app``'s verbs (no auth here: :class:`~vaultlens.server.guard.Guard`
    wraps the whole ASGI app, MCP included). ``watcher``: the state of the server's watcher, which
    ``/v1/status`` reports (a stopped watcher means the index no longer follows the vault);
    ``hub``: where the watcher reports its progress, which the page's Status follows; ``csrf``: the
    page's token and key of this start (the guard in front sets the key's cookie)."""

    @asynccontextmanager
    async def no_lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield

    api = FastAPI(
        title="vaultlens",
        version=version("vaultlens"),
        description="Read-only access to one indexed Markdown vault: search, related notes, "
        "duplicates, bounded note slices and listings. Note text is the user's data.",
        lifespan=lifespan or no_lifespan,
        responses=_ERRORS,
        docs_url=None,
        redoc_url=None,
    )

    def answer(request: Request, error: VaultlensError, headers: Mapping[str, str] | None = None) -> Response:
        """The error as JSON, or as an HTML page for a visit to one of the page's own routes."""
        html = error_page(request.method, request.url.path, request.headers.get("accept", ""), error)
        if html is not None:
            return HTMLResponse(html, status_code=error.http_status, headers=headers)
        return error_response(error, headers)

    @api.exception_handler(VaultlensError)
    async def on_error(request: Request, exc: VaultlensError) -> Response:
        return answer(request, exc)

    @api.exception_handler(RequestValidationError)
    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        return answer(request, invalid_arguments(exc.errors(), skip=("query", "body", "path")))

    @api.exception_handler(StarletteHTTPException)
    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        codes = {404: "not_found", 405: "method_not_allowed"}
        error = VaultlensError(str(exc.detail), hint="See /openapi.json for the routes.")
        error.code = codes.get(exc.status_code, "http")
        error.http_status = exc.status_code
        return answer(request, error, exc.headers)  # a 405 keeps its Allow header

    @api.exception_handler(Exception)
    async def on_unexpected(_: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, TRANSLATED):
            return error_response(translate_error(exc))
        log.exception("unexpected error")
        return error_response(VaultlensError("Internal error; the server log has the details."))

    @api.get("/v1/health", summary="The server answers (what one-shot commands check before asking it)")
    def health() -> dict[str, bool]:
        """Run in a worker thread like every route, so a server whose workers are stuck is not healthy."""
        return {"ok": True}

    @api.get(
        "/v1/status", response_model=dict[str, object], summary="Index coverage, totals, model, last run"
    )
    def status() -> JSONResponse:
        try:
            out = index_status(app).as_dict()
        except VaultError as exc:  # the vault folder is gone: the error, and still what the watcher does
            if watcher is None:
                raise
            return JSONResponse({"error": exc.to_dict(), "watcher": watcher()}, status_code=exc.http_status)
        return _json(out if watcher is None else {**out, "watcher": watcher()})

    @api.get(
        "/v1/search", response_model=list[NoteHit], summary="Notes matching a query, with their best sections"
    )
    def search(
        q: Annotated[
            str,
            Query(
                min_length=1,
                max_length=MAX_QUERY_CHARS,
                description="What to look for; a query of only whitespace is a 400 empty_query.",
            ),
        ],
        limit: Annotated[int | None, Query(ge=1, le=MAX_LIMIT, description="Notes to return.")] = None,
        sections: Annotated[
            int | None, Query(ge=1, le=MAX_SECTIONS, description="Sections per note.")
        ] = None,
    ) -> JSONResponse:
        hits = finding.search(app, q, limit, sections, untrusted=True)
        # the body stays a list of hits; what they cannot show (the quality tier was left out) rides
        # in a header
        return JSONResponse([h.as_dict() for h in hits], headers=hits.headers())

    @api.get("/v1/similar", response_model=SimilarResult, summary="Notes related to one note")
    def similar(
        path: Annotated[str, _path_query("The note, resolved as /v1/notes resolves it.")],
        limit: Annotated[int | None, Query(ge=1, le=MAX_LIMIT)] = None,
    ) -> JSONResponse:
        return _json(finding.similar(app, path, limit, untrusted=True).as_dict())

    @api.get(
        "/v1/duplicates", response_model=DuplicateReport, summary="Exact copies and near-duplicate pairs"
    )
    def duplicates(
        threshold: Annotated[float | None, Query(ge=0.0, le=1.0)] = None,
        limit: Annotated[int | None, Query(ge=1, le=MAX_DUPLICATES)] = None,
    ) -> JSONResponse:
        return _json(finding.duplicates(app, threshold, limit).as_dict())

    @api.get("/v1/notes", response_model=NoteSlice, summary="A bounded slice of one note's text")
    def note(
        path: Annotated[str, _path_query("The note.")],
        offset: Annotated[
            int,
            Query(
                ge=0,
                description="Code point to start at: at most the note's total_length (past the end is a "
                "400); next_offset of the previous slice for the next one.",
            ),
        ] = 0,
        length: Annotated[
            int, Query(ge=1, le=finding.MAX_SLICE, description="Code points to return.")
        ] = finding.DEFAULT_SLICE,
    ) -> JSONResponse:
        return _json(finding.note(app, path, offset, length).as_dict())

    @api.get(
        "/v1/notes/list", response_model=NoteList, summary="Indexed notes under a folder, one page at a time"
    )
    def note_list(
        folder: Annotated[str, _path_query("A folder; '' for the whole vault.", min_length=0)] = "",
        cursor: Annotated[
            str | None,
            Query(
                max_length=4 * finding.MAX_PATH_CHARS,
                pattern=CURSOR_PATTERN,
                description="The next_cursor of the previous page; any other value is a 400.",
            ),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=finding.MAX_PAGE)] = finding.DEFAULT_PAGE,
    ) -> JSONResponse:
        return _json(finding.list_notes(app, folder, cursor, limit).as_dict())

    @api.post(
        "/v1/ask",
        summary="Answer a question from the vault only, streamed as server-sent events",
        response_class=StreamingResponse,
        response_model=None,
        responses={200: {"content": {"text/event-stream": {}}, "description": "token… then done (or error)"}},
    )
    def ask(body: AskBody) -> StreamingResponse:
        return ask_stream(app, body)

    def openapi() -> dict[str, object]:
        """FastAPI's schema without its 422 entries: invalid input is a 400 in the one error shape."""
        if api.openapi_schema is None:
            spec = get_openapi(
                title=api.title, version=api.version, description=api.description, routes=api.routes
            )
            for ops in spec.get("paths", {}).values():
                for op in ops.values():
                    op.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                spec.get("components", {}).get("schemas", {}).pop(name, None)
            api.openapi_schema = spec
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]
    mount_web(api, WebState(app, csrf=csrf or Csrf(), hub=hub or EventHub(), watcher=watcher))
    return api
