"""``POST /ui/api/...``: what sends note text to a model or writes a note, behind the CSRF guard
(or, for the paired Obsidian plugin, its write token: ``web/pairing.py``).

Each follows the confirmation protocol: a call without a grant answers the verb's proposal (403
``consent_required`` with the exact prompt, 409 ``write_unconfirmed`` with the exact diff); the
page shows it and calls again with that proposal's token. A send's proposal is kept here by its
token (the verb needs the prepared prompt back); a write's token is the diff's SHA-256, which
safewrite compares with the diff it is about to write. Consent covers that one request only.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field

from vaultlens.errors import ConsentRequired
from vaultlens.services.verbs import auditing, changing, drafting, finding, restructuring
from vaultlens.services.verbs.changing import PlanOptions
from vaultlens.web.pages import markdown_html
from vaultlens.web.pairing import write_guard
from vaultlens.web.sse import AskBody, ask_stream
from vaultlens.web.state import WebState

Path = Field(min_length=1, max_length=finding.MAX_PATH_CHARS)
Token = Field(None, min_length=64, max_length=64, pattern="^[0-9a-f]{64}$")


class PlanBody(BaseModel):
    direction: Literal["A", "B"] = "A"
    after: str | None = Field(None, max_length=200)
    link_text: str = Field("See also", min_length=1, max_length=200)

    def options(self) -> PlanOptions:
        return PlanOptions(link_from=self.direction, after=self.after or None, label=self.link_text)


class ReviewBody(PlanBody):
    a: str = Path
    b: str = Path
    token: str | None = Token  # the prompt's token the page showed; absent: propose it


class ReplanBody(PlanBody):
    review_id: str = Field(min_length=1, max_length=64)


class OpBody(BaseModel):
    op_id: str = Field(min_length=1, max_length=200)
    token: str | None = Token  # the diff's token the page showed; absent: propose it


class PairBody(BaseModel):
    a: str = Path
    b: str = Path


class MergeBody(BaseModel):
    keep: str = Path
    other: str = Path
    sections: list[str] | None = Field(None, max_length=200)  # by heading; absent: what KEEP does not cover


class ToolBody(BaseModel):
    """A note tool of ``vaultlens write`` on one note; consent covers this request only."""

    path: str = Path
    consent: bool = False  # never remembered


class ContinueBody(ToolBody):
    with_context: bool = False
    after_line: int | None = Field(None, ge=1)


class TransformBody(ToolBody):
    """Lines ``first``-``last`` of ``path`` with a preset or a prompt."""

    first: int = Field(ge=1)
    last: int = Field(ge=1)
    preset: str | None = Field(None, min_length=1, max_length=100)
    prompt: str | None = Field(None, min_length=1, max_length=4_000)


class SplitBody(ToolBody):
    mode: Literal["keep-original", "index"] = "keep-original"


class DataviewBody(BaseModel):
    question: str = Field(min_length=1, max_length=4_000)
    insert: str | None = Field(None, min_length=1, max_length=finding.MAX_PATH_CHARS)
    after_line: int | None = Field(None, ge=1)
    consent: bool = False


def build(state: WebState) -> APIRouter:
    router = APIRouter(prefix="/ui/api", include_in_schema=False, dependencies=[Depends(write_guard(state))])
    app = state.app

    @router.post("/review")
    def review(body: ReviewBody) -> JSONResponse:
        shown = state.proposals.get(body.token) if body.token else None
        try:
            result = changing.review(app, body.a, body.b, body.options(), confirmed=shown, remember=False)
        except ConsentRequired as exc:
            state.proposals.put(exc.proposal.token, exc.proposal)
            refused = exc.to_dict()
            refused["proposal"]["sources"] = changing.prompt_sources(exc.proposal)  # the summary above it
            return JSONResponse({"error": refused}, status_code=exc.http_status)
        return JSONResponse({"review_id": state.keep_review(result), **result.as_dict()})

    @router.post("/replan")
    def replan(body: ReplanBody) -> JSONResponse:
        result = changing.replan(app, state.reviews.get(body.review_id), body.options())
        return JSONResponse({"review_id": state.keep_review(result), **result.as_dict()})

    @router.post("/apply")
    def apply(body: OpBody) -> JSONResponse:
        return JSONResponse(changing.apply(app, body.op_id, body.token).as_dict())

    @router.post("/undo")
    def undo(body: OpBody) -> JSONResponse:
        return JSONResponse(changing.plan_undo(app, body.op_id).as_dict())

    @router.post("/discard")
    def discard(body: OpBody) -> JSONResponse:
        """Drop a planned operation from History (only the journal changes; no note is touched)."""
        return JSONResponse(changing.discard(app, body.op_id).as_dict())

    @router.post("/dismiss")
    def dismiss(body: PairBody) -> JSONResponse:
        return JSONResponse(finding.dismiss(app, body.a, body.b).as_dict())

    @router.post("/restore")
    def restore(body: PairBody) -> JSONResponse:
        """List a dismissed pair again (the index's record only; no note is touched)."""
        return JSONResponse(finding.restore(app, body.a, body.b).as_dict())

    @router.post("/merge")
    def merge(body: MergeBody) -> JSONResponse:
        """Plan merging OTHER into KEEP as one group (its diff in ``plan``); ``/apply`` writes it with that
        diff's token. Both paths must be notes the vault's scan lists."""
        keep, other = finding.note_path(app, body.keep), finding.note_path(app, body.other)
        return JSONResponse(restructuring.write_merge(app, keep, other, body.sections).as_dict())

    @router.post("/ask")
    def ask(body: AskBody) -> StreamingResponse:
        def rendered(done: dict[str, object]) -> dict[str, object]:
            return {**done, "answer_html": markdown_html(state, str(done["answer"]))}

        return ask_stream(app, body, rendered)

    def note(path: str) -> str:
        """A note path from the page, by the rules of a path from a program (see services/notes)."""
        return finding.note_path(app, path)

    # the note tools, named after `vaultlens write ...`: each answers its verb's result, whose plan
    # (one write, or one operation group for split) is applied through /ui/api/apply
    @router.post("/write/continue")
    def write_continue(body: ContinueBody) -> JSONResponse:
        done = drafting.write_continue(
            app, note(body.path), body.with_context, body.after_line, consent=body.consent, remember=False
        )
        return JSONResponse(done.as_dict())

    @router.post("/write/transform")
    def write_transform(body: TransformBody) -> JSONResponse:
        done = drafting.write_transform(
            app,
            note(body.path),
            body.first,
            body.last,
            body.preset,
            body.prompt,
            body.consent,
            remember=False,
        )
        return JSONResponse(done.as_dict())

    @router.post("/write/flashcards")
    def write_flashcards(body: ToolBody) -> JSONResponse:
        return JSONResponse(
            drafting.write_flashcards(app, note(body.path), body.consent, remember=False).as_dict()
        )

    @router.post("/write/split")
    def write_split(body: SplitBody) -> JSONResponse:
        done = restructuring.write_split(app, note(body.path), body.mode, body.consent, remember=False)
        return JSONResponse(done.as_dict())

    @router.post("/write/dataview")
    def write_dataview(body: DataviewBody) -> JSONResponse:
        into = note(body.insert) if body.insert is not None else None
        done = drafting.write_dataview(
            app, body.question, into, body.after_line, body.consent, remember=False
        )
        return JSONResponse(done.as_dict())

    @router.post("/audit")
    def audit() -> JSONResponse:
        state.hub.publish("audit", {"state": "running"})
        done = auditing.audit_structure(app, into_vault=False)
        state.audit = auditing.SavedStructure.of(done)
        summary = done.audit.report.summary()
        state.hub.publish("audit", {"state": "done", "summary": summary})
        return JSONResponse({"summary": summary})

    @router.post("/audit/clusters")
    def clusters() -> JSONResponse:
        """Topic clusters from stored vectors (no model is called; files go outside the vault)."""
        state.topics = auditing.audit_clusters_only(app)
        return JSONResponse({"clusters": len(state.topics.clusters.clusters)})

    return router
