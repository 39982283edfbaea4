"""`vaultlens write split | batch`: changes of many notes at once, each shown as its exact diff first.

``split`` plans one operation group (the new notes and the original's change: one diff, one yes,
applied and undone together); ``batch`` plans one change per note and reviews them one by one
(or all after showing them). Both call verbs of :mod:`vaultlens.services.verbs.restructuring`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.options import (
    AllowOpenOpt,
    JsonOpt,
    NoteArg,
    PlanOnlyOpt,
    SetOpt,
    ToolYesOpt,
    VaultOpt,
    open_app,
)
from vaultlens.cli.writing import ToolOptions, report_recovery, run_tool

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from vaultlens.services.app import App
    from vaultlens.services.verbs.changing import Applied, Planned
    from vaultlens.services.verbs.restructuring import BatchNote, BatchResult, SplitResult

__all__ = ["batch", "split"]


def _spans(runs: list[list[int]]) -> str:
    return ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def _show_split(result: SplitResult) -> None:
    notes = result.notes
    render.out.print(f"[bold]Split {render.shown(result.path)}[/bold] into {len(notes)} notes:")
    for n in notes:
        render.out.print(f"  {render.shown(n.path)}  [dim]lines {_spans(n.lines)}[/dim]")
    kept = _spans(result.kept) or "none"
    how = "becomes an index of links" if result.mode == "index" else "stays as it is"
    render.out.print(f"  the original {how}; lines staying in it: {kept}")


def split(
    note: NoteArg,
    keep_original: Annotated[
        bool, typer.Option("--keep-original", help="Leave the original as it is (the default).")
    ] = False,
    index: Annotated[
        bool, typer.Option("--index", help="Turn the original into an index of links to the new notes.")
    ] = False,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ToolYesOpt = False,
    plan_only: PlanOnlyOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Split NOTE into atomic notes (one group: applied and undone together); no line is lost or doubled."""
    from vaultlens.errors import InvalidInput
    from vaultlens.services.verbs import restructuring

    if keep_original and index:
        raise InvalidInput("Choose one of --keep-original and --index.")
    mode: restructuring.SplitMode = "index" if index else "keep-original"
    run_tool(
        ToolOptions(vault, set_, json_, yes, plan_only, allow_open),
        lambda app, consent: restructuring.write_split(app, note, mode, consent),
        _show_split,
    )


class _Bar:
    """Rich progress on stderr, started at the first finished note (after any consent question)."""

    def __init__(self, json_: bool) -> None:
        self.json_ = json_
        self.progress: Progress | None = None
        self.task: TaskID | None = None

    def update(self, note: BatchNote, done: int, total: int) -> None:
        if self.json_:
            return
        if self.progress is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self.progress = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=render.err
            )
            self.progress.start()
            self.task = self.progress.add_task("notes", total=total)
        assert self.task is not None
        self.progress.update(self.task, completed=done, description=render.shown(note.path[-40:]))

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def _ask(i: int, n: int) -> str:
    """y / n / a / q, asked again until it is one of them. Ctrl-C (or the end of input) at the question
    raises ``KeyboardInterrupt``: the review stops as it does after a Ctrl-C during a write."""
    while True:
        try:
            answer = str(typer.prompt(f"[{i}/{n}] Write this change? y(es) / n(o) / a(ll the rest) / q(uit)",
                                      default="n")).strip().lower()  # fmt: skip
        except typer.Abort:
            raise KeyboardInterrupt from None
        if answer[:1] in ("y", "n", "a", "q") and answer in ("y", "n", "a", "q", "yes", "no", "all", "quit"):
            return answer[:1]


class _Writes:
    """The batch's writes as they happen: what was written (for the listing after a stop) and what was
    refused; Ctrl-C during a write is left to safewrite, which settles that one note."""

    def __init__(self, app: App, allow_open: bool, json_: bool) -> None:
        self.app, self.allow_open, self.json_ = app, allow_open, json_
        self.applied: list[Applied] = []
        self.written: list[tuple[str, str]] = []  # (path, op id), in the order written
        self.refused: dict[str, str] = {}

    def write(self, planned: Planned) -> None:
        from vaultlens.errors import Cancelled, VaultlensError, WriteInterrupted
        from vaultlens.services.verbs import changing

        entry = planned.entry
        try:
            self.applied.append(changing.apply(self.app, entry.op_id, planned.proposal, self.allow_open))
        except WriteInterrupted as exc:
            if exc.state == "applied":  # the Ctrl-C came after the rename: the note holds the new text
                self.written.append((entry.path, entry.op_id))
            raise
        except Cancelled:  # a stop, not a refusal
            raise
        except VaultlensError as exc:
            self.refused[entry.path] = exc.message
            if not self.json_:
                render.err.print(
                    f"[red]Not written[/red] {render.shown(entry.path)}: {render.shown(exc.message)}"
                )
            return
        self.written.append((entry.path, entry.op_id))

    def stopped(self, total: int, batch_id: str) -> Exception:
        """Ctrl-C (or the end of input at a question): list what was written (stdout; stderr with
        --json) and say how to go on (exit 130)."""
        from vaultlens.errors import Cancelled

        where = render.err if self.json_ else render.out
        if self.written:
            where.print("Written before the stop (each undoable with `vaultlens undo OP`):")
            for path, op_id in self.written:
                where.print(f"  {render.shown(path)}  [dim]{op_id}[/dim]")
        return Cancelled(
            f"Stopped: {len(self.written)} of {total} changes were written"
            + (" (listed above)." if self.written else "."),
            hint=f"The others stay planned: `vaultlens write batch --resume {batch_id}` shows them again.",
        )


