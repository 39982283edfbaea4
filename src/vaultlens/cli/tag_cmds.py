"""`vaultlens search "#tag"`: a query that is exactly one tag lists the notes carrying it first (the ``tagged``
verb, as the page's search box does), then the meaning search as for any query."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaultlens.cli import render
from vaultlens.cli.render import shown

if TYPE_CHECKING:
    from vaultlens.services.app import App


def print_tagged(app: App, query: str) -> None:
    """The notes tagged ``query`` (with their tag lines), when the query is exactly one ``#tag``."""
    from vaultlens.services.verbs import finding

    name = finding.as_tag(query)
    if name is None:
        return
    found = finding.tagged(app, name)
    render.out.print(f"[bold]Notes tagged #{shown(found.tag)}[/bold] ({found.total})")
    if not found.notes:
        render.out.print("[dim]No note carries this tag.[/dim]")
    for n in found.notes:
        lines = ", ".join(f"L{line}" for line in n.lines)
        render.out.print(
            f"  [bold]{shown(n.title)}[/bold]  [cyan]{shown(n.path)}[/cyan]  [green]{lines}[/green]"
        )
    render.out.rule("By meaning and words")
