"""`vaultlens write split | batch`: changes of many notes at once, each shown as its exact diff first.

``split`` plans one operation group (the new notes and the original's change: one diff, one yes,
applied and undone together); ``batch`` plans one change per note and reviews them one by one
(or all after showing them). Both call verbs of :mod:`vaultlens.services.verbs.restructuring`.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.notetool_cmds import NoteArg, PlanOnlyOpt, YesOpt, run_tool
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.cli.write_cmds import AllowOpenOpt

__all__ = ["split"]


def _show_split(result: Any) -> None:
    data = result.as_dict()
    render.out.print(f"[bold]Split {escape(data['path'])}[/bold] into {len(data['notes'])} notes:")
    for n in data["notes"]:
        spans = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in n["lines"])
        render.out.print(f"  {escape(n['path'])}  [dim]lines {spans}[/dim]")
    kept = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in data["kept"]) or "none"
    how = "becomes an index of links" if data["mode"] == "index" else "stays as it is"
    render.out.print(f"  the original {how}; lines staying in it: {kept}")


def split(
    note: NoteArg,
    keep_original: Annotated[
        bool, typer.Option("--keep-original", help="Leave the original as it is (the default).")
    ] = False,
    index: Annotated[
        bool, typer.Option("--index", help="Turn the original into an index of links to the new notes.")
    ] = False,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
    plan_only: PlanOnlyOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Split NOTE into atomic notes (one group: applied and undone together); no line is lost or doubled."""
    from vaultlens.errors import InvalidInput
    from vaultlens.services.verbs import restructuring

    if keep_original and index:
        raise InvalidInput("Choose one of --keep-original and --index.")
    app = open_app(vault, set_)
    mode: restructuring.SplitMode = "index" if index else "keep-original"
    run_tool(
        app,
        lambda grant: restructuring.write_split(app, note, mode, grant is not None),
        _show_split,
        yes,
        json_,
        plan_only,
        allow_open,
    )
