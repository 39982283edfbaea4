"""Options every command shares, and turning them into an :class:`App`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from vaultlens.errors import ConfigError
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
