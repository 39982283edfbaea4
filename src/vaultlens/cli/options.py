"""Options more than one command takes, and turning them into an :class:`App`.

An option used by several command modules is declared here once, so command modules never import
each other; one used by a single module stays there.

Commands import the facade (:mod:`vaultlens.services.verbs`) inside their bodies, so ``--help``
and a command that needs no model load no model, numpy or HTTP client.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vaultlens.errors import ConfigError, VaultError

if TYPE_CHECKING:
    from vaultlens.services.app import App


def typed_note_path(path: str | None) -> str | None:
    """A note path as a shell user types it: ``./Note.md`` (a ``.`` segment anywhere) is ``Note.md``.
    The vault's path rules still refuse the rest (``..``, absolute paths, empty segments)."""
    if path is None:
        return None
    kept = [part for part in path.split("/") if part != "."]
    return "/".join(kept) if kept else path


VaultOpt = Annotated[
    Path | None,
    typer.Option("--vault", "-v", help="Vault folder (default: $VAULTLENS_VAULT or the current folder)."),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a setting for this run, e.g. --set search.limit=5 (repeatable)."),
]
HomeOpt = Annotated[
    Path | None,
    typer.Option(
        "--home",
        help="vaultlens's data folder (indexes, consent, keys), as $VAULTLENS_HOME; for MCP clients, "
        "which start the server with only a few environment variables.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
YesOpt = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Agree to send note text to the configured remote embedding provider."),
]
ConfirmOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Write without asking (the diff is still shown).")
]
ToolYesOpt = Annotated[
    bool,
    typer.Option(
        "--yes", "-y", help="Send and write without asking (what is sent and the diff are still shown)."
    ),
]
AllowOpenOpt = Annotated[
    bool,
    typer.Option("--allow-open", help="Write even if the note is open in Obsidian (it may overwrite it)."),
]
PlanOnlyOpt = Annotated[
    bool, typer.Option("--plan-only", help="Only plan the change; write it later with `vaultlens apply OP`.")
]
NoteArg = Annotated[str, typer.Argument(help="The note (vault-relative path).", callback=typed_note_path)]


def parse_overrides(sets: list[str] | None) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for item in sets or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects KEY=VALUE, got {item!r}.")
        overrides[key.strip()] = value.strip()
    return overrides


def vault_folder(vault: Path | None) -> Path:
    """``--vault``, else $VAULTLENS_VAULT, else the current folder: every command's vault."""
    return vault or Path(os.environ.get("VAULTLENS_VAULT") or ".")


def open_app(vault: Path | None, sets: list[str] | None, data_home: Path | None = None) -> App:
    """The App for ``--vault`` (or $VAULTLENS_VAULT, or the current folder) with ``--set`` overrides.

    ``data_home`` (``--home``) becomes $VAULTLENS_HOME for this process, so everything that reads
    the data folder (the index, the user config beside it, consent, keys, the servers' records) agrees."""
    from vaultlens.services.app import App  # the index machinery: only once a command runs

    if data_home is not None:
        os.environ["VAULTLENS_HOME"] = str(data_home.expanduser().absolute())

    from_env = vault is None and bool(os.environ.get("VAULTLENS_VAULT"))
    root = vault_folder(vault)
    try:
        return App.open(root, parse_overrides(sets))
    except VaultError as exc:
        if not from_env:
            raise
        raise type(exc)(
            f"{exc.message.rstrip('.')} (the folder comes from $VAULTLENS_VAULT).", hint=exc.hint
        ) from None
