"""Options every command shares, and turning them into an :class:`App`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.errors import ConfigError, ConsentRequired, VaultError
from vaultlens.services.app import App

T = TypeVar("T")

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
    from_env = vault is None and bool(os.environ.get("VAULTLENS_VAULT"))
    root = vault or Path(os.environ.get("VAULTLENS_VAULT") or ".")
    try:
        return App.open(root, parse_overrides(sets))
    except VaultError as exc:
        if not from_env:
            raise
        raise type(exc)(
            f"{exc.message.rstrip('.')} (the folder comes from $VAULTLENS_VAULT).", hint=exc.hint
        ) from None


def with_consent(yes: bool, run: Callable[[bool], T]) -> T:
    """Run a service; when it needs consent to send note text off this machine, say what goes
    where and ask (remembered per destination), or take ``--yes``, then run it again with it."""
    try:
        return run(False)
    except ConsentRequired as exc:
        render.err.print(
            f"[yellow]vaultlens will send {escape(exc.what)} to {escape(exc.destination)}.[/yellow]"
        )
        if not yes:
            if not sys.stdin.isatty():
                raise ConsentRequired(
                    exc.destination,
                    exc.what,
                    message=f"Not sending note text to {exc.destination} without your agreement.",
                    hint="Run the command in a terminal to answer, or pass --yes.",
                ) from None
            if not typer.confirm("Send it there?", default=False):
                raise ConsentRequired(
                    exc.destination,
                    exc.what,
                    message="Nothing was sent.",
                    hint="Choose a local provider with --set embedding.provider=local.",
                ) from None
        return run(True)
