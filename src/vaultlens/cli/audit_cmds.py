"""`vaultlens audit structure`: the vault seen from above, written outside the vault unless you confirm."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.options import AllowOpenOpt, ConfirmOpt, JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.cli.render import shown
from vaultlens.cli.writing import apply_confirmed, report_recovery
from vaultlens.errors import Cancelled, InvalidModelOutput

if TYPE_CHECKING:
    from vaultlens.errors import Proposal
    from vaultlens.services.verbs.auditing import DeepReport, TopicsResult

audit_cli = typer.Typer(
    help="Audit the vault: its structure, its topics, and (with a model) every note.", no_args_is_help=True
)

OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Folder for the dashboard, Canvas map and JSON (default: the vault's audit folder in the "
        "vaultlens data folder). A relative path is taken from the vault's folder, not the current one. "
        "A folder inside the vault gets the dashboard and map as new notes, each shown as a diff and "
        "written only after you confirm it.",
    ),
]


@audit_cli.command("structure")
def structure(
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    out: OutOpt = None,
    yes: ConfirmOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Folders, file types, tags, orphans, broken and ambiguous links, missing headings and blocks, link-graph
    components and hubs, same-named notes, largest and emptiest notes; a Markdown dashboard and a Canvas map."""
    from vaultlens.services.verbs import auditing

    app = open_app(vault, set_)
    result = auditing.audit_structure(app, out, into_vault=not json_)
    if json_:
        render.print_json(result.as_dict())
        return
    report = result.audit.report
    _print_summary(report.summary())
    _print_unread(report.unread)
    for path in result.files.values():
        render.out.print(f"Wrote [cyan]{shown(str(path))}[/cyan]")
    if result.into is not None:
        report_recovery(app, json_)
        where = app.vault / result.into.folder
        render.out.print(f"The dashboard and map go into the vault folder [cyan]{shown(str(where))}[/cyan].")
        for rel in result.into.up_to_date:
            render.out.print(f"[green]Already up to date[/green] {shown(rel)} (nothing to write).")
        for planned in result.into.planned:
            apply_confirmed(app, planned.entry.op_id, yes, json_, allow_open)


@audit_cli.command("deep")
def deep(
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    no_llm: Annotated[
        bool,
        typer.Option("--no-llm", help="Clusters from the index's vectors, named from headings and terms."),
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help="Analyse every note again, ignoring cached results.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Send without asking (what goes where is still shown).")
    ] = False,
    threshold: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help="Mean cosine a cluster's notes keep between them (default 0.5)."),
    ] = None,
    min_size: Annotated[
        int | None, typer.Option(min=2, help="Smallest group reported as a cluster (default 3).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Folder for the reports and clusters.json (outside the vault)."),
    ] = None,
) -> None:
    """Topic clusters of the indexed notes and, with a model, a per-note analysis (cached by content: a rerun
    sends only new and changed notes) and a vault-wide report. With --no-llm no note text leaves the machine."""
    from vaultlens.services.verbs import auditing
    from vaultlens.services.verbs.auditing import CLUSTER_MIN_SIZE, CLUSTER_THRESHOLD, DeepPlan

    app = open_app(vault, set_)
    threshold = CLUSTER_THRESHOLD if threshold is None else threshold
    min_size = CLUSTER_MIN_SIZE if min_size is None else min_size
    if no_llm:
        _show_topics(auditing.audit_clusters_only(app, threshold, min_size, out), threshold, min_size, json_)
        return
    with render.RichProgress("notes") as progress:

        def run(grant: Proposal | None) -> TopicsResult:
            if grant is not None and isinstance(grant.payload, DeepPlan):
                progress.phase("Analysing notes", grant.payload.to_send)
            return auditing.audit_deep(app, full, threshold, min_size, out, grant, progress.advance)

        try:
            result = confirmed(run, yes, json_)
        except KeyboardInterrupt:
            raise Cancelled(
                "Stopped; the notes analysed so far are cached.",
                hint="Run `vaultlens audit deep` again to go on where it stopped.",
            ) from None
    report = result.deep
    assert report is not None
    if json_:
        render.print_json(result.as_dict())
    else:
        _show_deep(report, result.files)
    if report.failed and not report.notes:  # a script must not take a report of nothing for a result
        path, why = next(iter(report.failed.items()))
        render.err.print(f"[red]No note could be analysed[/red] (first: {shown(path)}: {shown(why)})")
        raise typer.Exit(InvalidModelOutput.exit_code)


