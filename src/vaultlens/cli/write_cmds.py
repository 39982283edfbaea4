"""`vaultlens apply`, `undo` and `history`, and the `vaultlens write` group of note tools: every change
to a note is shown as its exact diff first."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vaultlens.cli import render
from vaultlens.cli.options import AllowOpenOpt, ConfirmOpt, JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.cli.render import shown
from vaultlens.cli.writing import apply_confirmed, report_recovery

if TYPE_CHECKING:
    from vaultlens.services.verbs.changing import Befores

write_app = typer.Typer(
    help="Note tools: continue, transform, Dataview, flashcards, split, batch; every change is an exact diff to confirm.",
    no_args_is_help=True,
)

OpArg = Annotated[str, typer.Argument(help="Operation id (see `vaultlens history`).")]


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


def history(
    op: Annotated[str | None, typer.Argument(help="An operation or group id: list only it.")] = None,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    show_before: Annotated[
        bool,
        typer.Option(
            "--show-before",
            help="Print what OP's notes held before it wrote them, byte for byte from the journal.",
        ),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="With --show-before: save that text to FILE (outside the vault) instead of printing it.",
        ),
    ] = None,
) -> None:
    """Every change vaultlens planned or made in this vault, and its state; with OP --show-before,
    the text a change replaced, even where undo is refused."""
    from vaultlens.errors import InvalidInput
    from vaultlens.services.verbs import changing

    if (show_before or output) and op is None:
        raise InvalidInput(
            "--show-before and --output need an operation id.",
            hint="`vaultlens history` lists them; then `vaultlens history OP --show-before`.",
        )
    if output is not None and not show_before:
        raise InvalidInput("--output saves what --show-before shows; add --show-before.")
    app = open_app(vault, set_)
    if show_before and op is not None:
        _print_before(changing.show_before(app, op, output), json_)
        return
    entries = changing.history(app)
    if op is not None:
        entries = [e for e in entries if e.op_id == op]
        if not entries:
            from vaultlens.errors import OperationNotFound

            raise OperationNotFound(
                f"No operation {op} in this vault's journal.",
                hint="`vaultlens history` lists the operations of this vault.",
                op_id=op,
            )
    if json_:
        render.print_json([e.as_dict() for e in entries])
        return
    if not entries:
        render.out.print("No changes recorded for this vault.")
        return
    for e in entries:
        undo_note = f" (undo of {e.undo_of})" if e.undo_of else ""
        render.out.print(
            f"{e.op_id}  [bold]{e.state.replace('_', ' '):<11}[/bold] {shown(e.path)}  "
            f"[dim]{shown(e.summary)}{undo_note} · {e.updated}[/dim]"
        )
    listed = {e.op_id for e in entries}
    for op_id, problem in changing.unfinished(app):  # what a crash left, and the way back
        if op_id in listed:
            render.err.print(f"[yellow]![/yellow] {shown(problem)}.")


def _print_before(found: Befores, json_: bool) -> None:
    """The journal's copies: raw bytes (one operation, printed to a pipe: exactly what the note
    held), each under a header for a group, control characters made visible on a terminal."""
    if json_:
        render.print_json(found.as_dict())
        return
    if found.saved is not None:
        [kept] = [b for b in found.items if b.data is not None]
        render.out.print(
            f"Saved what {render.shown(kept.path)} held before {kept.op_id} ({len(kept.data or b'')} bytes) "
            f"to {render.shown(str(found.saved))}."
        )
        return
    sys.stdout.flush()
    tty = sys.stdout.isatty()
    raw = getattr(sys.stdout, "buffer", None)  # None: a text stream (a test's), given the text
    for b in found.items:
        shown = (
            [f"==> {b.path} ({b.op_id}, {b.state.replace('_', ' ')}) <==\n".encode()] if found.group else []
        )
        if b.data is None:
            shown.append(f"({b.path} did not exist before {b.op_id}: it created the note.)\n".encode())
        else:
            shown.append(b.visible().encode() if tty or raw is None else b.data)
        for data in shown:
            if raw is None:
                sys.stdout.write(data.decode("utf-8", "surrogateescape"))
            else:
                raw.write(data)
    sys.stdout.flush()
