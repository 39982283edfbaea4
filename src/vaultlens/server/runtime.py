"""Finding a running ``vaultlens serve`` for a vault, so one-shot commands can ask it.

Every ``serve`` writes its own record, ``servers/<pid>.json`` in the vault's index root (pid, the
address it actually bound, port, the token's variable name, never the token, a fingerprint of
its settings, and the page's key, which lets a browser write through the page: the file is the
user's alone, 0600, so `vaultlens ui` opens the page with it and no other OS user reads it), when it
starts listening, and removes it when it stops; a record whose process died
(kill -9) is removed by the next reader. One record per server, so a second server for the vault
(other settings, another terminal) neither hides the first nor takes its record away when it
exits. A command picks the record of a live server whose settings are its own and sends the request
there; anything unexpected (no record, a dead pid, a refused
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

import httpx

from vaultlens.config.settings import as_rows
from vaultlens.errors import VaultlensError
from vaultlens.fsutil import atomic_write, sha256_hex
from vaultlens.index.lock import process_alive
from vaultlens.services.app import App
from vaultlens.services.verbs.finding import NOTICES_HEADER, NoteHit, SearchHits

RUNTIME_DIR = "servers"  # one <pid>.json per running server of the vault
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
    page_key: str = ""  # the page's key of this start (web/csrf.py)

    @property
    def base_url(self) -> str:
        """Where the server answers: the address it bound (a specific address answers only there),
        loopback for a wildcard bind (it answers on every address, loopback the one never filtered)."""
        host = WILDCARD_LOOPBACK.get(self.host.strip("[]"), self.host)
        return f"http://{'[' + host + ']' if ':' in host and not host.startswith('[') else host}:{self.port}"

    @property
    def page_url(self) -> str:
        """The page's address with its key (opening it lets that browser write)."""
        return f"{self.base_url}/?key={self.page_key}" if self.page_key else f"{self.base_url}/"


WILDCARD_LOOPBACK = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}  # a name, not a bind


def settings_fingerprint(app: App) -> str:
    """A hash of every effective setting: a command whose settings differ (``--set``, another
    environment) must not take a server's answer for its own."""
    rows = [(key, repr(value)) for key, value, _ in as_rows(app.loaded)]
    return sha256_hex(json.dumps(rows))[:16]


def record_file(app: App, pid: int) -> Path:
    return app.home.root / RUNTIME_DIR / f"{pid}.json"


def announce(app: App, info: ServerInfo) -> None:
    """Say that a server for this vault listens (atomically: a reader never sees half a file)."""
    path = record_file(app, info.pid)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.parent.chmod(0o700)  # the page's key is in it: no other OS user lists or reads these
    atomic_write(path, json.dumps(asdict(info)), mode=0o600, durable=False)


def withdraw(app: App, pid: int) -> None:
    """Remove this server's record (the others stay)."""
    record_file(app, pid).unlink(missing_ok=True)


def record(app: App, pid: int) -> ServerInfo | None:
    """The record of server ``pid``, as written (alive or not)."""
    try:
        data = json.loads(record_file(app, pid).read_text(encoding="utf-8"))
        return ServerInfo(
            int(data["pid"]),
            str(data["host"]),
            int(data["port"]),
            str(data["vault"]),
            data.get("token_env"),
            str(data.get("settings", "")),
            str(data.get("page_key", "")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def servers(app: App) -> list[ServerInfo]:
    """The servers recorded for this vault whose process is alive, newest first; the records of
    dead ones (killed without a chance to withdraw) are removed on the way."""
    found: list[tuple[float, ServerInfo]] = []
    try:
        paths = list((app.home.root / RUNTIME_DIR).glob("*.json"))
    except OSError:
        return []
    for path in paths:
        if not path.stem.isdigit():
            continue
        info = record(app, int(path.stem))
        if info is None or not process_alive(info.pid):
            path.unlink(missing_ok=True)
            continue
        if info.vault == str(app.vault):
            try:
                found.append((path.stat().st_mtime, info))
            except OSError:  # withdrawn meanwhile
                continue
    return [info for _, info in sorted(found, key=lambda x: -x[0])]


def running_server(app: App) -> ServerInfo | None:
    """A live server for this vault whose settings are ours (the newest, when there are several)."""
    ours = settings_fingerprint(app)
    return next((info for info in servers(app) if info.settings == ours), None)


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


class OtherServerRunning(VaultlensError):
    """`ui` found this vault served with other settings: a second server would pile up beside it."""

    code = "server_running"
    exit_code = 1
    http_status = 409


def server_for_page(app: App) -> ServerInfo | None:
    """The server `vaultlens ui` opens: a live one for this vault with our settings that answers;
    None when there is none (start one). A server that answers with other settings is refused with
    its pid and URL instead of starting a second one beside it: two servers of one vault load the
    model twice, only one keeps the index current, and one started in the background keeps running."""
    ours = settings_fingerprint(app)
    others = []
    for info in servers(app):
        if healthy(info):
            if info.settings == ours:
                return info
            others.append(info)
    if others:
        where = "; ".join(f"pid {o.pid} at {o.page_url}" for o in others)  # keyed: opened, it writes
        raise OtherServerRunning(
            f"vaultlens serve already serves {app.vault}, with settings that differ from this "
            f"command's: {where}",  # no full stop: it would be copied into the key
            hint="Open it as it is (or run `vaultlens ui` with the settings it was started with), or "
            f"stop it (`kill {' '.join(str(o.pid) for o in others)}`) and run this again to start one "
            "with these.",
        )
    return None


class ServerDidNotStart(VaultlensError):
    code = "server_did_not_start"
    exit_code = 1
    http_status = 500


def start_in_background(app: App, serve_args: Sequence[str]) -> ServerInfo:
    """Start ``vaultlens serve SERVE_ARGS`` as a detached process (it keeps serving after this
    command ends) and wait until it announces itself (its record); its output goes to
    ``serve.log`` in the index root. The child is this same Python running ``-m vaultlens``."""
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
        info = record(app, child.pid)
        if info is not None and healthy(info):
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
    params: dict[str, str | int] = {"q": query}
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
