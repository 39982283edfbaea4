"""Options every command shares, and turning them into an :class:`App`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.config import consent
from vaultlens.errors import ConfigError
from vaultlens.services import app as services
from vaultlens.services.app import App

VaultOpt = Annotated[
    Path | None,
    typer.Option("--vault", "-v", help="Vault folder (default: $VAULTLENS_VAULT or the current folder)."),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a setting for this run, e.g. --set search.limit=5 (repeatable)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
YesOpt = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Agree to send note text to the configured remote embedding provider."),
]


def parse_overrides(sets: list[str] | None) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for item in sets or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}.")
        overrides[key.strip()] = value.strip()
    return overrides


def open_app(vault: Path | None, sets: list[str] | None) -> App:
    root = vault or Path(os.environ.get("VAULTLENS_VAULT") or ".")
    return App.open(root, parse_overrides(sets))


def confirm_remote(app: App, yes: bool) -> None:
    """Before note text first leaves the machine, say what goes where and ask (once per destination)."""
    destination = services.remote_destination(app)
    if destination is None or consent.granted(destination):
        return
    render.err.print(
        f"[yellow]vaultlens will send the text of your notes (in chunks of up to "
        f"{app.settings.index.chunk_max} characters) to {escape(destination)} to compute embeddings.[/yellow]"
    )
    if not yes:
        if not sys.stdin.isatty():
            raise ConfigError(
                f"Not sending note text to {destination} without your agreement.",
                hint="Run the command in a terminal to answer, or pass --yes.",
            )
        if not typer.confirm("Send note text there?", default=False):
            raise ConfigError(
                "Nothing was sent.", hint="Choose a local provider with --set embedding.provider=local."
            )
    consent.grant(destination)
