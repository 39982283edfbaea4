"""The ``vaultlens`` command: parse arguments, call a service, render the result.

No logic lives here that a service lacks; errors are :class:`VaultlensError` subclasses
printed as a message and a hint with a distinct exit code, never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.ask_cmds import ask, chat, providers
from vaultlens.cli.audit_cmds import audit_cli, moc
from vaultlens.cli.discover_cmds import duplicates_cli, similar
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, YesOpt, open_app, parse_overrides, with_consent
from vaultlens.cli.review_cmds import review
from vaultlens.cli.serve_cmds import mcp, serve
from vaultlens.cli.watch_cmds import watch
from vaultlens.cli.write_cmds import apply, history, undo
from vaultlens.config import paths
from vaultlens.config.settings import allowed, as_rows
from vaultlens.errors import TRANSLATED, VaultlensError, translate_error
from vaultlens.index.runs import RunStats
from vaultlens.services import app as services
from vaultlens.services import evaluation
from vaultlens.services.evaluation import GroupScore
from vaultlens.services.search import NoteHit

cli = typer.Typer(
    name="vaultlens",
    help="Find, relate and audit the notes in a Markdown / Obsidian vault, locally.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_cli = typer.Typer(help="Inspect settings.", no_args_is_help=True)
cli.add_typer(config_cli, name="config")
cli.command()(similar)
cli.command()(watch)
cli.add_typer(duplicates_cli, name="duplicates")
# ask your vault (issue 11)
cli.command()(ask)
cli.command()(chat)
cli.command()(providers)
cli.add_typer(audit_cli, name="audit")  # audit structure (no model), audit deep
cli.command()(moc)  # a Map of Content for a saved cluster, through safewrite
cli.command()(serve)  # companion: HTTP API + MCP (cli/serve_cmds.py)
cli.command()(mcp)


def _show_stats(stats: RunStats, json_: bool, vault: Path) -> None:
    if json_:
        render.print_json(stats.as_dict())
    else:
        _print_stats(stats, vault)


def _print_stats(stats: RunStats, vault: Path) -> None:
    render.out.print(
        f"Scanned {stats.files_scanned} notes: {stats.files_changed} changed, {stats.files_deleted} removed; "
        f"{stats.chunks_embedded} chunks embedded, {stats.chunks_reused} reused, "
        f"{stats.chunks_deleted} deleted in {stats.seconds:.1f}s."
    )
    if stats.tier_embedded:
        render.out.print(f"Quality tier: {stats.tier_embedded} chunk texts embedded.")
    if stats.files_skipped or stats.files_failed:
        render.out.print(
            f"[yellow]{stats.files_skipped} skipped, {stats.files_failed} failed[/yellow]"
            " — see `vaultlens status` for the reasons."
        )
    if stats.files_scanned == 0:
        render.err.print(
            f"[yellow]No Markdown notes found in {escape(str(vault))}.[/yellow] Is this your vault? "
            "Pass --vault PATH (or set VAULTLENS_VAULT)."
        )


@cli.command()
def index(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False, yes: YesOpt = False) -> None:
    """Index the vault, or bring the index up to date (only changed chunks are embedded)."""
    app = open_app(vault, set_)
    with render.RichProgress() as progress:
        stats = with_consent(yes, lambda consent: services.index(app, progress, consent))
    _show_stats(stats, json_, app.vault)


@cli.command()
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
    app = open_app(vault, set_)
    if not background:
        with render.RichProgress() as progress:
            stats = with_consent(yes, lambda consent: services.rebuild(app, progress, consent))
        _show_stats(stats, json_, app.vault)
        return
    if not json_:
        render.out.print(f"Building the new index next to {app.index_dir}; searches keep using it meanwhile.")
    with render.RichProgress() as progress:
        result = with_consent(
            yes, lambda consent: services.rebuild_in_background(app, progress, switch_wait, consent)
        )
    if json_:
        render.print_json(
            {
                **result.stats.as_dict(),
                "index_dir": str(result.index_dir),
                "resumed": result.resumed,
                "catch_up": result.catch_up.as_dict(),
            }
        )
        return
    _print_stats(result.stats, app.vault)
    render.out.print(f"Switched to the new index in {result.index_dir}; the old one was deleted.")


@cli.command()
def clear(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Empty the index. It stays empty until you run `vaultlens index` again."""
    app = open_app(vault, set_)
    cleared = services.clear(app)
    if json_:
        render.print_json({"vault": str(app.vault), "cleared": cleared})
    elif cleared:
        render.out.print(f"Index for {escape(str(app.vault))} cleared.")
    else:
        render.out.print(f"There is no index for {escape(str(app.vault))}: nothing to clear.")


