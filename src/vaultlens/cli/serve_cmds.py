"""`vaultlens serve` (HTTP API + MCP over HTTP + watcher) and `vaultlens mcp` (MCP over stdio).

The server modules import FastAPI, uvicorn and the MCP SDK; they are imported inside the
commands, so `vaultlens --help` and one-shot commands do not pay for them.
"""

from __future__ import annotations

import os
import threading
from typing import Annotated

import typer

from vaultlens.cli import render
from vaultlens.cli.options import HomeOpt, JsonOpt, SetOpt, VaultOpt, YesOpt, open_app
from vaultlens.cli.render import shown


def serve(
    vault: VaultOpt = None,
    set_: SetOpt = None,
    yes: YesOpt = False,
    host: Annotated[
        str, typer.Option(help="Address to listen on. Anything but loopback needs --token-env.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on (0: any free port).")] = 8765,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            metavar="NAME",
            help="Require 'Authorization: Bearer <token>' on every request, the token read from $NAME.",
        ),
    ] = None,
    watch: Annotated[
        bool, typer.Option("--watch/--no-watch", help="Keep the index current while serving.")
    ] = True,
    data_home: HomeOpt = None,
) -> None:
    """Serve the vault read-only: HTTP API under /v1, MCP at /mcp, the index kept current."""
    from vaultlens.server.serve import Companion

    app = open_app(vault, set_, data_home)
    token = os.environ.get(token_env) if token_env else None

    def say(line: str) -> None:
        render.err.print(shown(line), soft_wrap=True)  # one line: the page address stays whole

    companion = Companion(
        app,
        host,
        port,
        token,
        token_env,
        watch=watch,
        consent=yes,
        say=say,
        on_flush=lambda report: render.err.print(render.flush_line(report)),
    )
    try:
        companion.run()
    finally:
        app.close()
    render.err.print("Stopped serving.")


def ui(
    vault: VaultOpt = None,
    set_: SetOpt = None,
    data_home: HomeOpt = None,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the default browser (--no-open: print the URL).")
    ] = True,
    json_out: JsonOpt = False,
) -> None:
    """Open the vault's web page in the browser; starts `vaultlens serve` in the background when none runs.

    A server for the vault that runs with other settings (--set, the environment, the config file)
    is named (pid and URL) and left alone instead of starting a second one beside it."""
    import webbrowser

    from vaultlens.server import runtime

    app = open_app(vault, set_, data_home)
    started = False
    try:
        info = runtime.server_for_page(app)
        if info is None:
            started = True
            render.err.print("Starting `vaultlens serve` in the background (it loads the model once)…")
            args = ["--vault", str(app.vault), "--port", "0", *[a for s in set_ or [] for a in ("--set", s)]]
            info = runtime.start_in_background(app, args)
            render.err.print(f"Serving (pid {info.pid}); it keeps running: stop it with `kill {info.pid}`.")
    finally:
        app.close()
    url = info.page_url  # with the page's key: the browser opened at it may write
    token = os.environ.get(info.token_env) if info.token_env else None
    opened = f"{url}{'&' if '?' in url else '?'}token={token}" if token else url  # a cookie from each
    if json_out:
        render.print_json({"url": info.base_url + "/", "page_url": url, "pid": info.pid, "started": started})
    else:
        render.out.print(url, soft_wrap=True)
    if open_browser and not webbrowser.open(opened):
        render.err.print("No browser could be opened here; open the URL above.")


def mcp(vault: VaultOpt = None, set_: SetOpt = None, data_home: HomeOpt = None) -> None:
    """Run the read-only MCP server over stdio (for Claude Desktop, Claude Code, Cursor, Codex...)."""
    import anyio

    from vaultlens.server.mcp_tools import build_mcp

    app = open_app(vault, set_, data_home)
    server = build_mcp(app)

    def warm() -> None:  # load the model while the client connects; a first search waits for it
        try:
            provider = app.provider()
            if not provider.remote:
                provider.embed(["warm up"])
        except Exception:  # noqa: BLE001 - the first tool call reports the same error properly
            return

    threading.Thread(target=warm, name="vaultlens-warm", daemon=True).start()
    try:
        server.run("stdio")
    except BaseExceptionGroup as group:
        # the client closed stdin while the SDK still answered (e.g. a log notice about a malformed
        # line): nothing is left to talk to, which is the end of a session, not a crash
        _, rest = group.split((anyio.ClosedResourceError, anyio.BrokenResourceError))
        if rest is not None:
            raise rest from None
    finally:
        app.close()
