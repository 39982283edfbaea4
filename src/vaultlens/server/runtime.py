"""Finding a running ``vaultlens serve`` for a vault, so one-shot commands can ask it.

``serve`` writes ``serve.json`` (pid, host, port, the token's variable name, never the token)
into the vault's index root when it starts listening, and removes it when it stops. A command
reads it, checks that the process is alive and that nothing in its own settings differs, and
sends the request over loopback; anything unexpected (no file, a dead pid, a refused
connection, a timeout, an error reply) makes it fall back silently to doing the work itself,
which gives the same answer, only slower (it loads the model). A frozen server (stopped, or
its workers stuck) still accepts connections, so a cheap ``/v1/health`` with a short first-byte
timeout comes first: falling back costs seconds, waiting for the search's own timeout a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from vaultlens.config.settings import as_rows
from vaultlens.errors import VaultlensError
from vaultlens.fsutil import atomic_write, sha256_hex
from vaultlens.index.lock import process_alive
from vaultlens.server.guard import is_loopback
from vaultlens.services.app import App
from vaultlens.services.search import NOTICES_HEADER, NoteHit, SearchHits

RUNTIME_FILE = "serve.json"
SERVE_LOG = "serve.log"  # what a server started in the background (`vaultlens ui`) printed
START_TIMEOUT = 180.0  # seconds for a background server to load its model and listen
CONNECT_TIMEOUT = 0.5  # seconds: a live loopback server accepts at once
HEALTH_TIMEOUT = 2.0  # first byte of /v1/health: a live server answers in milliseconds
READ_TIMEOUT = 60.0  # a search under heavy load, once the server proved alive


@dataclass(frozen=True, slots=True)
class ServerInfo:
    pid: int
    host: str
    port: int
    vault: str
    token_env: str | None = None
    settings: str = ""  # settings_fingerprint() of the server's App

    @property
    def base_url(self) -> str:
        host = self.host if is_loopback(self.host) else "127.0.0.1"  # a wildcard bind answers on loopback too
        return f"http://{'[' + host + ']' if ':' in host and not host.startswith('[') else host}:{self.port}"


def settings_fingerprint(app: App) -> str:
    """A hash of every effective setting: a command whose settings differ (``--set``, another
    environment) must not take a server's answer for its own."""
    rows = [(key, repr(value)) for key, value, _ in as_rows(app.loaded)]
    return sha256_hex(json.dumps(rows))[:16]


def runtime_file(app: App) -> Path:
    return app.home.root / RUNTIME_FILE


def announce(app: App, info: ServerInfo) -> None:
    """Say that a server for this vault listens (atomically: a reader never sees half a file)."""
    runtime_file(app).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(runtime_file(app), json.dumps(asdict(info)), durable=False)


def withdraw(app: App, pid: int) -> None:
    """Remove the runtime file if it is still this process's (a newer server may have replaced it)."""
    found = read(app)
    if found is not None and found.pid == pid:
        runtime_file(app).unlink(missing_ok=True)


def read(app: App) -> ServerInfo | None:
    try:
        data = json.loads(runtime_file(app).read_text(encoding="utf-8"))
        return ServerInfo(
            int(data["pid"]),
            str(data["host"]),
            int(data["port"]),
            str(data["vault"]),
            data.get("token_env"),
            str(data.get("settings", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def running_server(app: App) -> ServerInfo | None:
    """The server announced for this vault, if its process is alive and its settings are ours."""
    info = read(app)
    if info is None or info.vault != str(app.vault) or not process_alive(info.pid):
        return None
    if info.settings != settings_fingerprint(app):
        return None
    return info


def healthy(info: ServerInfo) -> bool:
    """The server answers ``/v1/health`` at once (not a stale file or a frozen process)."""
    headers = {}
    if info.token_env and os.environ.get(info.token_env):
        headers["Authorization"] = f"Bearer {os.environ[info.token_env]}"
    try:
        reply = httpx.get(
            info.base_url + "/v1/health",
            headers=headers,
            timeout=httpx.Timeout(HEALTH_TIMEOUT, connect=CONNECT_TIMEOUT),
        )
    except httpx.HTTPError:
        return False
    return reply.status_code == 200


class ServerDidNotStart(VaultlensError):
    code = "server_did_not_start"
    exit_code = 1
    http_status = 500


def start_in_background(app: App, serve_args: Sequence[str]) -> ServerInfo:
    """Start ``vaultlens serve SERVE_ARGS`` as a detached process (it keeps serving after this
    command ends) and wait until it announces itself in ``serve.json``; its output goes to
    ``serve.log`` beside it. The child is this same Python running ``-m vaultlens``."""
    log_path = app.home.root / SERVE_LOG
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "vaultlens", "serve", *serve_args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # not stopped by this terminal's Ctrl-C or its closing
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        info = read(app)
        if info is not None and info.pid == child.pid and healthy(info):
            return info
        if child.poll() is not None:
            break
        time.sleep(0.2)
    tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
    raise ServerDidNotStart(
        "`vaultlens serve` did not start" + (f": {' '.join(tail)}" if tail else "."),
        hint=f"Its output is in {log_path}; run `vaultlens serve` in a terminal to see why.",
    )


def search_via_server(app: App, query: str, limit: int | None, sections: int | None) -> SearchHits | None:
    """Hits from a running server for this vault, or None when there is none that answers well."""
    info = running_server(app)
    if info is None:
        return None
    headers: dict[str, str] = {}
    if info.token_env:
        token = os.environ.get(info.token_env)
        if not token:
            return None
        headers["Authorization"] = f"Bearer {token}"
    params: dict[str, Any] = {"q": query}
    if limit is not None:
        params["limit"] = limit
    if sections is not None:
        params["sections"] = sections
    try:
        with httpx.Client(base_url=info.base_url, headers=headers) as client:
            health = client.get("/v1/health", timeout=httpx.Timeout(HEALTH_TIMEOUT, connect=CONNECT_TIMEOUT))
            if health.status_code != 200:
                return None
            timeout = httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT)
            reply = client.get("/v1/search", params=params, timeout=timeout)
        if reply.status_code != 200:
            return None  # the local path raises the same error with its own wording and exit code
        notices = tuple(str(n) for n in json.loads(reply.headers.get(NOTICES_HEADER, "[]")))
        return SearchHits([NoteHit.from_dict(item) for item in reply.json()], notices)
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return None
