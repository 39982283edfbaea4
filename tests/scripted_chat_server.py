"""ScriptedChatServer: a test double on loopback that speaks OpenAI's ``/v1/chat/completions`` (SSE)
and Ollama's ``/api/chat`` (NDJSON), streaming a scripted answer piece by piece.

It is :class:`~scripted_server.ScriptedEmbeddingServer` with another way to answer: each request
takes the next :class:`ChatStep` of the script (then the default step: the server's ``reply``),
so 429 + Retry-After, 5xx, 401, 404, slow or cut streams and garbage lines are deterministic.
Every request body is recorded, so a test can read the exact prompt a provider sent.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Self

from scripted_server import ScriptedEmbeddingServer

DEFAULT_USAGE = {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}


@dataclass
class ChatStep:
    """What to do with one chat request. By default: stream the server's reply, word by word."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # before the status line (a slow or hung server)
    reply: str | None = None  # the text to stream (default: the server's reply)
    piece_delay: float = 0.0  # between two pieces
    cut_after: int | None = None  # drop the connection after this many pieces, with no end marker
    lines: list[str] | None = None  # send these stream lines instead of protocol events
    error: str | None = None  # body message of an HTTP error
    usage: dict[str, Any] | None = field(default_factory=lambda: dict(DEFAULT_USAGE))
    # after the first piece, wait for this before the rest; at most a minute, so that a test failing before
    # it sets the gate still ends (10 s was shorter than what a gate waits for on a loaded machine: a rebuild
    # in another process)
    gate: threading.Event | None = None
    raw: bytes | None = None  # (kept for the base class; unused)


def pieces_of(text: str) -> list[str]:
    """The reply cut into word-sized pieces (spaces kept), as a model streams it."""
    out: list[str] = []
    for word in text.split(" "):
        out.append(word if not out else " " + word)
    return out


class ScriptedChatServer(ScriptedEmbeddingServer):
    def __init__(
        self, reply: str = "The starter needs rye flour [S1].", script: list[ChatStep] | None = None
    ):
        super().__init__(dims=8, script=list(script or []))
        self.reply = reply
        self.sent: list[tuple[float, str]] = []  # (monotonic time, piece) of every piece written

    def default_step(self) -> ChatStep:
        return ChatStep()

    def chats(self) -> list[Any]:
        """Bodies of the chat requests received, in order."""
        return [r.body for r in self.requests if r.path.endswith(("/chat/completions", "/api/chat"))]

    def _respond(self, handler: BaseHTTPRequestHandler, body: Any, step: Any) -> None:
        ollama = handler.path.endswith("/api/chat")
        if step.status >= 400:
            message = step.error or f"scripted HTTP {step.status}"
            err = {"error": message} if ollama else {"error": {"message": message, "type": "scripted"}}
            payload = json.dumps(err).encode()
            handler.send_response(step.status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            for k, v in step.headers.items():
                handler.send_header(k, v)
            handler.end_headers()
            handler.wfile.write(payload)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "application/x-ndjson" if ollama else "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        model = body.get("model") if isinstance(body, dict) else None
        if step.lines is not None:
            for line in step.lines:
                handler.wfile.write(line.encode() + b"\n")
            handler.wfile.flush()
            return
        pieces = pieces_of(self.reply if step.reply is None else step.reply)
        for n, piece in enumerate(pieces):
            if step.cut_after is not None and n == step.cut_after:
                handler.wfile.flush()
                return  # the connection closes with no end marker
            if step.piece_delay and n:
                time.sleep(step.piece_delay)
            if step.gate is not None and n == 1:
                step.gate.wait(60)
            handler.wfile.write(self._event(ollama, model, piece))
            handler.wfile.flush()
            self.sent.append((time.monotonic(), piece))
        handler.wfile.write(self._end(ollama, model, step.usage))
        handler.wfile.flush()

    @staticmethod
    def _event(ollama: bool, model: Any, piece: str) -> bytes:
        if ollama:
            return (
                json.dumps(
                    {"model": model, "message": {"role": "assistant", "content": piece}, "done": False}
                ).encode()
                + b"\n"
            )
        chunk = {"id": "c1", "object": "chat.completion.chunk", "model": model,
                 "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}  # fmt: skip
        return f"data: {json.dumps(chunk)}\n\n".encode()

    @staticmethod
    def _end(ollama: bool, model: Any, usage: dict[str, Any] | None) -> bytes:
        if ollama:
            end: dict[str, Any] = {"model": model, "message": {"role": "assistant", "content": ""}, "done": True,
                                   "done_reason": "stop"}  # fmt: skip
            if usage:
                end.update(prompt_eval_count=usage["prompt_tokens"], eval_count=usage["completion_tokens"])
            return json.dumps(end).encode() + b"\n"
        last = {"id": "c1", "object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}  # fmt: skip
        out = f"data: {json.dumps(last)}\n\n"
        if usage:
            out += f"data: {json.dumps({'id': 'c1', 'choices': [], 'usage': usage, 'model': model})}\n\n"
        return (out + "data: [DONE]\n\n").encode()

    def __enter__(self) -> Self:
        self.thread.start()
        return self
