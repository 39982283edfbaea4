"""`vaultlens search`: one query (or one a line from stdin), answered by a running `serve` when there is
one for this vault (its model is loaded), else in this process; a query that is exactly one ``#tag``
lists the notes carrying it first (the ``tagged`` verb, as the page's search box does)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from vaultlens.cli import render
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.cli.render import shown

if TYPE_CHECKING:
    from vaultlens.services.app import App
    from vaultlens.services.verbs.finding import SearchHits


def search(
    query: Annotated[
        str,
        typer.Argument(
            help="What you are looking for; '-' reads one query per line from stdin "
            "(with --json: one JSON object per query, JSON Lines)."
        ),
    ],
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, help="Notes to show.")] = None,
    sections: Annotated[int | None, typer.Option(min=1, help="Sections per note.")] = None,
) -> None:
    """Find notes by meaning and by words; results are grouped per note with their best sections."""
    app = open_app(vault, set_)
    if query == "-":
        for line in sys.stdin:
            q = line.strip()
            if not q:
                continue
            render.note_if_cut(q, app.settings.search)
            hits = _search_here(app, q, limit, sections)
            _print_notices(hits)
            if json_:
                results = [h.as_dict() for h in hits]
                render.print_json({"query": q, "results": results}, line=True)
            else:
                render.out.rule(q)
                render.print_hits(hits)
        if not json_:
            _warn_if_partial(app)
        return
    render.note_if_cut(query, app.settings.search)
    warm = _search_warm(app, query, limit, sections)
    found = warm if warm is not None else _search_here(app, query, limit, sections)
    _print_notices(found)
    if json_:
        render.print_json([h.as_dict() for h in found])
    else:
        print_tagged(app, query)  # exactly one #tag: the notes carrying it come first
        render.print_hits(found)
        _warn_if_partial(app)


def _print_notices(hits: SearchHits) -> None:
    """What the results cannot show themselves (the quality tier was left out), on stderr."""
    for notice in hits.notices:
        render.err.print(f"[yellow]{shown(notice)}[/yellow]")


def _warn_if_partial(app: App) -> None:
    """Say so when the index does not hold every note yet: results alone cannot show what is missing."""
    from vaultlens.services.verbs import status

    run = status.unfinished_run(app)
    if run is None:
        return
    if run.status == "running":
        render.err.print(
            "[yellow]An index run is in progress; notes it has not reached are not in these results.[/yellow]"
        )
    else:
        render.err.print(
            f"[yellow]The last index run was {run.status} before it reached every note, so these results may "
            "miss notes.[/yellow] Run `vaultlens index` to finish it."
        )


def _search_here(app: App, query: str, limit: int | None, sections: int | None) -> SearchHits:
    """Search in this process (the model is loaded here)."""
    from vaultlens.services.verbs.finding import search as find

    return find(app, query, limit, sections)


def _search_warm(app: App, query: str, limit: int | None, sections: int | None) -> SearchHits | None:
    """Ask a `vaultlens serve` running for this vault with the same settings (its model is
    loaded); None when there is none, and the search runs here."""
    from vaultlens.server.runtime import search_via_server

    return search_via_server(app, query, limit, sections)


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
