"""Who may talk to the companion server: the bind rule, the bearer token and the Host check.

A loopback bind answers only to processes on this machine, so it needs no token; any other
bind is reachable from the network and is refused at start without one. A token, when set,
is required on every request (``Authorization: Bearer <token>``, compared in constant time),
the MCP endpoint included. On a loopback bind the ``Host`` header must name loopback too: a web
page the user opens could otherwise point its own domain at 127.0.0.1 (DNS rebinding) and read
the vault through the user's browser.

A browser cannot send that header when the user opens the page, so the page's first URL may carry
the token as ``?token=`` (GET only): it is answered with an HttpOnly, SameSite=Strict cookie that
later requests of the page bring back instead of the header, and a redirect to the URL without it.
The page's key (:mod:`vaultlens.web.csrf`: what lets a browser write through the page) comes the same
way, as ``?key=``; a wrong one is told so and sets nothing.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
from collections.abc import Callable
from http.cookies import SimpleCookie
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, parse_qsl, quote, urlencode

from vaultlens.errors import ConfigError, VaultlensError
from vaultlens.server.limits import MAX_BODY_BYTES
from vaultlens.web.csrf import KEY_HINT, PageKeyRequired, key_cookie

if TYPE_CHECKING:  # types only: `vaultlens search` imports this module and must stay light
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
COOKIE = "vaultlens_token"


class Unauthorized(VaultlensError):
    code = "unauthorized"
    exit_code = 2
    http_status = 401


class ForbiddenHost(VaultlensError):
    code = "forbidden_host"
    exit_code = 2
    http_status = 403


def is_loopback(host: str) -> bool:
    """True for names and addresses that only this machine can reach."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_bind(host: str, token: str | None, token_env: str | None) -> None:
    """Refuse (ConfigError) a bind that the network can reach when no token protects it."""
    if token_env is not None and not _ENV_NAME.fullmatch(token_env):
        raise ConfigError(
            f"--token-env takes the NAME of an environment variable (letters, digits, _), got {token_env!r}.",
            hint="e.g. --token-env VAULTLENS_TOKEN, with the secret in $VAULTLENS_TOKEN (never the token itself).",
        )
    if token_env is not None and not token:
        raise ConfigError(
            f"--token-env {token_env} names an environment variable that is not set or empty.",
            hint=f"Set it first, e.g. export {token_env}=$(python -c 'import secrets; print(secrets.token_urlsafe(32))')",
        )
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"Refusing to serve the vault on {host}: it is reachable from other machines and no token is set.",
            hint="Keep the default --host 127.0.0.1, or pass --token-env NAME with a secret in $NAME; "
            "clients then send 'Authorization: Bearer <token>'.",
        )


class RequestTooLarge(VaultlensError):
    code = "request_too_large"
    http_status = 413


def _too_large() -> RequestTooLarge:
    return RequestTooLarge(
        f"The request body is larger than {MAX_BODY_BYTES:,} bytes; no call needs that much."
    )


async def _read_capped(receive: Receive) -> Receive | None:
    """A body sent without a length (chunked), read here up to the cap and replayed to the app;
    None once it passes the cap, so it is refused before the app reads any of it."""
    body, more = b"", True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        more = message.get("more_body", False)
        if len(body) > MAX_BODY_BYTES:
            return None
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def _host_name(value: str) -> str:
    """The host part of a Host header (``[::1]:8765`` -> ``[::1]``, ``localhost:80`` -> ``localhost``)."""
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


async def send_error(send: Send, error: VaultlensError, extra_headers: list[tuple[bytes, bytes]]) -> None:
    """The server's one error shape, ``{"error": {code, message, hint}}``, from plain ASGI."""
    body = json.dumps({"error": error.to_dict()}, ensure_ascii=False).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": error.http_status, "headers": headers + extra_headers}
    )
    await send({"type": "http.response.body", "body": body})


# (method, path, Accept, error) -> the error as an HTML page for a browser's visit, None for a program
ErrorPage = Callable[[str, str, str, VaultlensError], "str | None"]


def for_a_visit(problem: VaultlensError) -> VaultlensError:
    """A refusal as a person opening the page needs it: a browser sends no bearer header, so the way
    in is the token in the address, once."""
    if not isinstance(problem, Unauthorized):
        return problem
    return Unauthorized(
        "This page needs the server's token, and this visit carried none (or a wrong one).",
        hint="Open the address `vaultlens serve` printed (the one ending in ?key=...) once with "
        "&token=TOKEN added, TOKEN from the server's --token-env variable (or run `vaultlens ui`); the page "
        "keeps both in cookies from then on (?token=TOKEN alone opens it read-only).",
    )


