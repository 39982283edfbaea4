"""One serving process: the HTTP API, MCP at ``/mcp`` and the watcher, over one shared App.

The model is loaded once, before the first request, and the watcher (the index's one writer)
runs in a thread of the same process, so searches see a current index without a second
process or a second copy of the model. When another process already holds the writer lock
(a ``vaultlens watch`` in a terminal, or a server still shutting down), the server says who
holds it, serves meanwhile, and tries the lock again every second: its watcher takes over as
soon as the other process lets go. SIGTERM or Ctrl-C stops the watcher at once, a tier fill
included (at its next model call: the fill resumes on the next start), while uvicorn closes
the connections.

The socket is bound before anything else starts, so a port in use fails at once with a clear
error; ``port=0`` takes a free port (tests), and the runtime file names the real one.
"""

from __future__ import annotations

import errno
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Literal

import anyio.to_thread
import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp

from vaultlens.embedding.blas import answer_queries
from vaultlens.errors import TRANSLATED, ConfigError, IndexLocked, VaultlensError, translate_error
from vaultlens.index.lock import LockHolder
from vaultlens.index.watcher import FlushReport, VaultMoved, root_identity
from vaultlens.server import runtime
from vaultlens.server.api import create_api
from vaultlens.server.guard import Guard, check_bind, is_loopback
from vaultlens.server.headers import SecurityHeaders
from vaultlens.server.mcp_tools import build_mcp
from vaultlens.services.app import App
from vaultlens.services.verbs.indexing import watch as watch_service
from vaultlens.web.csrf import Csrf
from vaultlens.web.events import EventHub
from vaultlens.web.mount import error_page

Say = Callable[[str], None]

# How often a stopped watcher looks whether the vault folder it watched is back at its path.
VAULT_POLL_S = 1.0
# How often a watcher that found the writer lock taken tries it again.
LOCK_POLL_S = 1.0
# How long shutdown waits for the watcher: it stops at its next batch or model call, and one still
# waiting for a tier's server is left to the process's exit (its batch was not committed: the next
# start resumes; the store stays open for its lease).
STOP_WAIT_S = 5.0

# Worker threads for route handlers and MCP tools (anyio's default is 40). A search is CPU-bound
# (the query's embedding, one matrix product), so more threads than cores only queue inside
# numpy, and each thread keeps its own malloc arena and model activations: at 40 threads under
# 50 clients the server grew by a third in 30 s (docs/benchmarks.md). Others wait on the event loop.
WORKER_THREADS = max(4, 2 * (os.cpu_count() or 2))


def _quiet(_: str) -> None:
    pass


