"""A forward HTTP proxy on loopback that makes a loopback server look like another machine.

Tests send traffic to 127.0.0.0/8 only. A test that needs a *remote* destination (consent, the
remote tier, a model on another machine) names a made-up host, ``REMOTE_HOST`` (the ``.test`` TLD never
resolves), with the port of its scripted server on 127.0.0.1; every test runs with ``HTTP_PROXY``
pointing here (conftest.py), so vaultlens's httpx clients send that request to this proxy, which
passes it to ``127.0.0.1:PORT``. ``NO_PROXY`` keeps loopback addresses direct. Any other host (or a
``CONNECT`` tunnel, i.e. HTTPS) gets a 502 and never leaves the machine, so a test that reaches for
the network fails visibly instead of sending anything.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from socketserver import StreamRequestHandler, ThreadingTCPServer
from urllib.parse import urlsplit

REMOTE_HOST = "models.example.test"
PROXY_ENV = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
LOOPBACK_NAMES = "127.0.0.1,localhost,::1"


def remote_url(local_url: str) -> str:
    """``http://127.0.0.1:PORT...`` as another machine names it: ``http://models.example.test:PORT...``."""
    assert local_url.startswith("http://127.0.0.1:"), local_url
    return local_url.replace("127.0.0.1", REMOTE_HOST, 1)


class _Relay(StreamRequestHandler):
    """One client connection: read the request head, open the loopback target, pass the bytes both ways."""

    def handle(self) -> None:
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            line = self.rfile.readline(65536)
            if not line:
                return
            head += line
        request_line, _, rest = head.partition(b"\r\n")
        method, target, version = request_line.decode("latin-1").split(" ", 2)
        url = urlsplit(target)
        if method == "CONNECT" or url.hostname != REMOTE_HOST or url.port is None:
            self.wfile.write(f"{version} 502 Not a test host\r\nContent-Length: 0\r\n\r\n".encode())
            return
        self.server.requests.append(f"{method} {target}")  # type: ignore[attr-defined]
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        # one request a connection: the target closes after answering, and so does this relay
        headers = [
            h for h in rest.split(b"\r\n") if h and not h.lower().startswith((b"connection:", b"proxy-"))
        ]
        upstream_head = b"\r\n".join(
            [f"{method} {path} {version}".encode("latin-1"), *headers, b"Connection: close", b"", b""]
        )
        with socket.create_connection(("127.0.0.1", url.port), timeout=60) as upstream:
            upstream.sendall(upstream_head)
            pump = threading.Thread(target=_copy, args=(self.rfile, upstream), daemon=True)
            pump.start()  # the request body, as the client sends it
            answer = upstream.makefile("rb")
            status = answer.readline(65536)
            kept = []
            while (line := answer.readline(65536)) not in (b"\r\n", b""):
                if not line.lower().startswith(b"connection:"):
                    kept.append(line)
            # the client must not send another request on this connection: it ends with this answer
            self.wfile.write(status + b"".join(kept) + b"Connection: close\r\n\r\n")
            while chunk := answer.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()


def _copy(source: object, target: socket.socket) -> None:
    with contextlib.suppress(OSError, ValueError):
        while chunk := source.read1(65536):  # type: ignore[attr-defined]
            target.sendall(chunk)


class LoopbackProxy(ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Relay)
        self.requests: list[str] = []  # what was relayed, "METHOD absolute-URL"
        self.thread = threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def environ(self) -> dict[str, str]:
        """The variables that send a process's HTTP through this proxy, loopback excepted."""
        return {**dict.fromkeys(PROXY_ENV, self.url), "NO_PROXY": LOOPBACK_NAMES, "no_proxy": LOOPBACK_NAMES}

    def __enter__(self) -> LoopbackProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
