"""`vaultlens apply`, `undo` and `history`: every change to a note is shown as its exact diff first."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.errors import WriteRefused
from vaultlens.services import writes
from vaultlens.services.app import App

OpArg = Annotated[str, typer.Argument(help="Operation id (see `vaultlens history`).")]
ConfirmOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Write without asking (the diff is still shown).")
]
AllowOpenOpt = Annotated[
    bool,
    typer.Option("--allow-open", help="Write even if the note is open in Obsidian (it may overwrite it)."),
]


def _report_recovery(app: App, json_: bool) -> None:
    for item in writes.recover(app):
        if not json_:
            render.err.print(
                f"[yellow]Interrupted write {item.op_id} ({escape(item.path)}):[/yellow] "
                f"{item.state.replace('_', ' ')} — {escape(item.detail)}"
            )


def _confirm_and_apply(app: App, planned: writes.Planned, yes: bool, json_: bool, allow_open: bool) -> None:
    entry = planned.entry
    if not json_:
        render.out.print(f"[bold]{escape(entry.summary)}[/bold]  [dim]{entry.op_id}[/dim]")
        sys.stdout.write(planned.diff)  # exactly the text whose SHA-256 is confirmed, no markup
        sys.stdout.flush()
    if not yes:
        if json_ or not sys.stdin.isatty():
            raise WriteRefused(
                f"Not written: confirm the diff of {entry.op_id} first.",
                hint="Run the command in a terminal to answer, or pass --yes.",
                op_id=entry.op_id,
            )
        if not typer.confirm(f"Write this change to {entry.path}?", default=False):
            render.err.print("Nothing was written.")
            raise typer.Exit(1)
    done = writes.apply(app, entry.op_id, planned.entry.diff_sha, allow_open=allow_open)
    if json_:
        render.print_json({**done.to_dict(), "diff": planned.diff})
    else:
        verb = "Deleted" if done.after_sha is None else "Written"  # the undo of a creation removes the note
        render.out.print(f"[green]{verb}[/green] {escape(done.path)} ({done.op_id}).")


def apply(
    op: OpArg,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ConfirmOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Show a planned operation's exact diff, ask, and write it only if the note is still as planned."""
    app = open_app(vault, set_)
    _report_recovery(app, json_)
    _confirm_and_apply(app, writes.to_confirm(app, op), yes, json_, allow_open)


def undo(
    op: OpArg,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ConfirmOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Put a note back as it was before OP, only if nobody changed it since (later edits are kept)."""
    app = open_app(vault, set_)
    _report_recovery(app, json_)
    _confirm_and_apply(app, writes.plan_undo(app, op), yes, json_, allow_open)


def history(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Every change vaultlens planned or made in this vault, and its state."""
    entries = writes.history(open_app(vault, set_))
    if json_:
        render.print_json([e.to_dict() for e in entries])
        return
    if not entries:
        render.out.print("No changes recorded for this vault.")
        return
    for e in entries:
        undo_note = f" (undo of {e.undo_of})" if e.undo_of else ""
        render.out.print(
            f"{e.op_id}  [bold]{e.state.replace('_', ' '):<11}[/bold] {escape(e.path)}  "
            f"[dim]{escape(e.summary)}{undo_note} · {e.updated}[/dim]"
        )
