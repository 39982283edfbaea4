"""`vaultlens audit structure`: the vault seen from above, written outside the vault unless you confirm."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.cli.write_cmds import AllowOpenOpt, ConfirmOpt, _confirm_and_apply, _report_recovery
from vaultlens.errors import ConfigError
from vaultlens.services.audit import CLUSTER_MIN_SIZE, CLUSTER_THRESHOLD, audit_clusters, audit_structure
from vaultlens.services.audit.report_files import (
    ReportFiles,
    inside_vault,
    plan_into_vault,
    write_clusters,
    write_outside,
)

audit_cli = typer.Typer(
    help="Audit the vault: its structure, and its topics (no model needed).", no_args_is_help=True
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
    into = inside_vault(app.vault, out) if out is not None else None
    if into is not None and json_:
        raise ConfigError(
            "--json cannot be combined with an --out folder inside the vault (each new note is confirmed as a diff).",
            hint="Run without --json to review and write them, or use an --out folder outside the vault.",
        )
    audit = audit_structure(app)
    files = ReportFiles.render(audit.report, audit.resolver)
    written = write_outside(app, files, None if into is not None else out)
    if json_:
        render.print_json({**audit.report.as_dict(), "files": {k: str(v) for k, v in written.items()}})
        return
    _print_summary(audit.report.summary())
    for path in written.values():
        render.out.print(f"Wrote [cyan]{escape(str(path))}[/cyan]")
    if into is not None:
        _report_recovery(app, json_)
        for planned in plan_into_vault(app, files, into):
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
    threshold: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Mean cosine a cluster's notes keep between them.")
    ] = CLUSTER_THRESHOLD,
    min_size: Annotated[
        int, typer.Option(min=2, help="Smallest group reported as a cluster.")
    ] = CLUSTER_MIN_SIZE,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Folder for vault-clusters.md and clusters.json (outside the vault)."),
    ] = None,
) -> None:
    """Topic clusters of the indexed notes. With --no-llm no note text leaves the machine and no model runs."""
    if not no_llm:
        raise ConfigError(
            "The model-based deep audit is not in this version yet.",
            hint="Run `vaultlens audit deep --no-llm` for topic clusters from the index, with no model.",
        )
    app = open_app(vault, set_)
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
