"""``GET /ui/api/...``: the page's reads, each one verb's ``as_dict()`` (no token needed: nothing is
sent or written, and the Host check keeps other sites' pages from reading them)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from vaultlens.services.verbs import changing, finding, inspecting
from vaultlens.services.verbs.status import status as index_status
from vaultlens.web.lists import PAGE
from vaultlens.web.state import WebState

SEARCH_LIMIT = 20  # notes a keystroke's search returns to the page
PICKER_LIMIT = 12  # notes the type-ahead note picker offers


def build(state: WebState) -> APIRouter:
    router = APIRouter(prefix="/ui/api", include_in_schema=False)
    app = state.app

    @router.get("/search")
    def search(q: Annotated[str, Query(min_length=1)]) -> JSONResponse:  # the verb refuses a long one
        hits = finding.search(app, q, SEARCH_LIMIT, untrusted=True)
        return JSONResponse([hit.as_dict() for hit in hits], headers=hits.headers())

    @router.get("/similar")
    def similar(path: Annotated[str, Query(min_length=1, max_length=finding.MAX_PATH_CHARS)]) -> JSONResponse:
        return JSONResponse(finding.similar(app, path, untrusted=True).as_dict())

    @router.get("/duplicates")
    def duplicates(page: Annotated[int, Query(ge=0, le=100_000)] = 0) -> JSONResponse:
        return JSONResponse(finding.duplicates(app, limit=(page + 1) * PAGE).as_dict())

    @router.get("/history")
    def history(page: Annotated[int, Query(ge=0, le=100_000)] = 0) -> JSONResponse:
        newest = changing.history(app)[::-1]
        return JSONResponse([e.as_dict() for e in newest[page * PAGE : (page + 1) * PAGE]])

    @router.get("/history/{op_id}/before")
    def history_before(op_id: str) -> JSONResponse:
        return JSONResponse(changing.show_before(app, op_id).as_dict())

    @router.get("/notes")
    def note_picker(
        match: Annotated[str, Query(max_length=finding.MAX_PATH_CHARS)] = "",
        limit: Annotated[int, Query(ge=1, le=finding.MAX_PAGE)] = PICKER_LIMIT,
    ) -> JSONResponse:
        return JSONResponse(finding.list_notes(app, "", None, limit, match).as_dict())

    @router.get("/status")
    def status() -> JSONResponse:
        out: dict[str, object] = index_status(app).as_dict()
        out["watcher"] = state.watcher() if state.watcher else None
        progress = state.hub.progress()
        out["progress"] = None if progress is None else progress.as_dict()
        return JSONResponse(out)

    @router.get("/providers")
    def providers() -> JSONResponse:
        return JSONResponse([p.as_dict() for p in inspecting.providers(app)])

    return router


def build_files(state: WebState) -> APIRouter:
    """``GET /ui/file?path=``: an image a note embeds, by the path rules of a note."""
    router = APIRouter(include_in_schema=False)

    @router.get("/ui/file")
    def vault_file(path: Annotated[str, Query(min_length=1, max_length=finding.MAX_PATH_CHARS)]) -> Response:
        data, media = finding.image(state.app, path)
        return Response(data, media_type=media, headers={"Cache-Control": "no-store"})

    return router
