"""Ask as server-sent events: the one stream ``POST /v1/ask`` and the Ask page both answer with.

Each request is one turn of a conversation the client keeps (:func:`~vaultlens.services.verbs.asking.ask_turn`:
the page and the Obsidian plugin send their history with each question; nothing of it stays here).
The turn runs in a worker thread: for a follow-up first a ``question`` event (``{"standalone_question"}``,
what the follow-up was rewritten to), then ``token`` events (a JSON string each) while the model
writes, then one ``done`` event with the same object as ``vaultlens ask --json``, or an ``error``
event (the error object) if it fails mid-stream. An error before the first event (an empty
question, consent not given for a remote model, no index) is raised, so the route answers it as
an ordinary JSON error with its own status and a client learns it before it reads a stream.

A client that goes away (the page's Stop, a closed tab) stops the model: the stream's end closes
the turn's provider, which cuts its request in flight (:meth:`ChatHTTPProvider.close`).
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import AsyncIterator, Callable

from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from vaultlens.errors import VaultlensError, translate_error
from vaultlens.llm.base import LLMProvider
from vaultlens.services.app import App
from vaultlens.services.verbs import asking

MAX_HISTORY = 50  # exchanges a request may carry (llm.history_turns' ceiling; the last history_turns count)
MAX_HISTORY_ANSWER = 20_000  # characters of an earlier answer (the rewrite reads its first 1,500)


class ExchangeBody(BaseModel):
    question: str = Field(max_length=20_000, description="An earlier question, as it was asked (standalone).")
    answer: str = Field(max_length=MAX_HISTORY_ANSWER, description="The answer it got.")


class AskBody(BaseModel):
    question: str = Field(min_length=1, max_length=20_000, description="The question (or a follow-up).")
    extractive: bool = Field(False, description="Answer with the best passages; no model is called.")
    consent: bool = Field(
        False,
        description="The user agreed to send the question and matching note text to the configured "
        "remote LLM, for this request only: it is never remembered, and a yes given in the terminal "
        "does not count here (without it, a remote model answers 403 consent_required naming what "
        "and where, with the exact prompt and the passages it would send).",
    )
    history: list[ExchangeBody] = Field(
        default_factory=list,
        max_length=MAX_HISTORY,
        description="The conversation so far, oldest first, as the client keeps it (the server keeps "
        "none): a follow-up is rewritten into a standalone question with the last llm.history_turns.",
    )
    token: str | None = Field(
        None,
        pattern="^[0-9a-f]{64}$",
        description="The token of a consent proposal the user accepted: exactly that prompt may be sent.",
    )
    standalone: str | None = Field(
        None,
        max_length=20_000,
        description="The proposal's question (a follow-up already rewritten): it is asked as it is.",
    )


def sse_event(kind: str, data: object) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def ask_stream(
    app: App, body: AskBody, finish: Callable[[dict[str, object]], dict[str, object]] | None = None
) -> StreamingResponse:
    """Start a turn and return its stream once the first event is known (see the module docstring);
    ``finish`` adds to the ``done`` object (the page: the answer rendered as Markdown)."""
    events: queue.Queue[tuple[str, object]] = queue.Queue()
    model: LLMProvider | None = None if body.extractive else app.llm()

    def work() -> None:
        try:
            got = asking.ask_turn(
                app,
                body.question,
                [asking.Exchange(e.question, e.answer) for e in body.history],
                lambda piece: events.put(("token", piece)),
                consent=body.consent,  # this request only: never remembered, no remembered grant counts
                accepted=body.token,
                standalone=body.standalone,
                extractive=body.extractive,
                provider=model,
                on_question=lambda alone: events.put(("question", {"standalone_question": alone})),
            )
            done = got.answer.as_dict()
            events.put(("done", finish(done) if finish is not None else done))
        except Exception as exc:  # noqa: BLE001 - every failure reaches the client as the one error shape
            events.put(("error", translate_error(exc)))
        finally:
            if model is not None:
                model.close()

    threading.Thread(target=work, name="vaultlens-ask", daemon=True).start()
    first = events.get()
    if isinstance(first[1], VaultlensError):
        raise first[1]

    async def stream() -> AsyncIterator[bytes]:
        import anyio.to_thread

        kind, data = first
        try:
            while True:
                yield sse_event(kind, data.to_dict() if isinstance(data, VaultlensError) else data)
                if kind in ("done", "error"):
                    return
                kind, data = await anyio.to_thread.run_sync(events.get, abandon_on_cancel=True)
        finally:  # the client went away (Stop, a closed tab): cut the model's request in flight
            if kind not in ("done", "error") and model is not None:
                model.close()

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
