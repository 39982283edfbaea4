"""`vaultlens index`, `rebuild` and `clear`: keep the index, and say what a run did."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, YesOpt, open_app
from vaultlens.cli.render import shown

if TYPE_CHECKING:
    from vaultlens.index.runs import RunStats


def _show_stats(stats: RunStats, json_: bool, vault: Path) -> None:
    if json_:
        render.print_json(stats.as_dict())
    else:
        _print_stats(stats, vault)


def _print_stats(stats: RunStats, vault: Path) -> None:
    render.out.print(
        f"Scanned {render.by_kind(stats.notes_scanned, stats.pdfs_scanned, stats.canvases_scanned)}: "
        f"{stats.files_changed} changed, {stats.files_deleted} removed; "
        f"{stats.chunks_embedded} chunks embedded, {stats.chunks_reused} reused, "
        f"{stats.chunks_deleted} deleted in {stats.seconds:.1f}s."
    )
    if stats.tier_embedded:
        render.out.print(
            f"Quality tier: {stats.tier_embedded} chunk texts embedded in {stats.tier_seconds:.1f}s "
            "(`vaultlens status` says which model and why; --set embedding.tier=off goes without)."
        )
    if stats.tier_error:
        render.err.print(
            f"[yellow]The quality tier stopped: {shown(stats.tier_error)}[/yellow] The index is up to date and "
            "search works without the missing tier vectors; the next `vaultlens index` resumes the tier."
        )
    if stats.files_skipped or stats.files_failed:
        render.out.print(
            f"[yellow]{stats.files_skipped} skipped, {stats.files_failed} failed[/yellow]"
            " — see `vaultlens status` for the reasons."
        )
    if stats.files_scanned == 0:
        render.err.print(
            f"[yellow]No Markdown notes found in {shown(str(vault))}.[/yellow] Is this your vault? "
            "Pass --vault PATH (or set VAULTLENS_VAULT)."
        )


def index(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False, yes: YesOpt = False) -> None:
    """Index the vault, or bring the index up to date (only changed chunks are embedded)."""
    from vaultlens.services.verbs import indexing

    app = open_app(vault, set_)
    with render.RichProgress() as progress:
        stats = confirmed(lambda grant: indexing.index(app, progress, grant is not None), yes, json_)
    _show_stats(stats, json_, app.vault)


def rebuild(
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
    background: Annotated[
        bool,
        typer.Option(
            "--background",
            help="Build next to the current index, which keeps answering searches, and switch when done. "
            "Resumable: run it again after an interruption to continue.",
        ),
    ] = False,
    switch_wait: Annotated[
        float, typer.Option(min=0, help="Seconds to wait for a running writer (e.g. `watch`) at the switch.")
    ] = 30.0,
) -> None:
    """Build the index again from scratch with the current settings (e.g. after changing the model)."""
    from vaultlens.services.verbs import indexing

    app = open_app(vault, set_)
    if not background:
        with render.RichProgress() as progress:
            stats = confirmed(lambda grant: indexing.rebuild(app, progress, grant is not None), yes, json_)
        _show_stats(stats, json_, app.vault)
        return
    if not json_:
        render.out.print(f"Building the new index next to {app.index_dir}; searches keep using it meanwhile.")
    with render.RichProgress() as progress:
        result = confirmed(
            lambda grant: indexing.rebuild_in_background(app, progress, switch_wait, grant is not None),
            yes,
            json_,
        )
    if json_:
        render.print_json(result.as_dict())
        return
    _print_stats(result.stats, app.vault)
    render.out.print(f"Switched to the new index in {result.index_dir}; the old one was deleted.")


def clear(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Empty the index. It stays empty until you run `vaultlens index` again."""
    from vaultlens.services.verbs import indexing

    app = open_app(vault, set_)
    done = indexing.clear(app)
    if json_:
        render.print_json(done.as_dict())
    elif done.cleared:
        render.out.print(f"Index for {shown(str(app.vault))} cleared.")
    else:
        render.out.print(f"There is no index for {shown(str(app.vault))}: nothing to clear.")
