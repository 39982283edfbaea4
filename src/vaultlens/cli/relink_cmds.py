"""`vaultlens move OLD NEW` and `vaultlens merge KEEP OTHER`: one operation group each, with every
link in the vault repointed; shown as one exact diff, written after one yes (``--yes`` skips the
question, never the diff), undone together with `vaultlens undo GROUP`. No model is called."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.options import AllowOpenOpt, ConfirmOpt, JsonOpt, PlanOnlyOpt, SetOpt, VaultOpt
from vaultlens.cli.writing import ToolOptions, run_tool

__all__ = ["merge", "move"]


def _show_move(result: Any) -> None:
    data = result.as_dict()
    render.out.print(
        f"[bold]Move {escape(data['old'])}[/bold] to {escape(data['new'])}; "
        f"links rewritten in {len(data['relinked'])} note(s)."
    )


def _show_merge(result: Any) -> None:
    data = result.as_dict()
    carried = ", ".join(repr(h or "(text before the first heading)") for h in data["carried"]) or "none"
    render.out.print(f"[bold]Merge {escape(data['other'])}[/bold] into {escape(data['keep'])}")
    render.out.print(f"  sections added: {escape(carried)}")
    render.out.print(
        f"  links rewritten in {len(data['relinked'])} note(s); the note goes to {escape(data['trash'])}"
    )
    if data["trash_note"]:
        render.out.print(f"  [yellow]{escape(data['trash_note'])}[/yellow]")


def move(
    old: Annotated[str, typer.Argument(help="The note to move (vault-relative path).")],
    new: Annotated[str, typer.Argument(help="Its new vault-relative path (ending in .md).")],
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
    keep: Annotated[str, typer.Argument(help="The note that stays (vault-relative path).")],
    other: Annotated[str, typer.Argument(help="The note merged into KEEP, then moved to the trash.")],
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
