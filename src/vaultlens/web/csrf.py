"""The page's write guard: a random token per server start, required on every POST.

The page carries the token in ``<meta name="vaultlens-csrf">``; its scripts send it back as the
``X-Vaultlens-CSRF`` header. Another site the user visits can make the browser POST to this
loopback server, but it can neither read the token (same-origin policy) nor set a custom header
without a preflight the server never grants; an ``Origin`` header, when present, must also be the
server's own. The bearer token and the Host check (:mod:`vaultlens.server.guard`) still apply.

Reading the page is open to every local process (like ``/v1``), and so is its HTML; writing is not.
Each start also makes a secret page key, which only the user's terminal (``vaultlens serve`` prints
the page's address with it) and home (the runtime record, ``vaultlens ui``) hold: opening
``/?key=KEY`` sets it as an HttpOnly, SameSite=Strict cookie (:class:`vaultlens.server.guard.Guard`),
and only a request carrying that cookie gets the token rendered into the page and passes the check.
Another local program, another OS user's included, can read the page but not write through it.

The token starts with the server's start time (``<start>.<secret>``), so a page still open from an
earlier start of the server is told that the server restarted and to reload, not that its token is
wrong; the start is no secret and grants nothing, only the secret part does.
"""

from __future__ import annotations

import hmac
import re
import secrets
import time
from typing import TYPE_CHECKING

from vaultlens.errors import VaultlensError

if TYPE_CHECKING:  # types only: the server's guard imports this module, and `vaultlens search` the guard
    from fastapi import Request

HEADER = "X-Vaultlens-CSRF"
_SHAPE = re.compile(r"([0-9]{1,20})\.[A-Za-z0-9_-]{43}")  # a start in ns, then 32 random bytes


class CsrfRefused(VaultlensError):
    code = "csrf_refused"
    exit_code = 2
    http_status = 403


class PageKeyRequired(CsrfRefused):
    """A request without this start's page key cookie: the page is read-only for it."""

    code = "page_key_required"


KEY_HINT = (
    "Open the page at the address `vaultlens serve` printed (the one ending in ?key=...), or run "
    "`vaultlens ui`; the page can write from then on."
)


def key_cookie(host: str) -> str:
    """The key's cookie name, per port: a browser sends a loopback cookie to every port of the host,
    and two servers on two ports each keep their own key."""
    port = host.rsplit(":", 1)[1] if ":" in host and not host.endswith("]") else ""
    return f"vaultlens_key_{port}" if port.isdigit() else "vaultlens_key"


class PageExpired(CsrfRefused):
    """The page was loaded from an earlier start of this server, whose key is gone too: a reload shows
    the page as it is now (read-only), the address the new start printed lets it write again."""

    code = "page_expired"


def own_origin(request: Request) -> str:
    """The origin a page this server served sends: its scheme and the Host the browser used."""
    return f"{request.url.scheme}://{request.headers.get('host', '')}"


class Csrf:
    """One server's token and the check every sending or writing route depends on."""

    def __init__(self, token: str | None = None, key: str | None = None) -> None:
        self.started = time.time_ns()
        self.token = token or f"{self.started}.{secrets.token_urlsafe(32)}"
        self.key = key or secrets.token_urlsafe(32)

    def keyed(self, request: Request) -> bool:
        """The request carries this start's page key (the cookie ``/?key=`` set)."""
        given = request.cookies.get(key_cookie(request.headers.get("host", "")), "")
        return hmac.compare_digest(given.encode("utf-8"), self.key.encode("utf-8"))

    def token_for(self, request: Request) -> str:
        """The token a page shows: only to a browser holding the key; "" leaves the page read-only."""
        return self.token if self.keyed(request) else ""

    def check(self, request: Request) -> None:
        given = request.headers.get(HEADER, "")
        right = hmac.compare_digest(given.encode("utf-8"), self.token.encode("utf-8"))
        if not right:
            earlier = _SHAPE.fullmatch(given)
            if earlier is not None and int(earlier.group(1)) < self.started:
                raise PageExpired(
                    "Refused: the server restarted since this page was loaded, so the page's token "
                    "is no longer valid. Nothing was sent or written.",
                    hint="Reload the page. Each start makes a new page key: to write again, open the "
                    "address this start printed (the one ending in ?key=...) or run `vaultlens ui`, unless "
                    "this browser already did.",
                )
        if not self.keyed(request):
            raise PageKeyRequired(  # a browser without the key, or the Obsidian plugin not paired
                "Refused: this request carries neither this server's page key (a browser that opened "
                "the page at its keyed address) nor a paired plugin's write token, so it can only read. "
                "Nothing was sent or written.",
                hint=f"{KEY_HINT} From the Obsidian plugin: pair it with `vaultlens obsidian pair` and "
                "paste the token into its settings.",
            )
        if not right:
            raise CsrfRefused(
                f"Refused: this request {'carried a wrong' if given else 'carried no'} page token.",
                hint=f"Send it from the vaultlens page, which puts its token in the {HEADER} header.",
            )
        origin = request.headers.get("origin")
        if origin is not None and origin != own_origin(request):
            raise CsrfRefused(
                f"Refused: a request from {origin!r}, not from this server's own page.",
                hint="Write from the vaultlens page itself, opened at this server's address.",
            )
