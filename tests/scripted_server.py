"""ScriptedEmbeddingServer: a real HTTP server on loopback that speaks the Ollama and OpenAI embedding
protocols and follows a script, so retries, timeouts and garbage answers are deterministic.

Each request takes the next step of the script (or answers normally once the script is used up).
Vectors are a pure function of the input text (see :func:`expected_vector`), so a test can compute
what the provider must return without hard-coding numbers.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

import numpy as np

Vectors = list[list[float]]


def expected_vector(text: str, dims: int) -> list[float]:
    """The raw (not normalised) vector the server returns for ``text``."""
    out: list[float] = []
    counter = 0
    while len(out) < dims:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        for (word,) in struct.iter_unpack(">I", digest):
            out.append(word / 2**31 - 1.0)
        counter += 1
    return out[:dims]


def expected_unit(texts: list[str], dims: int) -> np.ndarray:
    m = np.array([expected_vector(t, dims) for t in texts], dtype=np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


@dataclass
class Step:
    """What to do with one request. By default: answer correctly."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # send these bytes as the body instead of a protocol answer
    delay: float = 0.0  # seconds to wait before answering (a slow or hung server)
    mutate: Callable[[Vectors], Any] | None = None  # change the vectors before sending


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any
    at: float


class ScriptedEmbeddingServer:
    def __init__(self, dims: int = 8, script: list[Any] | None = None, port: int = 0) -> None:
        """``port``: 0 picks a free one; a port of an earlier server brings "the same server" back."""
        self.dims = dims
        self.script: list[Any] = list(script or [])
        self.requests: list[Received] = []
        self.connections = 0  # TCP connections accepted, whether or not a request followed
        self.closed_by_client = threading.Event()  # a client closed its connection while we answered
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # http.server API
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with server._lock:
                    server.requests.append(
                        Received(
                            self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic()
                        )
                    )
                    step = server.script.pop(0) if server.script else server.default_step()
                if step.delay:
                    time.sleep(step.delay)
                try:
                    server._respond(self, body, step)
                except (
                    BrokenPipeError,
                    ConnectionResetError,
                ):  # the client gave up: it closed the connection
                    server.closed_by_client.set()

        class CountingServer(ThreadingHTTPServer):
            def verify_request(self, request: Any, client_address: Any) -> bool:
                with server._lock:
                    server.connections += 1
                return True

        self.httpd = CountingServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def default_step(self) -> Any:
        return Step()

    def _respond(self, handler: BaseHTTPRequestHandler, body: Any, step: Any) -> None:
        """Send one whole JSON answer (a subclass may stream instead)."""
        payload = step.raw if step.raw is not None else self._answer(handler.path, body, step)
        handler.send_response(step.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for k, v in step.headers.items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(payload)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        assert isinstance(host, str)
        return f"http://{host}:{port}"

    def _answer(self, path: str, body: Any, step: Step) -> bytes:
        if step.status >= 400:
            return json.dumps({"error": f"scripted HTTP {step.status}"}).encode()
        texts = body.get("input", []) if isinstance(body, dict) else []
        if isinstance(texts, str):
            texts = [texts]
        vectors: Any = [expected_vector(t, self.dims) for t in texts]
        if step.mutate is not None:
            vectors = step.mutate(vectors)
        if path.endswith("/api/embed"):
            return json.dumps({"model": body.get("model"), "embeddings": vectors}).encode()
        if path.endswith("/embeddings"):
            # OpenAI lists items with an index; send them reversed to prove the client re-orders
            items = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            return json.dumps({"object": "list", "data": items[::-1], "model": body.get("model")}).encode()
        return json.dumps({"error": f"unknown path {path}"}).encode()

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
