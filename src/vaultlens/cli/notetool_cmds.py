"""`vaultlens write continue | transform | dataview | flashcards`: plan with a model, show the diff, ask, write.

Each command calls one verb of :mod:`vaultlens.services.verbs.drafting` (consent first for a remote
model), prints what the model produced, then shows the planned write's exact diff and writes it
only after a yes (``--yes`` skips the questions, never the diff). ``--plan-only`` stops after
planning: `vaultlens apply OP` writes it later. With ``--json`` the one object printed is the
verb's result, plus ``applied`` (the written entry, or null when nothing was written yet).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated

import typer

from vaultlens.cli import render
from vaultlens.cli.options import AllowOpenOpt, JsonOpt, NoteArg, PlanOnlyOpt, SetOpt, ToolYesOpt, VaultOpt
from vaultlens.cli.render import shown
from vaultlens.cli.writing import ToolOptions, run_tool
from vaultlens.errors import InvalidInput

if TYPE_CHECKING:
    from vaultlens.services.verbs.drafting import (
        ContinueResult,
        DataviewResult,
        FlashcardsResult,
        TransformResult,
    )

_LINES = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+))?\s*")


def parse_lines(value: str) -> tuple[int, int]:
    """``"A-B"`` (or ``"A"``) → (A, B); :class:`InvalidInput` otherwise."""
    m = _LINES.fullmatch(value)
    if m is None:
        raise InvalidInput(f"--lines expects A-B (e.g. 12-20), got {value!r}.")
    first = int(m[1])
    return first, int(m[2]) if m[2] else first


def _show_transform(result: TransformResult) -> None:
    render.out.print(f"[bold]{shown(result.instruction)}[/bold] (lines {result.first}-{result.last})")


def transform(
    note: NoteArg,
    lines: Annotated[str, typer.Option("--lines", help="The selection: lines A-B (1-based, inclusive).")],
    preset: Annotated[
        str | None,
        typer.Option(
            help="summarize, simplify, expand, fix-grammar, translate-en, translate-ru, to-list, to-table."
        ),
    ] = None,
    prompt: Annotated[str | None, typer.Option(help="Your own instruction instead of a preset.")] = None,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ToolYesOpt = False,
    plan_only: PlanOnlyOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Rewrite lines A-B of NOTE; an answer that would change anything outside them is refused."""
    from vaultlens.services.verbs import drafting

    first, last = parse_lines(lines)
    opts = ToolOptions(vault, set_, json_, yes, plan_only, allow_open)
    run_tool(
        opts,
        lambda app, consent: drafting.write_transform(app, note, first, last, preset, prompt, consent),
        _show_transform,
    )


AfterOpt = Annotated[
    int | None, typer.Option("--after", help="Insert after this line (1-based) instead of at the end.")
]


def _show_continue(result: ContinueResult) -> None:
    for src in result.sources:
        render.out.print(f"[dim]{src.id}[/dim] {shown(src.path)} L{src.start_line}-{src.end_line}")


def continue_(
    note: NoteArg,
    with_context: Annotated[
        bool,
        typer.Option("--with-context", help="Give the model relevant passages of other notes (from search)."),
    ] = False,
    after: AfterOpt = None,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ToolYesOpt = False,
    plan_only: PlanOnlyOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Continue NOTE at its end (or after --after LINE); the new text is shown as a diff before it is written."""
    from vaultlens.services.verbs import drafting

    opts = ToolOptions(vault, set_, json_, yes, plan_only, allow_open)
    run_tool(
        opts,
        lambda app, consent: drafting.write_continue(app, note, with_context, after, consent),
        _show_continue,
    )


def _show_dataview(result: DataviewResult) -> None:
    render.out.print(shown(result.explanation))
    render.write_plain(f"```dataview\n{result.query}\n```\n")


def dataview(
    question: Annotated[str, typer.Argument(help='What to list, e.g. "books rated 5, newest first".')],
    insert: Annotated[
        str | None, typer.Option("--insert", help="Put the query into this note as a ```dataview block.")
    ] = None,
    after: AfterOpt = None,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ToolYesOpt = False,
    plan_only: PlanOnlyOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """A Dataview query built from your vault's real fields, tags and folders, checked before it is shown."""
    from vaultlens.services.verbs import drafting

    if after is not None and insert is None:
        raise InvalidInput("--after places the query in a note: give --insert NOTE too.")
    opts = ToolOptions(vault, set_, json_, yes, plan_only, allow_open)
    run_tool(
        opts,
        lambda app, consent: drafting.write_dataview(app, question, insert, after, consent),
        _show_dataview,
    )


def _show_flashcards(result: FlashcardsResult) -> None:
    for card in result.cards:
        render.out.print(
            f"[bold]{shown(card.question)}[/bold] → {shown(card.answer)} "
            f"[dim](lines {card.first_line}-{card.last_line})[/dim]"
        )
    for skipped in result.skipped:
        render.out.print(f"[yellow]Not added:[/yellow] {shown(skipped.question)} — {shown(skipped.reason)}")
    if not result.cards:
        render.out.print("No new flashcards; the note is unchanged.")


def flashcards(
    note: NoteArg,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ToolYesOpt = False,
    plan_only: PlanOnlyOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Spaced Repetition flashcards from NOTE under its ## Flashcards heading; cards it has are not added again."""
    from vaultlens.services.verbs import drafting

    opts = ToolOptions(vault, set_, json_, yes, plan_only, allow_open)
    run_tool(opts, lambda app, consent: drafting.write_flashcards(app, note, consent), _show_flashcards)