def _write_all(writes: _Writes, waiting: list[Planned], batch_id: str) -> None:
    """Write every change; the first Ctrl-C lets the note being written finish, then stops (exit 130)."""
    from vaultlens.cli.interrupts import stop_between_steps
    from vaultlens.errors import Cancelled

    with stop_between_steps() as asked:
        for planned in waiting:
            if asked.is_set():
                raise writes.stopped(len(waiting), batch_id)
            try:
                writes.write(planned)
            except (Cancelled, KeyboardInterrupt):
                raise writes.stopped(len(waiting), batch_id) from None


def _review(app: App, result: BatchResult, yes: bool, json_: bool, allow_open: bool) -> None:
    """Each waiting change: its exact diff, then yes/no/all/quit (``--yes``: every diff, then all)."""
    from vaultlens.cli.confirm import show
    from vaultlens.errors import Cancelled, WriteUnconfirmed

    waiting, batch_id = result.waiting, result.state.batch_id
    writes = _Writes(app, allow_open, json_)
    if json_:
        if yes:
            _write_all(writes, waiting, batch_id)
        done = {**result.as_dict(), "applied": [a.as_dict() for a in writes.applied]}
        render.print_json({**done, "refused": [{"path": k, "why": v} for k, v in writes.refused.items()]})
        return
    counts = ", ".join(f"{v} {k}" for k, v in result.counts().items() if v)
    render.out.print(f"Batch {batch_id}: {counts}.")
    for path, why in result.stale.items():
        render.err.print(f"[yellow]{render.shown(path)}[/yellow]: {render.shown(why)}")
    if not waiting:
        return
    if yes:
        for planned in waiting:
            show(planned.proposal, False)
        _write_all(writes, waiting, batch_id)
    else:
        if not sys.stdin.isatty():
            for planned in waiting:
                show(planned.proposal, False)
            raise WriteUnconfirmed(
                waiting[0].proposal,
                message=f"{len(waiting)} changes are planned; nothing was written.",
                hint=f"Review them in a terminal, or accept them all after seeing them: "
                f"`vaultlens write batch --resume {batch_id} --yes`.",
            )
        take_all = False
        try:
            for i, planned in enumerate(waiting, 1):
                show(planned.proposal, False)
                answer = "y" if take_all else _ask(i, len(waiting))
                if answer == "q":
                    break
                take_all = take_all or answer == "a"  # "all the rest": every change after this one too
                if answer in ("y", "a"):
                    writes.write(planned)
        except (Cancelled, KeyboardInterrupt):
            raise writes.stopped(len(waiting), batch_id) from None
    render.out.print(
        f"[green]Written[/green] {len(writes.written)} of {len(waiting)} changes; `vaultlens undo OP` undoes one."
    )
    if len(writes.written) + len(writes.refused) < len(waiting):
        render.out.print(
            f"The others stay planned: `vaultlens write batch --resume {batch_id}` shows them again."
        )


def batch(
    folder: Annotated[str | None, typer.Option(help="The notes under this folder.")] = None,
    tag: Annotated[str | None, typer.Option(help="The notes with this tag (#a also picks #a/b).")] = None,
    since: Annotated[
        str | None, typer.Option(help="The notes changed on or after this date (YYYY-MM-DD).")
    ] = None,
    glob: Annotated[
        str | None, typer.Option(help='The notes whose path matches this pattern ("Daily/*.md").')
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            help="summarize, simplify, expand, fix-grammar, translate-en, translate-ru, to-list, to-table."
        ),
    ] = None,
    prompt: Annotated[str | None, typer.Option(help="Your own instruction instead of a preset.")] = None,
    concurrency: Annotated[int, typer.Option(help="At most this many notes at a time.")] = 4,
    resume: Annotated[
        str | None,
        typer.Option("--resume", help="Continue batch ID (notes already done are not sent again)."),
    ] = None,
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: ToolYesOpt = False,
    allow_open: AllowOpenOpt = False,
) -> None:
    """Run a preset (or your prompt) over many notes: an estimate first, progress, Ctrl-C keeps finished
    notes (--resume ID continues), then every planned change is reviewed as its exact diff."""
    from vaultlens.cli.interrupts import interrupt_once
    from vaultlens.errors import InvalidInput
    from vaultlens.services.verbs import restructuring
    from vaultlens.services.verbs.restructuring import NoteSelector

    app = open_app(vault, set_)
    report_recovery(app, json_)
    if resume is None:
        started = restructuring.write_batch(
            app, NoteSelector(folder, tag, since, glob), preset, prompt, concurrency
        )
        batch_id = started.state.batch_id
        render.err.print(
            f"Batch {batch_id} ({render.shown(started.state.title)}): {started.state.estimate.sentence()}"
        )
        render.err.print(
            f"Ctrl-C keeps the notes already done; `vaultlens write batch --resume {batch_id}` continues."
        )
    elif any(v is not None for v in (folder, tag, since, glob, preset, prompt)):
        raise InvalidInput(
            "--resume continues a batch with the notes and the instruction it was started with.",
            hint=f"Leave out the other options: `vaultlens write batch --resume {resume}`.",
        )
    else:
        batch_id = resume
    bar = _Bar(json_)
    try:
        with interrupt_once():  # Ctrl-C cuts the requests in flight; a second one is ignored
            result = confirmed(
                lambda grant: restructuring.write_batch_run(
                    app, batch_id, grant is not None, progress=bar.update
                ),
                yes,
                json_,
            )
    finally:
        bar.stop()
    _review(app, result, yes, json_, allow_open)
