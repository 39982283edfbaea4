"""`vaultlens apply`, `undo` and `history`, and the `vaultlens write` group of note tools: every change
to a note is shown as its exact diff first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app

if TYPE_CHECKING:
    from vaultlens.services.app import App

write_app = typer.Typer(
    help="Note tools: continue, transform, Dataview, flashcards, split, batch; every change is an exact diff to confirm.",
    no_args_is_help=True,
)

OpArg = Annotated[str, typer.Argument(help="Operation id (see `vaultlens history`).")]
ConfirmOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Write without asking (the diff is still shown).")
]
AllowOpenOpt = Annotated[
    bool,
    typer.Option("--allow-open", help="Write even if the note is open in Obsidian (it may overwrite it)."),
]


def report_recovery(app: App, json_: bool) -> None:
    """Settle writes a crash interrupted before anything else, and say what was found."""
    from vaultlens.services.verbs import changing

    for item in changing.recover(app):
        if not json_:
            render.err.print(
                f"[yellow]Interrupted write {item.op_id} ({escape(item.path)}):[/yellow] "
                f"{item.state.replace('_', ' ')} — {escape(item.detail)}"
            )


def apply_confirmed(app: App, op_id: str, yes: bool, json_: bool, allow_open: bool) -> None:
    """Show the operation's exact diff, ask (or take --yes), write it, and say what was done."""
    from vaultlens.services.verbs import changing

    done = confirmed(lambda grant: changing.apply(app, op_id, grant, allow_open), yes, json_)
    if json_:
        render.print_json(done.as_dict())
    else:
        entry = done.entry
        verb = "Deleted" if entry.after_sha is None else "Written"  # the undo of a creation removes the note
        render.out.print(f"[green]{verb}[/green] {escape(entry.path)} ({entry.op_id}).")


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
    report_recovery(app, json_)
    apply_confirmed(app, op, yes, json_, allow_open)


def undo(
    op: OpArg,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ConfirmOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Put a note back as it was before OP, only if nobody changed it since (later edits are kept)."""
    from vaultlens.services.verbs import changing

    app = open_app(vault, set_)
    report_recovery(app, json_)
    apply_confirmed(app, changing.plan_undo(app, op).entry.op_id, yes, json_, allow_open)


def history(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Every change vaultlens planned or made in this vault, and its state."""
    from vaultlens.services.verbs import changing

    entries = changing.history(open_app(vault, set_))
    if json_:
        render.print_json([e.as_dict() for e in entries])
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
