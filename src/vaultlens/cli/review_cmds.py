"""`vaultlens review A B` (and `--batch`): show the exact prompt, send it once accepted, show the plan.

Nothing here writes a note: a valid recommendation becomes a *planned* operation whose diff is
printed; `vaultlens apply OP` writes it. `--batch` plans nothing at all: it writes a report. The
workflow is :mod:`vaultlens.services.verbs.changing`'s; this module parses and renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app, typed_note_path
from vaultlens.cli.render import shown
from vaultlens.errors import InvalidModelOutput

if TYPE_CHECKING:
    from vaultlens.services.verbs.changing import BatchReport, Fragment, ReviewResult

SendOpt = Annotated[
    bool, typer.Option("--yes", "-y", help="Send the prompt without asking (it is still shown).")
]


def _show(result: ReviewResult) -> None:
    out = render.out
    validation = result.reviewed.validation
    review = validation.review
    if review is None or not validation.ok:
        out.print("[red]The model's answer was rejected:[/red]")
        for d in validation.diagnostics:
            out.print(f"  {shown(d.code)}: {shown(d.message)}")
        return
    paths = result.reviewed.prepared.catalog.paths
    out.print(f"[bold]Relation:[/bold] {shown(review.relation)}")
    for claim in validation.claims:
        out.print(f"\n[bold]{shown(claim.id)}[/bold] ({shown(claim.kind)}) {shown(claim.text)}")
        for q in (claim.evidence_a, claim.evidence_b):
            if q is not None:
                _show_quote(q, paths[q.side])
    rec = review.recommendation
    out.print(f"\n[bold]Recommendation:[/bold] {shown(rec.action)} — {shown(rec.reason)}")
    if result.plan_refused:
        out.print(f"[yellow]Not planned:[/yellow] {shown(result.plan_refused)}")
    if result.plan is not None:
        op_id = result.plan.entry.op_id
        render.write_plain(result.plan.diff)
        out.print(f"Planned as {op_id}; write it with `vaultlens apply {op_id}`.")


def _show_quote(q: Fragment, path: str) -> None:
    render.out.print(f"  [cyan]{shown(path)}[/cyan] L{q.start_line}-{q.end_line}:")
    render.out.print("    " + shown(q.text).replace("\n", "\n    "), highlight=False)


def review(
    a: Annotated[
        str | None, typer.Argument(help="Note A (vault-relative path).", callback=typed_note_path)
    ] = None,
    b: Annotated[str | None, typer.Argument(help="Note B.", callback=typed_note_path)] = None,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: SendOpt = False,
    link_from: Annotated[
        Literal["A", "B"], typer.Option(help="add_link: the note that gets the link.")
    ] = "A",
    after: Annotated[
        str | None,
        typer.Option(
            help="Insert after this block: SIDE:NUMBER from the prompt's fragment catalog, e.g. A:2 "
            "(default: the last block the review saw)."
        ),
    ] = None,
    fragment: Annotated[
        str | None, typer.Option(help="consider_merge: the block to copy, as SIDE:NUMBER (e.g. B:1).")
    ] = None,
    batch: Annotated[
        Path | None, typer.Option(help='Review every pair in this JSONL file ({"a", "b"}).')
    ] = None,
    report: Annotated[Path | None, typer.Option(help="--batch: write the Markdown report here.")] = None,
) -> None:
    """Ask the configured LLM how two notes relate; a valid recommendation becomes a planned, exact diff.

    At most 12,000 characters of each note are sent (a longer note is cut, and the prompt says so)."""
    from vaultlens.services.verbs import changing

    options = changing.PlanOptions(link_from, after, fragment)
    changing.check_review_arguments(a, b, batch, report, options)
    app = open_app(vault, set_)
    if batch is not None and report is not None:
        pairs_file, report_file = batch, report
        _show_batch(
            confirmed(lambda grant: changing.review_batch(app, pairs_file, report_file, grant), yes, json_),
            json_,
        )
        return
    assert a is not None and b is not None  # check_review_arguments refused anything else
    result = confirmed(lambda grant: changing.review(app, a, b, options, grant), yes, json_)
    if json_:
        render.print_json(result.as_dict())
    else:
        _show(result)
    if not result.ok:  # shown above; a script must not take a rejected answer for one
        raise typer.Exit(InvalidModelOutput.exit_code)


def _show_batch(done: BatchReport, json_: bool) -> None:
    failures = done.failures
    if json_:
        render.print_json(done.as_dict())
    else:
        render.out.print(
            f"Reviewed {len(done.pairs)} pairs: {done.valid} valid answers, {done.rejected} rejected by the "
            f"validator, {len(failures)} failed; report: {shown(str(done.report))}"
        )
    if failures:
        n, first = failures[0]
        error = first.error
        assert error is not None
        render.err.print(
            f"[yellow]{len(failures)} of {len(done.pairs)} pairs failed; the first, pair {n} "
            f"({shown(first.a)} ↔ {shown(first.b)}): {shown(error.message)}[/yellow]"
        )
        if error.hint:
            render.err.print(f"[yellow]hint:[/yellow] {shown(error.hint)}")
    if done.valid == 0:
        render.err.print("[bold red]error:[/bold red] no pair got a valid answer.")
        first_error = failures[0][1].error if failures else None
        raise typer.Exit(first_error.exit_code if first_error else InvalidModelOutput.exit_code)
