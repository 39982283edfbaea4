"""`vaultlens similar` and `vaultlens duplicates`: relatedness without a query."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from vaultlens.cli import render
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.cli.render import shown

if TYPE_CHECKING:
    from vaultlens.services.verbs.finding import LineRange, Section

duplicates_cli = typer.Typer(
    help="Potential duplicate notes: exact copies and near-duplicates by meaning.",
    invoke_without_command=True,
)


def _where(ref: Section) -> str:
    """Lines and heading path; in a PDF its page first, in a canvas its card's id."""
    inside = (
        f"page {ref.page} " if ref.page is not None else f"card {ref.card} " if ref.card is not None else ""
    )
    return f"{inside}L{ref.start_line}-{ref.end_line} {' › '.join(ref.heading_path) or '(top)'}"


def similar(
    note: Annotated[str, typer.Argument(help="Note path (relative to the vault) or name.")],
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=1, help="Notes to show.")] = None,
) -> None:
    """Notes related to NOTE, section by section, from the index (no embedding call)."""
    from vaultlens.services.verbs import finding

    result = finding.similar(open_app(vault, set_), note, limit)
    if json_:
        render.print_json(result.as_dict())
        return
    if result.notice:
        render.out.print(f"[yellow]{shown(result.notice)}[/yellow]")
    for n, item in enumerate(result.results, 1):
        render.out.print(
            f"[bold]{n}. {shown(item.title)}[/bold]  [cyan]{shown(item.path)}[/cyan]  [dim]{item.score:.3f}[/dim]"
        )
        for m in item.matches:
            render.out.print(
                f"   {shown(_where(m.source))}  ↔  {shown(_where(m.other))}  [dim]{m.score:.3f}[/dim]"
            )


ThresholdOpt = Annotated[
    float | None,
    typer.Option(
        min=0.0, max=1.0, help="Coverage a whole-note pair needs (default: discover.duplicate_threshold)."
    ),
]


@duplicates_cli.callback()
def duplicates(
    ctx: typer.Context,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    threshold: ThresholdOpt = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            "-n",
            min=1,
            help="Most pairs per list; a cut list says so (default: discover.duplicate_limit).",
        ),
    ] = None,
) -> None:
    """List potential duplicates. A candidate is an invitation to look, never an action."""
    if ctx.invoked_subcommand is not None:
        return
    from vaultlens.services.verbs import finding

    app = open_app(vault, set_)
    report = finding.duplicates(app, threshold, limit)
    if json_:
        render.print_json(report.as_dict())
        return
    out = render.out
    if report.exact:
        out.print("[bold]Exact copies[/bold]")
        for g in report.exact:
            label = "identical" if g.kind == "identical" else "same text, different front matter"
            out.print(f"  [magenta]{label}[/magenta]: " + ", ".join(shown(p) for p in g.paths))
    out.print(
        f"[bold]Duplicate pairs[/bold] (whole notes at {report.threshold:.2f};"
        f" translations {report.translation_threshold:.2f})"
    )
    if not report.pairs:
        out.print("  [dim]none[/dim]")
    for p in report.pairs:
        flag = "  [yellow](same file name)[/yellow]" if p.same_name else ""
        kind = p.kind
        if p.kind == "translation":
            kind = f"translation {p.languages[0]}↔{p.languages[1]}"
        out.print(f"  {p.score:.3f} {kind:<16} [cyan]{shown(p.a)}[/cyan] ↔ [cyan]{shown(p.b)}[/cyan]{flag}")
        out.print(f"        {shown(_where(p.evidence.source))} ↔ {shown(_where(p.evidence.other))}")
    _cut(report.total_pairs, len(report.pairs), "pairs")
    if report.shared_passages:
        out.print(
            f"[bold]Shared passages[/bold] (sections copied between notes that otherwise differ;"
            f" threshold {report.passage_threshold:.2f})"
        )
        for p in report.shared_passages:
            out.print(f"  {p.score:.3f} [cyan]{shown(p.a)}[/cyan] ↔ [cyan]{shown(p.b)}[/cyan]")
            for passage in p.passages:
                out.print(f"        {shown(_span(passage.a))} ↔ {shown(_span(passage.b))}")
        _cut(report.total_shared_passages, len(report.shared_passages), "shared passages")
    if report.same_name:
        out.print("[bold]Same file name in different folders[/bold] (not assumed duplicates)")
        for group in report.same_name:
            out.print("  " + ", ".join(shown(p) for p in group))
    if report.excluded_short:
        out.print(
            f"[dim]{report.excluded_short} notes with fewer than {app.settings.discover.min_chars} letters or"
            " digits were not compared by meaning.[/dim]"
        )


def _span(r: LineRange) -> str:
    return f"L{r.start_line}-{r.end_line} {' › '.join(r.heading_path) or '(top)'}"


def _cut(total: int, shown: int, what: str) -> None:
    if total > shown:
        render.out.print(
            f"[yellow]Showing {shown} of {total} {what} (the highest scores); pass --limit {total} to see all.[/yellow]"
        )


@duplicates_cli.command("dismiss")
def dismiss(
    a: Annotated[str, typer.Argument(help="One note of the pair.")],
    b: Annotated[str, typer.Argument(help="The other note.")],
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    threshold: ThresholdOpt = None,
) -> None:
    """Hide the pair A–B that `duplicates` lists (at --threshold) until either note changes."""
    from vaultlens.services.verbs import finding

    done = finding.dismiss(open_app(vault, set_), a, b, threshold)
    if json_:
        render.print_json(done.as_dict())
    else:
        render.out.print(
            f"Dismissed {shown(done.a)} ↔ {shown(done.b)}; it comes back if either note changes."
        )
