"""`vaultlens write continue | transform | dataview | flashcards`: plan with a model, show the diff, ask, write.

Each command calls one verb of :mod:`vaultlens.services.verbs.drafting` (consent first for a remote
model), prints what the model produced, then shows the planned write's exact diff and writes it
only after a yes (``--yes`` skips the questions, never the diff). ``--plan-only`` stops after
planning: `vaultlens apply OP` writes it later. With ``--json`` the one object printed is the
verb's result, plus ``applied`` (the written entry, or null when nothing was written yet).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.cli.render import shown
from vaultlens.cli.write_cmds import AllowOpenOpt, report_recovery
from vaultlens.errors import InvalidInput

if TYPE_CHECKING:
    from vaultlens.services.app import App
    from vaultlens.services.verbs.changing import Planned

NoteArg = Annotated[str, typer.Argument(help="The note (vault-relative path).")]
YesOpt = Annotated[
    bool,
    typer.Option(
        "--yes", "-y", help="Send and write without asking (what is sent and the diff are still shown)."
    ),
]
PlanOnlyOpt = Annotated[
    bool, typer.Option("--plan-only", help="Only plan the change; write it later with `vaultlens apply OP`.")
]
_LINES = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+))?\s*")


class PlanningResult(Protocol):
    """A note tool's result: its JSON form and the one planned write, if any."""

    @property
    def plan(self) -> Planned | None: ...

    def as_dict(self) -> dict[str, Any]: ...


def parse_lines(value: str) -> tuple[int, int]:
    """``"A-B"`` (or ``"A"``) → (A, B); :class:`InvalidInput` otherwise."""
    m = _LINES.fullmatch(value)
    if m is None:
        raise InvalidInput(f"--lines expects A-B (e.g. 12-20), got {value!r}.")
    first = int(m[1])
    return first, int(m[2]) if m[2] else first


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """The options every `vaultlens write` tool shares."""

    vault: Path | None
    set_: list[str] | None
    json_: bool
    yes: bool
    plan_only: bool
    allow_open: bool


def run_tool(
    opts: ToolOptions, call: Callable[[App, bool], PlanningResult], show: Callable[[PlanningResult], None]
) -> None:
    """Plan (asking consent for a remote model), show the result, then show its diff, ask and write."""
    from vaultlens.services.verbs import changing

    app = open_app(opts.vault, opts.set_)
    json_, yes = opts.json_, opts.yes
    report_recovery(app, json_)
    result = confirmed(lambda grant: call(app, grant is not None), yes, json_)
    if not json_:
        show(result)
    plan = result.plan
    applied = None
    if plan is not None and not opts.plan_only and (yes or not json_):
        op_id = plan.entry.op_id
        applied = confirmed(lambda grant: changing.apply(app, op_id, grant, opts.allow_open), yes, json_)
    if json_:
        render.print_json({**result.as_dict(), "applied": None if applied is None else applied.as_dict()})
    elif plan is not None and applied is None:
        render.write_plain(plan.diff)
        render.out.print(
            f"Planned as {plan.entry.op_id}; write it with `vaultlens apply {plan.entry.op_id}`."
        )
    elif applied is not None:
        render.out.print(
            f"[green]Written[/green] {shown(applied.entry.path)} ({applied.entry.op_id}); "
            f"`vaultlens undo {applied.entry.op_id}` puts it back."
        )


def _show_transform(result: PlanningResult) -> None:
    data = result.as_dict()
    render.out.print(
        f"[bold]{shown(data['instruction'])}[/bold] (lines {data['lines'][0]}-{data['lines'][1]})"
    )


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
    yes: YesOpt = False,
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


def _show_continue(result: PlanningResult) -> None:
    data = result.as_dict()
    for src in data["sources"]:
        render.out.print(
            f"[dim]{src['id']}[/dim] {shown(src['path'])} L{src['start_line']}-{src['end_line']}"
        )


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
    yes: YesOpt = False,
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


def _show_dataview(result: PlanningResult) -> None:
    data = result.as_dict()
    render.out.print(shown(data["explanation"]))
    render.write_plain(f"```dataview\n{data['query']}\n```\n")


def dataview(
    question: Annotated[str, typer.Argument(help='What to list, e.g. "books rated 5, newest first".')],
    insert: Annotated[
        str | None, typer.Option("--insert", help="Put the query into this note as a ```dataview block.")
    ] = None,
    after: AfterOpt = None,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
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


def _show_flashcards(result: PlanningResult) -> None:
    data = result.as_dict()
    for card in data["cards"]:
        render.out.print(
            f"[bold]{shown(card['question'])}[/bold] → {shown(card['answer'])} "
            f"[dim](lines {card['first_line']}-{card['last_line']})[/dim]"
        )
    for skipped in data["skipped"]:
        render.out.print(
            f"[yellow]Not added:[/yellow] {shown(skipped['question'])} — {shown(skipped['reason'])}"
        )
    if not data["cards"]:
        render.out.print("No new flashcards; the note is unchanged.")


def flashcards(
    note: NoteArg,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: YesOpt = False,
    plan_only: PlanOnlyOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Spaced Repetition flashcards from NOTE under its ## Flashcards heading; cards it has are not added again."""
    from vaultlens.services.verbs import drafting

    opts = ToolOptions(vault, set_, json_, yes, plan_only, allow_open)
    run_tool(opts, lambda app, consent: drafting.write_flashcards(app, note, consent), _show_flashcards)
