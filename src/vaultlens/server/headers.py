"""The security headers every response of ``serve`` carries, set in one middleware so no page forgets.

The page must not be framed by another site (a framed ``/history`` is two invisible clicks from an
undo: clickjacking), so ``frame-ancestors 'none'`` and its older twin ``X-Frame-Options: DENY``. The
policy lets the page run only its own scripts and styles from ``/ui/static`` (no inline script,
handler or ``style=`` attribute: a note's text that slipped through escaping could not run either);
``data:`` images are the empty favicon. The headers go on every response, JSON and event streams
included: they cost nothing there and a route that starts answering HTML later is covered at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: this module is imported with the server, which loads Starlette anyway
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "object-src 'none'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode("ascii")),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
_NAMES = frozenset(name for name, _ in SECURITY_HEADERS)


class SecurityHeaders:
    """ASGI middleware: the outermost layer, so the guard's refusals and redirects carry them too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": [*kept, *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)
