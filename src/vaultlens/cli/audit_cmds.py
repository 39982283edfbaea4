"""`vaultlens audit structure`: the vault seen from above, written outside the vault unless you confirm."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.cli.write_cmds import AllowOpenOpt, ConfirmOpt, _confirm_and_apply, _report_recovery
from vaultlens.errors import Cancelled, ConfigError, ConsentRequired, InvalidModelOutput
from vaultlens.services.app import App
from vaultlens.services.audit import CLUSTER_MIN_SIZE, CLUSTER_THRESHOLD, audit_clusters, audit_structure
from vaultlens.services.audit.deep import DeepPlan, DeepReport, audit_llm, plan_deep, run_deep
from vaultlens.services.audit.deep_report import deep_markdown
from vaultlens.services.audit.moc import plan_moc
from vaultlens.services.audit.report_files import (
    CLUSTER_FILES,
    DEEP_FILES,
    ReportFiles,
    check_out,
    check_outside,
    plan_into_vault,
    write_clusters,
    write_deep,
    write_outside,
)

audit_cli = typer.Typer(
    help="Audit the vault: its structure, its topics, and (with a model) every note.", no_args_is_help=True
)

OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Folder for the dashboard, Canvas map and JSON (default: the vault's audit folder in the "
        "vaultlens data folder). A folder inside the vault gets the dashboard and map as new notes, "
        "each shown as a diff and written only after you confirm it.",
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
    app = open_app(vault, set_)
    into = check_out(app, out) if out is not None else None  # before any work: a refused --out writes nothing
    if into is not None and json_:
        raise ConfigError(
            "--json cannot be combined with an --out folder inside the vault (each new note is confirmed as a diff).",
            hint="Run without --json to review and write them, or use an --out folder outside the vault.",
        )
    audit = audit_structure(app)
    files = ReportFiles.render(audit.report, audit.resolver)
    into_plan = None
    if into is not None:
        _report_recovery(app, json_)
        into_plan = plan_into_vault(app, files, into)  # planned only: each note is written after its diff
    written = write_outside(app, files, None if into is not None else out)
    if json_:
        render.print_json({**audit.report.as_dict(), "files": {k: str(v) for k, v in written.items()}})
        return
    _print_summary(audit.report.summary())
    _print_unread(audit.report.unread)
    for path in written.values():
        render.out.print(f"Wrote [cyan]{escape(str(path))}[/cyan]")
    if into_plan is not None:
        for rel in into_plan.up_to_date:
            render.out.print(f"[green]Already up to date[/green] {escape(rel)} (nothing to write).")
        for planned in into_plan.planned:
            _confirm_and_apply(app, planned, yes, json_, allow_open)


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
        float, typer.Option(min=0.0, max=1.0, help="Mean cosine a cluster's notes keep between them.")
    ] = CLUSTER_THRESHOLD,
    min_size: Annotated[
        int, typer.Option(min=2, help="Smallest group reported as a cluster.")
    ] = CLUSTER_MIN_SIZE,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Folder for the reports and clusters.json (outside the vault)."),
    ] = None,
) -> None:
    """Topic clusters of the indexed notes and, with a model, a per-note analysis (cached by content: a rerun
    sends only new and changed notes) and a vault-wide report. With --no-llm no note text leaves the machine."""
    app = open_app(vault, set_)
    check_outside(app, out, CLUSTER_FILES if no_llm else DEEP_FILES)  # before any work or any request
    if no_llm:
        _clusters_only(app, threshold, min_size, out, json_)
        return
    provider = audit_llm(app)
    try:
        plan = plan_deep(app, provider, full, threshold, min_size)
        _agree(plan, yes, json_)
        with render.RichProgress("notes") as progress:
            progress.phase("Analysing notes", plan.to_send)
            try:
                report = run_deep(app, plan, consent=True, on_batch=progress.advance)
            except KeyboardInterrupt:
                raise Cancelled(
                    "Stopped; the notes analysed so far are cached.",
                    hint="Run `vaultlens audit deep` again to go on where it stopped.",
                ) from None
    finally:
        provider.close()
    write_clusters(app, report.clusters, out)  # the saved clusters `vaultlens moc` builds from
    data = report.as_dict()
    written = write_deep(app, deep_markdown(report), data, out)
    if json_:
        run = {"sent": report.sent, "from_cache": report.from_cache, "usage": report.usage}
        render.print_json({**data, "run": run, "files": {k: str(v) for k, v in written.items()}})
    else:
        _show_deep(report, written)
    if report.failed and not report.notes:  # a script must not take a report of nothing for a result
        path, why = next(iter(report.failed.items()))
        render.err.print(f"[red]No note could be analysed[/red] (first: {escape(path)}: {escape(why)})")
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
        render.out.print(f"[yellow]The summary request failed:[/yellow] {escape(report.synthesis_error)}")
    for path in written.values():
        render.out.print(f"Wrote [cyan]{escape(str(path))}[/cyan]")


def _agree(plan: DeepPlan, yes: bool, json_: bool) -> None:
    """Show how much goes where; go on only with --yes or the user's answer (the services' consent follows)."""
    p = plan.provider
    where = plan.destination or f"{p.name} model {p.model} at {p.endpoint} (this machine)"
    render.err.print(
        f"Deep audit: {len(plan.eligible)} notes, {len(plan.cached)} cached; [bold]{plan.to_send} notes[/bold] "
        f"in {len(plan.batches)} requests (about {plan.est_tokens:,} tokens, code points / 4) and one summary "
        f"request go to {escape(where)}. Cost: those tokens at the provider's price (the API's own count "
        "is shown after the run)."
    )
    if yes:
        return
    if json_ or not sys.stdin.isatty():
        raise ConsentRequired(
            where,
            plan.what,
            message="Nothing was sent: agree first.",
            hint="Run it in a terminal, or pass --yes.",
        )
    if not typer.confirm(f"Send them to {where}?", default=False):
        raise ConsentRequired(where, plan.what, message="Nothing was sent.")


def _clusters_only(app: App, threshold: float, min_size: int, out: Path | None, json_: bool) -> None:
    report = audit_clusters(app, threshold, min_size)
    written = write_clusters(app, report, out)
    if json_:
        render.print_json({**report.as_dict(), "files": {k: str(v) for k, v in written.items()}})
        return
    render.out.print(
        f"[bold]{len(report.clusters)} clusters[/bold] (mean cosine >= {threshold}, at least {min_size} notes); "
        f"{len(report.unclustered)} notes in none, {len(report.without_vector)} without a usable vector."
    )
    for c in report.clusters:
        render.out.print(
            f"  {c.id:>3}. {escape(c.name)}  [dim]{c.size} notes · {escape(', '.join(c.terms[:5]))}[/dim]"
        )
    for path in written.values():
        render.out.print(f"Wrote [cyan]{escape(str(path))}[/cyan]")


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
        render.out.print(f"         [yellow]not read:[/yellow] {escape(path)} — {escape(why)}")
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
    app = open_app(vault, set_)
    _report_recovery(app, json_)
    plan = plan_moc(app, cluster, out_path)
    if not json_:
        for path in plan.missing:
            render.err.print(f"[yellow]Left out (no longer in the vault):[/yellow] {escape(path)}")
        for path in plan.unlinkable:
            render.err.print(f"[yellow]Listed as text (its name cannot be a link):[/yellow] {escape(path)}")
    _confirm_and_apply(app, plan.planned, yes, json_, allow_open)
