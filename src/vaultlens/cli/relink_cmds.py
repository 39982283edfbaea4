"""`vaultlens move OLD NEW` and `vaultlens merge KEEP OTHER`: one operation group each, with every
link in the vault repointed; shown as one exact diff, written after one yes (``--yes`` skips the
question, never the diff), undone together with `vaultlens undo GROUP`. No model is called."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.options import (
    AllowOpenOpt,
    ConfirmOpt,
    JsonOpt,
    PlanOnlyOpt,
    SetOpt,
    VaultOpt,
    typed_note_path,
)
from vaultlens.cli.writing import ToolOptions, run_tool

if TYPE_CHECKING:
    from vaultlens.services.verbs.restructuring import MergeResult, MoveResult

__all__ = ["merge", "move"]


def _show_move(result: MoveResult) -> None:
    move = result.plan_of
    render.out.print(
        f"[bold]Move {escape(move.old)}[/bold] to {escape(move.new)}; "
        f"links rewritten in {len(move.relinked)} note(s)."
    )


def _show_merge(result: MergeResult) -> None:
    merge = result.plan_of
    carried = ", ".join(repr(h or "(text before the first heading)") for h in merge.carried) or "none"
    render.out.print(f"[bold]Merge {escape(merge.other)}[/bold] into {escape(merge.keep)}")
    render.out.print(f"  sections added: {escape(carried)}")
    render.out.print(
        f"  links rewritten in {len(merge.relinked)} note(s); the note goes to {escape(merge.trash)}"
    )
    if merge.trash_note:
        render.out.print(f"  [yellow]{escape(merge.trash_note)}[/yellow]")


def move(
    old: Annotated[
        str, typer.Argument(help="The note to move (vault-relative path).", callback=typed_note_path)
    ],
    new: Annotated[
        str, typer.Argument(help="Its new vault-relative path (ending in .md).", callback=typed_note_path)
    ],
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ConfirmOpt = False,
    plan_only: PlanOnlyOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Move or rename OLD to NEW with every link to it in the vault rewritten (one group, undone together)."""
    from vaultlens.services.verbs import restructuring

    run_tool(
        ToolOptions(vault, set_, json_, yes, plan_only, allow_open),
        lambda app, _consent: restructuring.write_move(app, old, new),
        _show_move,
    )


def merge(
    keep: Annotated[
        str, typer.Argument(help="The note that stays (vault-relative path).", callback=typed_note_path)
    ],
    other: Annotated[
        str,
        typer.Argument(help="The note merged into KEEP, then moved to the trash.", callback=typed_note_path),
    ],
    sections: Annotated[
        list[str] | None,
        typer.Option(
            "--sections",
            help="Carry these sections of OTHER (by heading; repeatable) instead of those KEEP does not cover.",
        ),
    ] = None,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ConfirmOpt = False,
    plan_only: PlanOnlyOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Merge OTHER into KEEP: its uncovered sections added, front matter merged, every link to it
    repointed to KEEP, OTHER moved to the vault's trash (one group, undone together)."""
    from vaultlens.services.verbs import restructuring

    run_tool(
        ToolOptions(vault, set_, json_, yes, plan_only, allow_open),
        lambda app, _consent: restructuring.write_merge(app, keep, other, sections),
        _show_merge,
    )
