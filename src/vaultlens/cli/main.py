"""The ``vaultlens`` command: parse arguments, call a service, render the result.

No logic lives here that a service lacks; errors are :class:`VaultlensError` subclasses
printed as a message and a hint with a distinct exit code, never a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from vaultlens.cli import render
from vaultlens.cli.ask_cmds import ask, chat, providers
from vaultlens.cli.audit_cmds import audit_cli, moc
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.discover_cmds import duplicates_cli, similar
from vaultlens.cli.notetool_cmds import continue_, dataview, flashcards, transform
from vaultlens.cli.obsidian_cmds import obsidian_cli
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, YesOpt, open_app, parse_overrides
from vaultlens.cli.relink_cmds import merge, move
from vaultlens.cli.render import shown
from vaultlens.cli.review_cmds import review
from vaultlens.cli.serve_cmds import mcp, serve, ui
from vaultlens.cli.tag_cmds import print_tagged
from vaultlens.cli.watch_cmds import watch
from vaultlens.cli.write_cmds import apply, history, undo, write_app
from vaultlens.cli.write_many_cmds import batch, split
from vaultlens.errors import TRANSLATED, VaultlensError, translate_error

if TYPE_CHECKING:
    from vaultlens.index.runs import RunStats
    from vaultlens.services.app import App
    from vaultlens.services.verbs.finding import SearchHits
    from vaultlens.services.verbs.inspecting import GroupScore

cli = typer.Typer(
    name="vaultlens",
    help="Find, relate and audit the notes in a Markdown / Obsidian vault, locally.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_cli = typer.Typer(help="Inspect settings.", no_args_is_help=True)
eval_cli = typer.Typer(help="Measure retrieval quality on labelled data.", no_args_is_help=True)
bench_cli = typer.Typer(help="Measure what this machine does.", no_args_is_help=True)

# --help lists the commands by what they are for, in the order a newcomer meets them; each
# panel's commands are registered in the order they are listed (see the end of this module).
KEEP, FIND, ASK, CHANGE, AUDIT, SERVE, INSPECT = (
    "Keep the index",
    "Find",
    "Ask",
    "Change notes",
    "Audit",
    "Serve",
    "Inspect",
)


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
                sys.stdout.write(json.dumps({"query": q, "results": results}, ensure_ascii=False) + "\n")
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


def status(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Coverage of the index: indexed, skipped and failed files with reasons, totals, last run."""
    from vaultlens.services.verbs.status import status as index_status

    app = open_app(vault, set_)
    info = index_status(app)
    if json_:
        render.print_json(info.as_dict())
        return
    render.print_status(info)


def doctor(
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    deep: Annotated[
        bool, typer.Option("--deep", help="Also measure the ANN tier's recall@10 against exact search.")
    ] = False,
) -> None:
    """Check the index's integrity and consistency; exits non-zero on any problem."""
    from vaultlens.services.verbs.status import doctor as check

    app = open_app(vault, set_)
    report = check(app, deep)
    if json_:
        render.print_json(report.as_dict())
    else:
        render.print_doctor(report)
    if not report.healthy:
        raise typer.Exit(1)