@cli.command()
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
            hits = services.search(app, q, limit, sections)
            if json_:
                sys.stdout.write(
                    json.dumps({"query": q, "results": render.hits_json(hits)}, ensure_ascii=False) + "\n"
                )
            else:
                render.out.rule(q)
                render.print_hits(hits)
        if not json_:
            _warn_if_partial(app)
        return
    warm = _search_warm(app, query, limit, sections)
    found = warm if warm is not None else services.search(app, query, limit, sections)
    if json_:
        render.print_json(render.hits_json(found))
    else:
        render.print_hits(found)
        _warn_if_partial(app)


def _warn_if_partial(app: services.App) -> None:
    """Say so when the index does not hold every note yet: results alone cannot show what is missing."""
    run = services.unfinished_run(app)
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


def _search_warm(
    app: services.App, query: str, limit: int | None, sections: int | None
) -> list[NoteHit] | None:
    """Ask a `vaultlens serve` running for this vault with the same settings (its model is
    loaded); None when there is none, and the search runs here."""
    from vaultlens.server.runtime import search_via_server

    return search_via_server(app, query, limit, sections)


@cli.command()
def status(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Coverage of the index: indexed, skipped and failed files with reasons, totals, last run."""
    app = open_app(vault, set_)
    info = services.status(app)
    if json_:
        render.print_json(info.as_dict())
        return
    render.print_status(info)


@cli.command()
def doctor(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Check the index's integrity and consistency; exits non-zero on any problem."""
    app = open_app(vault, set_)
    report = services.doctor(app)
    if json_:
        render.print_json(report.as_dict())
    else:
        render.print_doctor(report)
    if not report.healthy:
        raise typer.Exit(1)


@config_cli.command("show")
def config_show(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Print the effective settings and where each value came from."""
    app = open_app(vault, set_)
    rows = as_rows(app.loaded)
    if json_:
        render.print_json({k: {"value": v, "from": o, "allowed": allowed(k)} for k, v, o in rows})
        return
    for key, value, origin in rows:
        rng = f", allowed {allowed(key)}" if allowed(key) else ""
        render.out.print(f"{key:<26} = {value!r:<28} [dim]# {escape(origin)}{escape(rng)}[/dim]")


eval_cli = typer.Typer(help="Measure retrieval quality on labelled data.", no_args_is_help=True)
cli.add_typer(eval_cli, name="eval")


def _print_scores(scores: list[GroupScore], json_: bool) -> None:
    if json_:
        render.print_json([s.__dict__ for s in scores])
        return
    for s in scores:
        cells = "  ".join(f"{k} {v:.3f}" for k, v in s.metrics.items())
        render.out.print(f"{s.group:<22} n={s.n:<4} {cells}", soft_wrap=True)  # one line a group


@eval_cli.command("beir")
def eval_beir(
    folder: Annotated[Path, typer.Argument(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv.")],
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
) -> None:
    """nDCG@10, Recall@100 and MRR@10 of search on a BEIR data set (written as one note per document)."""
    work = paths.home() / "eval"
    overrides = parse_overrides(set_)
    with render.RichProgress() as progress:
        scores = with_consent(
            yes, lambda consent: evaluation.eval_beir(folder, work, overrides, progress, consent=consent)
        )
    _print_scores(scores, json_)


@eval_cli.command("queries")
def eval_queries(
    file: Annotated[
        Path, typer.Argument(help="queries.jsonl with vault, query, relevant, lang, cross_lingual.")
    ],
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
) -> None:
    """hit@1, hit@5 and MRR on a labelled query file, per vault, language and cross-lingual flag."""
    overrides = parse_overrides(set_)
    with render.RichProgress() as progress:
        scores = with_consent(
            yes, lambda consent: evaluation.eval_queries(file, overrides, progress, consent=consent)
        )
    _print_scores(scores, json_)


for _write_command in (review, apply, undo, history):  # after the index and search commands in --help
    cli.command()(_write_command)


def main() -> None:
    try:
        cli()
    except VaultlensError as exc:
        _fail(exc)
    except TRANSLATED as exc:  # the last line: services translate their own store and OS errors
        _fail(translate_error(exc))


def _fail(error: VaultlensError) -> NoReturn:
    """Say what went wrong (as JSON on stdout when --json was asked for) and exit with its code."""
    if "--json" in sys.argv[1:]:
        render.print_json({"error": error.to_dict()})
    else:
        render.print_error(error)
    sys.exit(error.exit_code)


if __name__ == "__main__":
    main()
