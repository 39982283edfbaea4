"""How a command takes a planned change to the note: settle interrupted writes first, show the exact
diff, ask (or take ``--yes``), write. Shared by `apply`/`undo`, the audit's notes, `moc`, the note
tools of `vaultlens write` and `move`/`merge`, so no command module imports another."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.options import open_app
from vaultlens.cli.render import shown

if TYPE_CHECKING:
    from vaultlens.services.app import App
    from vaultlens.services.verbs.changing import Planned


class PlanningResult(Protocol):
    """A planning verb's result: its JSON form and the one planned write, if any."""

    @property
    def plan(self) -> Planned | None: ...

    def as_dict(self) -> Mapping[str, object]: ...


R = TypeVar("R", bound=PlanningResult)


def report_recovery(app: App, json_: bool) -> None:
    """Settle writes a crash interrupted before anything else, and say what was found."""
    from vaultlens.services.verbs import changing

    for item in changing.recover(app):
        if not json_:
            render.err.print(
                f"[yellow]Interrupted write {item.op_id} ({shown(item.path)}):[/yellow] "
                f"{item.state.replace('_', ' ')} — {shown(item.detail)}"
            )


def apply_confirmed(app: App, op_id: str, yes: bool, json_: bool, allow_open: bool) -> None:
    """Show the operation's exact diff, ask (or take --yes), write it, and say what was done."""
    from vaultlens.services.verbs import changing

    done = confirmed(lambda grant: changing.apply(app, op_id, grant, allow_open), yes, json_)
    if json_:
        render.print_json(done.as_dict())
    else:
        entry = done.entry
        verb = "Deleted" if entry.after_sha is None else "Written"  # the undo of a creation removes the note
        render.out.print(f"[green]{verb}[/green] {shown(entry.path)} ({entry.op_id}).")


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """The options every `vaultlens write` tool (and `move`, `merge`) shares."""

    vault: Path | None
    set_: list[str] | None
    json_: bool
    yes: bool
    plan_only: bool
    allow_open: bool


def run_tool(opts: ToolOptions, call: Callable[[App, bool], R], show: Callable[[R], None]) -> None:
    """Plan (asking consent for a remote model), show the result, then show its diff, ask and write.

    With ``--json`` the one object printed is the verb's result plus ``applied`` (the written entry,
    or null when nothing was written yet)."""
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
