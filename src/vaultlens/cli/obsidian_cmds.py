"""`vaultlens obsidian install` and `vaultlens obsidian pair`: the Obsidian plugin, from the package."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.options import JsonOpt, vault_folder
from vaultlens.errors import Cancelled, ConfigError

obsidian_cli = typer.Typer(
    help="The Obsidian plugin: install it into a vault, pair it for writes.", no_args_is_help=True
)

VaultArg = Annotated[
    Path | None,
    typer.Option(
        "--vault",
        "-v",
        help="The vault folder Obsidian opens (default: $VAULTLENS_VAULT or the current folder).",
    ),
]


def install(
    vault: VaultArg = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Write without asking (for scripts).")] = False,
    json_: JsonOpt = False,
) -> None:
    """Copy the plugin (main.js, manifest.json, styles.css) into VAULT/.obsidian/plugins/vaultlens/."""
    from vaultlens.services.verbs import installing

    plan = installing.plan_install(vault_folder(vault))
    if not json_:
        render.out.print(f"vaultlens plugin {plan.version} → {escape(str(plan.folder))}")
        for f in plan.files:
            render.out.print(f"  {f.action:9} {f.name} ({len(f.data):,} bytes)")
    if plan.changes and not yes:
        if json_ or not sys.stdin.isatty():
            raise ConfigError(
                "Nothing was written: installing needs a yes.", hint="Pass --yes, or run it in a terminal."
            )
        try:
            agreed = typer.confirm("Write these files (no note is changed)?", default=False)
        except typer.Abort:
            raise Cancelled("Stopped at the question; nothing was written.") from None
        if not agreed:
            raise Cancelled("Nothing was written.")
    installing.install(plan)
    if json_:
        render.print_json(plan.as_dict())
    elif plan.changes:
        render.out.print(
            "Installed. In Obsidian: Settings → Community plugins → turn on 'vaultlens' (reload the app if it "
            "is not listed); then start `vaultlens serve --vault " + escape(str(plan.vault)) + "`."
        )
    else:
        render.out.print("Already installed; nothing to write.")


def pair(
    vault: VaultArg = None,
    revoke: Annotated[
        bool, typer.Option("--revoke", help="Forget the token: the plugin can no longer write.")
    ] = False,
    json_: JsonOpt = False,
) -> None:
    """Issue the write token the plugin sends with review, apply and undo (paste it into its settings)."""
    from vaultlens.config import pairing
    from vaultlens.vault.scan import check_vault

    folder = vault_folder(vault).expanduser().absolute()
    if revoke:
        done = pairing.revoke(folder)
        if json_:
            render.print_json({"revoked": done})
        else:
            render.out.print(
                "Revoked: the plugin can no longer write." if done else "No write token was issued."
            )
        return
    token = pairing.issue(check_vault(folder))  # a token for a mistyped folder would never be accepted
    if json_:
        render.print_json({"token": token})
        return
    render.err.print(
        "Paste this into the plugin's settings (Write token). It is shown once; pairing again replaces it, "
        "`vaultlens obsidian pair --revoke` withdraws it."
    )
    sys.stdout.write(token + "\n")


obsidian_cli.command("install")(install)
obsidian_cli.command("pair")(pair)