def build_asgi(
    app: App,
    host: str,
    token: str | None,
    on_start: Callable[[], None] | None = None,
    on_stop: Callable[[], None] | None = None,
    watcher: Callable[[], dict[str, object]] | None = None,
    hub: EventHub | None = None,
    csrf: Csrf | None = None,
) -> ASGIApp:
    """The whole server as one ASGI app: the security headers on every response, the guard in front
    of the API (and the page) and MCP's streamable HTTP."""
    mcp = build_mcp(app, host=host)
    mcp_http = mcp.streamable_http_app()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
        async with mcp.session_manager.run():
            if on_start is not None:
                on_start()
            try:
                yield
            finally:
                if on_stop is not None:
                    on_stop()

    csrf = csrf or Csrf()
    api = create_api(app, lifespan=lifespan, watcher=watcher, hub=hub, csrf=csrf)
    api.router.routes.extend(mcp_http.routes)  # POST/GET/DELETE /mcp
    loopback_only = is_loopback(host) and not token
    guard = Guard(api, token=token, loopback_only=loopback_only, error_page=error_page, page_key=csrf.key)
    return SecurityHeaders(guard)


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, or a ConfigError that says what is in the way."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(
            f"Cannot serve on {host!r}: {exc.strerror}.", hint="Pass --host 127.0.0.1."
        ) from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"Port {port} on {host} is in use by another program.",
                hint="Pass another --port, or stop the program that holds it.",
            ) from exc
        raise ConfigError(f"Cannot serve on {host}:{port} ({exc.strerror or exc}).") from exc
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server, which also tells the watcher to stop the moment a signal asks it to exit
    (uvicorn's lifespan shutdown comes only after the open connections were drained), and says it
    serves only once it listens: uvicorn listens after the lifespan's startup, so a record or a
    "Serving" line written there sent a client that was quick to a refused connection."""

    def __init__(
        self, config: uvicorn.Config, on_exit: Callable[[], None], on_listening: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self._on_exit = on_exit
        self._on_listening = on_listening

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_exit()
        super().handle_exit(sig, frame)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:  # a signal during the startup: uvicorn leaves without a shutdown
            self._on_listening()


@dataclass
class Companion:
    """``vaultlens serve`` for one App: start it in the foreground (:meth:`run`) or in a thread."""

    app: App
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    token_env: str | None = None
    watch: bool = True
    consent: bool = False
    say: Say = _quiet
    on_flush: Callable[[FlushReport], None] | None = None
    hub: EventHub = field(default_factory=EventHub)  # the watcher's progress and flushes, for the page
    csrf: Csrf = field(default_factory=Csrf)  # the page's token and key of this start
    _stop_watch: threading.Event = field(default_factory=threading.Event, repr=False)
    _listens: threading.Event = field(default_factory=threading.Event, repr=False)
    _watcher: threading.Thread | None = field(default=None, repr=False)
    _server: uvicorn.Server | None = field(default=None, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _socket: socket.socket | None = field(default=None, repr=False)
    bound_host: str = ""
    bound_port: int = 0
    # what keeps the index current: "off" (--no-watch), "watching", "elsewhere" (another process
    # holds the writer lock, ``watcher_holder``; this one takes over when it is free) or "stopped"
    # (with ``watcher_reason``): the index no longer follows the vault; ``_watcher_info`` says
    # "closing" once the server is shutting down
    watcher_state: str = "off"
    watcher_reason: str | None = None
    watcher_holder: LockHolder | None = None

    def prepare(self) -> uvicorn.Server:
        """Check the bind, bind the socket, load the model; the returned server is ready to run."""
        check_bind(self.host, self.token, self.token_env)
        sock = bind(self.host, self.port)
        self.bound_host, self.bound_port = sock.getsockname()[:2]  # the address that answers
        provider = self.app.provider()
        if not provider.remote:
            provider.embed(["warm up"])  # load the local model now, not on the first search (seconds)
        answer_queries(self.app.settings.embedding)  # a search's products on the query's threads
        asgi = build_asgi(
            self.app,
            self.host,
            self.token,
            self._started,
            self._stopping,
            self._watcher_info,
            self.hub,
            self.csrf,
        )
        config = uvicorn.Config(
            asgi, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5
        )
        server = _Server(config, self._stop_watch.set, self._listening)
        self._server = server
        self._socket = sock
        return server

    def run(self) -> None:
        """Serve in the foreground until Ctrl-C / SIGTERM (uvicorn handles both)."""
        server = self.prepare()
        assert self._socket is not None
        server.run(sockets=[self._socket])

    def start_in_thread(self, timeout: float = 60.0) -> Companion:
        """Serve from a background thread (tests, benchmarks); returns once it accepts requests."""
        server = self.prepare()
        assert self._socket is not None
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self._socket]}, name="vaultlens-serve", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._listens.wait(0.02):  # listening and announced, as a child's caller sees it
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
        return self

    def stop(self) -> None:
        self._stop_watch.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(30)

    @property
    def url(self) -> str:
        return self._info().base_url

    @property
    def page_url(self) -> str:
        """The page's address with this start's key: opening it lets that browser write."""
        return self._info().page_url

    def _info(self) -> runtime.ServerInfo:
        return runtime.ServerInfo(
            os.getpid(),
            self.bound_host,
            self.bound_port,
            str(self.app.vault),
            self.token_env,
            runtime.settings_fingerprint(self.app),
            self.csrf.key,
        )

    # ---- lifespan: the watcher and the runtime file live exactly as long as the server ----------
    def _watcher_info(self) -> dict[str, object]:
        """``state`` and ``reason``; while another process holds the writer lock (``elsewhere``), also
        ``holder``: its ``pid`` and ``command`` as it wrote them into the lock file (None if unknown)."""
        if self._stop_watch.is_set():  # a signal or stop(): the server is shutting down
            return {"state": "closing", "reason": None}
        info: dict[str, object] = {"state": self.watcher_state, "reason": self.watcher_reason}
        if self.watcher_state == "elsewhere":
            holder = self.watcher_holder
            info["holder"] = None if holder is None else holder.as_dict()
        return info

    def _started(self) -> None:
        if self.watch:
            self.watcher_state = "watching"
            self._watcher = threading.Thread(target=self._watch, name="vaultlens-watch", daemon=True)
            self._watcher.start()

    def _listening(self) -> None:
        """The record one-shot commands find this server by, and the line people read: both say it
        answers, so both come once it accepts connections."""
        runtime.announce(self.app, self._info())
        self.say(
            f"Serving {self.app.vault} on {self.url}: the page at {self.page_url} (the key in it lets "
            "this browser write), API under /v1 (OpenAPI at /openapi.json), MCP at /mcp."
        )
        self._listens.set()

    def _stopping(self) -> None:
        runtime.withdraw(self.app, os.getpid())
        self._stop_watch.set()
        if self._watcher is not None:
            self._watcher.join(STOP_WAIT_S)

    def _watch(self) -> None:
        """Run the watcher; while another process holds the writer lock, try it again every
        second. When the vault folder moved away, wait for that same folder to come back and watch
        again (its reconcile catches up). Another folder at the path stays unwatched: it may be
        another vault, and following it would swap the whole index (see ``Watcher``)."""
        watched = root_identity(self.app.vault)
        while not self._stop_watch.is_set():
            ended = self._watch_once()
            if ended == "locked":
                self._stop_watch.wait(LOCK_POLL_S)
                continue
            if ended != "moved" or watched is None:
                return
            while root_identity(self.app.vault) != watched:
                if self._stop_watch.wait(VAULT_POLL_S):
                    return
            self.say(f"The vault folder {self.app.vault} is back; watching it again.")

    def _watch_once(self) -> Literal["locked", "moved", "ended"]:
        """Watch until stopped: "locked" when another process holds the writer lock, "moved" when
        the vault folder moved away, "ended" otherwise (stopped, or the watcher failed)."""

        def flushed(report: FlushReport) -> None:
            self.hub.publish("flush", report.as_dict())
            if self.on_flush is not None:
                self.on_flush(report)

        try:
            if self.app.home.writer_lock().busy():  # probed first: "watching" is said only once it can be
                self._waiting()
                return "locked"
            self._watching()
            watch_service(
                self.app, flushed, self._stop_watch, self.hub, consent=self.consent, progress_in_flushes=True
            )
        except IndexLocked:
            self._waiting()
            return "locked"
        except VaultMoved:
            self.watcher_reason = (
                f"The vault folder {self.app.vault} was moved or deleted; the watcher restarts when "
                "that folder is back. Searches answer from the index as it is."
            )
            self.watcher_state = "stopped"
            self.say(f"The watcher stopped: {self.watcher_reason}")
            return "moved"
        except VaultlensError as exc:
            self._watcher_stopped(exc.message)
            self.say(f"The watcher stopped: {exc.message} Searches keep answering from the index as it is.")
        except TRANSLATED as exc:
            self._watcher_stopped(translate_error(exc).message)
            self.say(f"The watcher stopped: {translate_error(exc).message}")
        return "ended"

    def _watching(self) -> None:
        if self.watcher_state == "elsewhere":
            self.say("The writer lock is free: this server's watcher keeps the index current now.")
        self.watcher_state, self.watcher_reason, self.watcher_holder = "watching", None, None

    def _waiting(self) -> None:
        """Say who holds the writer lock (once per holder); the watcher tries it again shortly."""
        holder = self.app.home.writer_lock().holder()
        if self.watcher_state == "elsewhere" and holder == self.watcher_holder:
            return
        who = "an unknown process" if holder is None else f"PID {holder.pid}"
        if holder is not None and holder.command:
            who += f" ({holder.command})"
        self.watcher_state, self.watcher_holder = "elsewhere", holder
        self.watcher_reason = (
            f"The writer lock is held by {who}; this server's watcher takes over as soon as it is released."
        )
        self.say(
            f"Another process ({who}) is writing this index; this server watches the vault once it lets go."
        )

    def _watcher_stopped(self, why: str) -> None:
        self.watcher_reason = f"{why} Restart `vaultlens serve` to follow the vault again."
        self.watcher_state = "stopped"