def config_show(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Print the effective settings and where each value came from."""
    from vaultlens.config.settings import allowed, as_rows

    app = open_app(vault, set_)
    rows = as_rows(app.loaded)
    if json_:
        render.print_json({k: {"value": v, "from": o, "allowed": allowed(k)} for k, v, o in rows})
        return
    for key, value, origin in rows:
        rng = f", allowed {allowed(key)}" if allowed(key) else ""
        render.out.print(f"{key:<26} = {value!r:<28} [dim]# {shown(origin)}{shown(rng)}[/dim]")


def _print_scores(scores: list[GroupScore], json_: bool) -> None:
    if json_:
        render.print_json([s.as_dict() for s in scores])
        return
    for s in scores:
        cells = "  ".join(f"{k} {v:.3f}" for k, v in s.metrics.items())
        render.out.print(f"{s.group:<22} n={s.n:<4} {cells}", soft_wrap=True)  # one line a group


def eval_beir(
    folder: Annotated[Path, typer.Argument(help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/test.tsv.")],
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
) -> None:
    """nDCG@10, Recall@100 and MRR@10 of search on a BEIR data set (written as one note per document)."""
    from vaultlens.services.verbs import inspecting

    overrides = parse_overrides(set_)
    with render.RichProgress() as progress:
        scores = confirmed(
            lambda grant: inspecting.eval_beir(folder, overrides, progress, grant is not None), yes, json_
        )
    _print_scores(scores, json_)


def eval_queries(
    file: Annotated[
        Path, typer.Argument(help="queries.jsonl with vault, query, relevant, lang, cross_lingual.")
    ],
    split: Annotated[
        str | None,
        typer.Option("--split", help="Only the lines whose split field is this: tune or held."),
    ] = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
) -> None:
    """hit@1, hit@3, hit@5 and MRR on a labelled query file, per vault, language and cross-lingual flag."""
    from vaultlens.services.verbs import inspecting

    overrides = parse_overrides(set_)
    with render.RichProgress() as progress:
        scores = confirmed(
            lambda grant: inspecting.eval_queries(file, overrides, progress, grant is not None, split),
            yes,
            json_,
        )
    _print_scores(scores, json_)


def bench_embed(
    vault: VaultOpt = None,
    tier: Annotated[
        bool,
        typer.Option(
            "--tier", help="The quality tier's model instead (embedding.tier; e5 when off or auto)."
        ),
    ] = False,
    set_: SetOpt = None,
    json_: JsonOpt = False,
) -> None:
    """Embedding speed on a built-in sample: docs/s, chunks/s and the ratio to the model alone."""
    from vaultlens.services.verbs import inspecting

    result = inspecting.bench_embed(open_app(vault, set_), tier)
    if json_:
        render.print_json(result.as_dict())
        return
    ratio = (
        f"{result.ratio_to_model:.2f}x the model alone" if result.ratio_to_model else "model alone not timed"
    )
    render.out.print(
        f"{shown(result.model)}: {result.docs_per_s:.1f} docs/s, {result.chunks_per_s:.1f} chunks/s "
        f"({result.texts} texts, {result.threads} threads, batches of {result.batch_size}; {ratio}; "
        f"load average {result.load_average:.1f})"
    )


_PANELS: list[tuple[str, list[Callable[..., None] | tuple[str, typer.Typer]]]] = [
    (KEEP, [index, watch, rebuild, clear]),
    (FIND, [search, similar, ("duplicates", duplicates_cli)]),
    (ASK, [ask, chat]),
    (CHANGE, [("write", write_app), review, move, merge, apply, undo, history]),
    (AUDIT, [("audit", audit_cli), moc]),  # audit structure (no model), audit deep; a MOC from its clusters
    (SERVE, [serve, ui, mcp, ("obsidian", obsidian_cli)]),  # companion: HTTP API + MCP (cli/serve_cmds.py)
    (INSPECT, [status, doctor, providers, ("config", config_cli), ("eval", eval_cli), ("bench", bench_cli)]),
]
for _panel, _commands in _PANELS:
    for _command in _commands:
        if isinstance(_command, tuple):
            cli.add_typer(_command[1], name=_command[0], rich_help_panel=_panel)
        else:
            cli.command(rich_help_panel=_panel)(_command)
config_cli.command("show")(config_show)
eval_cli.command("beir")(eval_beir)
eval_cli.command("queries")(eval_queries)
bench_cli.command("embed")(bench_embed)
write_app.command("continue")(continue_)
write_app.command("transform")(transform)
write_app.command("dataview")(dataview)
write_app.command("flashcards")(flashcards)
write_app.command("split")(split)  # cli/write_many_cmds.py
write_app.command("batch")(batch)


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