def _show_deep(report: DeepReport, written: dict[str, Path]) -> None:
    render.out.print(
        f"[bold]{len(report.notes)} notes analysed[/bold] ({report.from_cache} from cache, {report.sent} sent), "
        f"{len(report.failed)} failed, {len(report.clusters.clusters)} clusters."
    )
    if report.usage:
        render.out.print(
            "[dim]Reported by the API: " + ", ".join(f"{k} {v:g}" for k, v in report.usage.items()) + "[/dim]"
        )
    if report.synthesis_error:
        render.out.print(f"[yellow]The summary request failed:[/yellow] {shown(report.synthesis_error)}")
    for path in written.values():
        render.out.print(f"Wrote [cyan]{shown(str(path))}[/cyan]")


def _show_topics(result: TopicsResult, threshold: float, min_size: int, json_: bool) -> None:
    if json_:
        render.print_json(result.as_dict())
        return
    report = result.clusters
    render.out.print(
        f"[bold]{len(report.clusters)} clusters[/bold] (mean cosine >= {threshold}, at least {min_size} notes); "
        f"{len(report.unclustered)} notes in none, {len(report.without_vector)} without a usable vector."
    )
    for c in report.clusters:
        render.out.print(
            f"  {c.id:>3}. {shown(c.name)}  [dim]{c.size} notes · {shown(', '.join(c.terms[:5]))}[/dim]"
        )
    for path in result.files.values():
        render.out.print(f"Wrote [cyan]{shown(str(path))}[/cyan]")


def _print_summary(summary: dict[str, int]) -> None:
    s = summary
    render.out.print(
        f"[bold]{s['notes']} notes[/bold] in {s['files']} files, {s['links']} links, {s['tags']} tags, "
        f"{s['components']} linked groups."
    )
    for key, label in (
        ("broken_links", "broken links"),
        ("ambiguous_links", "ambiguous links (same-named targets)"),
        ("missing_anchors", "links to missing headings or blocks"),
        ("orphans", "orphans (no link in or out)"),
        ("orphans_no_incoming", "notes nothing links to"),
        ("no_outgoing", "notes that link to no other note"),
        ("same_name_groups", "names shared by notes in different folders"),
        ("unread", "notes not read"),
    ):
        colour = "yellow" if s[key] else "green"
        render.out.print(f"  [{colour}]{s[key]:>6}[/{colour}] {label}")


UNREAD_SHOWN = 10  # unread notes listed under the summary (the dashboard and --json list every one)


def _print_unread(unread: dict[str, str]) -> None:
    for path, why in list(unread.items())[:UNREAD_SHOWN]:
        render.out.print(f"         [yellow]not read:[/yellow] {shown(path)} — {shown(why)}")
    if len(unread) > UNREAD_SHOWN:
        render.out.print(f"         … and {len(unread) - UNREAD_SHOWN} more (listed in the dashboard)")


def moc(
    cluster: Annotated[
        str, typer.Argument(help="A saved cluster's id or name (from the last `audit deep`).")
    ],
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    out_path: Annotated[
        str | None,
        typer.Option("--out-path", help="Vault-relative path of the new note (default: '<name> MOC.md')."),
    ] = None,
    yes: ConfirmOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Write a Map of Content note linking a cluster's notes, after you see the exact new note."""
    from vaultlens.services.verbs import auditing

    app = open_app(vault, set_)
    report_recovery(app, json_)
    plan = auditing.moc(app, cluster, out_path)
    if not json_:
        for path in plan.missing:
            render.err.print(f"[yellow]Left out (no longer in the vault):[/yellow] {shown(path)}")
        for path in plan.unlinkable:
            render.err.print(f"[yellow]Listed as text (its name cannot be a link):[/yellow] {shown(path)}")
    apply_confirmed(app, plan.planned.entry.op_id, yes, json_, allow_open)
