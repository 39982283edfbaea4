"""The write guard for a paired client (the Obsidian plugin): its token, or else the page's CSRF check.

A request that carries ``X-Vaultlens-Write-Token`` is judged by that token alone
(:mod:`vaultlens.config.pairing`): the plugin sends no page token and no browser ``Origin``. A web
page cannot send that header to this server at all (a custom header needs a CORS preflight the
server never grants), and another local program does not know the token. A request without it
is the page's, checked by :class:`~vaultlens.web.csrf.Csrf`. Only the page's write routes
depend on this: ``/v1`` and MCP have no write route to unlock.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request

from vaultlens.config import pairing
from vaultlens.errors import VaultlensError
from vaultlens.web.state import WebState

HEADER = "X-Vaultlens-Write-Token"


class WriteTokenRefused(VaultlensError):
    code = "write_token_refused"
    exit_code = 2
    http_status = 403


def write_guard(state: WebState) -> Callable[[Request], None]:
    def check(request: Request) -> None:
        given = request.headers.get(HEADER)
        if given is None:
            state.csrf.check(request)
        elif not pairing.accepts(state.app.vault, given):
            raise WriteTokenRefused(
                "Refused: the write token is not this vault's (revoked, replaced, or for another vault).",
                hint=f"Run `vaultlens obsidian pair --vault {state.app.vault}` and paste the new token "
                "into the plugin's settings.",
            )

    return check