class Guard:
    """ASGI middleware in front of everything the server answers (API, OpenAPI, MCP). ``error_page``:
    how a refusal looks to a browser visiting the page (HTML, not the API's JSON)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        loopback_only: bool,
        error_page: ErrorPage | None = None,
        page_key: str | None = None,
    ) -> None:
        self.app = app
        self.token = token.encode("utf-8") if token else None
        self.page_key = page_key.encode("utf-8") if page_key else None
        self.loopback_only = loopback_only
        self.error_page = error_page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = dict(scope.get("headers", []))
        problem = self._problem(headers)
        if isinstance(problem, Unauthorized) and self._in_url(scope, "token", self.token):
            await _cookie_and_redirect(scope, send, COOKIE, "token", self.token or b"")
            return
        if problem is None and self.page_key is not None and _query(scope, "key") is not None:
            if self._in_url(scope, "key", self.page_key):
                name = key_cookie(headers.get(b"host", b"").decode("latin-1"))
                await _cookie_and_redirect(scope, send, name, "key", self.page_key)
                return
            if scope.get("method") == "GET":
                problem = PageKeyRequired(
                    "This address carries a wrong page key (from an earlier start of the server, or "
                    "mistyped), so this browser was not given it: the page is read-only here.",
                    hint=KEY_HINT,
                )
        if problem is None:
            declared = headers.get(b"content-length")
            if declared is None and scope.get("method") in ("POST", "PUT", "PATCH"):
                replay = await _read_capped(receive)
                if replay is None:
                    await send_error(send, _too_large(), [])
                    return
                receive = replay
            elif declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
                await send_error(send, _too_large(), [])
                return
            await self.app(scope, receive, send)
            return
        extra = (
            [(b"www-authenticate", b'Bearer realm="vaultlens"')] if isinstance(problem, Unauthorized) else []
        )
        if self.error_page is not None:
            accept = headers.get(b"accept", b"").decode("latin-1")
            page = self.error_page(
                scope.get("method", ""), scope.get("path", ""), accept, for_a_visit(problem)
            )
            if page is not None:
                await _send_html(send, problem.http_status, page, extra)
                return
        await send_error(send, problem, extra)

    def _in_url(self, scope: Scope, param: str, secret: bytes | None) -> bool:
        """A page opened as ``/?token=...`` (the first load of the page beyond loopback) or ``/?key=...``
        (the page's key), with the right secret (GET only)."""
        if secret is None or scope.get("method") != "GET":
            return False
        return hmac.compare_digest((_query(scope, param) or "").encode("utf-8"), secret)

    def _problem(self, headers: dict[bytes, bytes]) -> VaultlensError | None:
        if self.loopback_only:
            host = _host_name(headers.get(b"host", b"").decode("latin-1"))
            if not is_loopback(host):
                return ForbiddenHost(
                    f"This server answers only to loopback host names, not {host!r}.",
                    hint="Connect to http://127.0.0.1:<port> (or localhost).",
                )
        if self.token is None:
            return None
        given = headers.get(b"authorization", b"")
        scheme, _, value = given.partition(b" ")
        cookie = _cookie(headers)
        if cookie is not None and hmac.compare_digest(cookie, self.token):
            return None
        if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
            what = "no" if not given else "a wrong"
            return Unauthorized(
                f"This server needs a bearer token, and the request carried {what} token.",
                hint="Send 'Authorization: Bearer <token>' with the token from the server's --token-env variable.",
            )
        return None


async def _send_html(send: Send, status: int, page: str, extra_headers: list[tuple[bytes, bytes]]) -> None:
    body = page.encode("utf-8")
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + extra_headers})
    await send({"type": "http.response.body", "body": body})


def _cookie(headers: dict[bytes, bytes]) -> bytes | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get(b"cookie", b"").decode("latin-1"))
    except Exception:  # noqa: BLE001 - a malformed cookie header is no token
        return None
    found = jar.get(COOKIE)
    return None if found is None else found.value.encode("utf-8")


def _query(scope: Scope, param: str) -> str | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True).get(param)
    return None if values is None else values[-1]


async def _cookie_and_redirect(scope: Scope, send: Send, name: str, param: str, secret: bytes) -> None:
    """Answer ``GET /page?PARAM=...`` with the secret as an HttpOnly cookie (the page's scripts never
    see it) and a redirect to the same URL without it, so it stays out of the address bar and history."""
    kept = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1")) if k != param]
    location = quote(scope.get("path", "/")) + (f"?{urlencode(kept)}" if kept else "")
    cookie = f"{name}={secret.decode('utf-8')}; HttpOnly; SameSite=Strict; Path=/"
    headers = [
        (b"location", location.encode("latin-1")),
        (b"set-cookie", cookie.encode("latin-1")),
        (b"content-length", b"0"),
    ]
    await send({"type": "http.response.start", "status": 303, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
