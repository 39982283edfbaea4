"""Ask as server-sent events: the one stream ``POST /v1/ask`` and the Ask page both answer with.

Ask runs in a worker thread: ``token`` events (a JSON string each) while the model writes, then
one ``done`` event with the same object as ``vaultlens ask --json``, or an ``error`` event (the
error object) if it fails mid-stream. An error before the first event (an empty question,
consent not given for a remote model, no index) is raised, so the route answers it as an
ordinary JSON error with its own status and a client learns it before it reads a stream.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from fastapi.responses import StreamingResponse

from vaultlens.errors import VaultlensError, translate_error
from vaultlens.services.app import App
from vaultlens.services.verbs import asking


def sse_event(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def ask_stream(
    app: App,
    question: str,
    extractive: bool,
    consent: bool,
    finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> StreamingResponse:
    """Start Ask and return its stream once the first event is known (see the module docstring);
    ``finish`` adds to the ``done`` object (the page: the answer rendered as Markdown)."""
    events: queue.Queue[tuple[str, Any]] = queue.Queue()

    def work() -> None:
        try:
            got = asking.ask(
                app,
                question,
                lambda piece: events.put(("token", piece)),
                consent,
                extractive,
                remember=False,  # a request's consent is its own, never stored, never borrowed
                untrusted=True,
            )
            done = got.as_dict()
            events.put(("done", finish(done) if finish is not None else done))
        except Exception as exc:  # every failure reaches the client as the one error shape
            events.put(("error", translate_error(exc)))

    threading.Thread(target=work, name="vaultlens-ask", daemon=True).start()
    first = events.get()
    if first[0] == "error":
        raise first[1]

    def stream() -> Iterator[bytes]:
        kind, data = first
        while True:
            yield sse_event(kind, data.to_dict() if isinstance(data, VaultlensError) else data)
            if kind in ("done", "error"):
                return
            kind, data = events.get()

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
