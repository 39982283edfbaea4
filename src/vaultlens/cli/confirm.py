"""The one yes/no dialog: show a verb's proposal, ask (or take --yes), call the verb again with the grant.

Every verb that would send note text off the machine or write a note raises a
:class:`~vaultlens.errors.ConfirmationRequired` carrying the exact :class:`~vaultlens.errors.Proposal`;
this is where the command line shows it. Nothing is asked without a terminal: then ``--yes`` is
the only way on, and the refusal says so.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

import typer

from vaultlens.cli import render
from vaultlens.cli.render import shown
from vaultlens.errors import Cancelled, ConfirmationRequired, ConsentRequired, Proposal, WriteUnconfirmed

T = TypeVar("T")
_ANSWER = "Run the command in a terminal to answer, or pass --yes."


def show(proposal: Proposal, json_: bool) -> None:
    """A send: what goes where (on stderr, also with --json), then the exact prompt (not with --json).
    A write: the summary and the exact diff on stdout (the bytes whose SHA-256 is confirmed)."""
    if proposal.kind == "write":
        if not json_:
            render.out.print(f"[bold]{shown(proposal.what)}[/bold]  [dim]{proposal.op_id}[/dim]")
            render.write_plain(proposal.preview)  # the text whose SHA-256 is confirmed, no markup
        return
    if proposal.preview and not json_:
        render.err.print(
            f"[bold]Prompt for {shown(proposal.destination)}[/bold] ({len(proposal.preview):,} characters):"
        )
        render.write_plain(proposal.preview + "\n", stderr=True)
    else:
        render.err.print(
            f"[yellow]vaultlens will send {shown(proposal.what)} to {shown(proposal.destination)}.[/yellow]"
        )
    for remark in proposal.remarks:
        render.err.print(f"[yellow]{shown(remark)}[/yellow]")


def _declined(exc: ConfirmationRequired, asked: bool) -> ConfirmationRequired:
    """The refusal when the user said no (``asked``) or could not be asked."""
    p = exc.proposal
    if isinstance(exc, WriteUnconfirmed):
        if not asked:
            return WriteUnconfirmed(p, hint=_ANSWER)
        return WriteUnconfirmed(
            p,
            message="Nothing was written.",
            hint=f"It stays planned: `vaultlens apply {p.op_id}` shows it again.",
        )
    if not asked:
        return ConsentRequired(
            p.destination, p.what, message=f"Nothing was sent to {p.destination}: agree first.", hint=_ANSWER
        )
    return ConsentRequired(p.destination, p.what, message="Nothing was sent.", hint=_other_ways(exc.hint))


def _other_ways(hint: str | None) -> str:
    """The verb's advice after a "no", without what the message already said."""
    advice = (hint or "").removeprefix("Nothing was sent.").strip()
    if not advice or advice.startswith("Show "):  # advice for a program that has not asked yet
        return "Run the command again to see what would be sent, or pass --yes to send it without asking."
    return advice


def confirmed(run: Callable[[Proposal | None], T], yes: bool, json_: bool = False) -> T:
    """``run(None)``; when it needs a yes, show the proposal, ask (``--yes``: don't), ``run(proposal)``."""
    try:
        return run(None)
    except ConfirmationRequired as exc:
        show(exc.proposal, json_)
        if not yes:
            if json_ or not sys.stdin.isatty():
                raise _declined(exc, asked=False) from None
            question = (
                f"Write this change to {exc.proposal.destination}?"
                if exc.proposal.kind == "write"
                else f"Send it to {exc.proposal.destination}?"
            )
            try:
                agreed = typer.confirm(question, default=False)
            except typer.Abort:  # Ctrl-C (or the end of input) at the question
                done = "written" if exc.proposal.kind == "write" else "sent"
                raise Cancelled(f"Stopped at the question; nothing was {done}.") from None
            if not agreed:
                raise _declined(exc, asked=True) from None
        return run(exc.proposal)
