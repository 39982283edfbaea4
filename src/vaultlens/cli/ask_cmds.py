"""``vaultlens ask``, ``vaultlens chat`` and ``vaultlens providers``: parse, call the service, render.

The answer streams to the terminal as plain text and is redrawn as Markdown when the stream
ends; the Sources under it come from the service's source map, never from the model's text.
Ctrl-C while the model streams stops the request (the connection is closed) and exits 130;
nothing of the question or the answer is written anywhere.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import TYPE_CHECKING, Annotated

import typer
from rich.live import Live
from rich.text import Text

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.interrupts import held_interrupts
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, open_app
from vaultlens.cli.render import shown
from vaultlens.errors import Cancelled
from vaultlens.vault.hidden import markdown_visible, visible

if TYPE_CHECKING:
    from vaultlens.errors import Proposal
    from vaultlens.services.verbs.asking import AskAnswer, ChatSession, ChatTurn

LLMYesOpt = Annotated[
    bool,
    typer.Option(
        "--yes", "-y", help="Agree to send the question and matching note text to the configured LLM."
    ),
]
ExtractiveOpt = Annotated[
    bool,
    typer.Option(
        "--extractive", help="Answer with the best passages and their sources; no LLM, works offline."
    ),
]


class StreamView:
    """Shows text as it streams (when printing for a person), then the final Markdown."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.parts: list[str] = []
        self.live: Live | None = None

    def write(self, piece: str) -> None:
        self.parts.append(piece)
        if not self.enabled:
            return
        if self.live is None:
            with held_interrupts():  # a Live stopped half-started pops a render hook it never pushed
                self.live = Live(console=render.out, refresh_per_second=12, vertical_overflow="visible")
                self.live.start()
        self.live.update(Text(visible("".join(self.parts))))

    def finish(self, text: str) -> None:
        from rich.markdown import Markdown  # markdown-it: only once there is an answer to draw

        if self.live is not None:
            with held_interrupts():
                self.live.update(Markdown(markdown_visible(text)))
                self.live.stop()
                self.live = None
            render.out.print()
        elif self.enabled:
            render.out.print(Markdown(markdown_visible(text)))
        self.parts = []

    def abandon(self) -> None:
        """Stops the display after a Ctrl-C; a further Ctrl-C meanwhile changes nothing (already leaving)."""
        with contextlib.suppress(KeyboardInterrupt), held_interrupts():
            if self.live is not None:
                self.live.stop()
                self.live = None


def print_sources(got: AskAnswer) -> None:
    if got.invalid_citations:
        ids = ", ".join(got.invalid_citations)
        render.out.print(
            f"[yellow]The answer cites {shown(ids)}, which {'is' if len(got.invalid_citations) == 1 else 'are'}"
            " not among the sources below: disregard those references.[/yellow]"
        )
    if not got.sources:
        render.out.print("[dim]No note matches this question well enough to answer it from your vault.[/dim]")
        return
    render.out.print("\n[bold]Sources[/bold]")
    for src in got.sources:
        mark = "[green]●[/green]" if src.id in got.cited else "[dim]○[/dim]"
        where = " › ".join(src.heading_path)
        render.out.print(
            f" {mark} [bold]{src.id}[/bold] [cyan]{shown(src.path)}[/cyan]:{src.start_line}-{src.end_line}"
            + (f"  [dim]{shown(where)}[/dim]" if where else "")
        )
    u = got.usage
    if u is not None and any(
        n is not None for n in (u.prompt_tokens, u.completion_tokens, u.total_tokens, u.cost)
    ):
        bits = [f"{u.prompt_tokens} tokens in" if u.prompt_tokens is not None else ""]
        bits.append(f"{u.completion_tokens} out" if u.completion_tokens is not None else "")
        bits.append(f"cost {u.cost:g}" if u.cost is not None else "")
        render.out.print(f"[dim]{shown(' · '.join(b for b in bits if b))}[/dim]")


def ask(
    question: Annotated[str, typer.Argument(help="Your question; answered only from your notes.")],
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: LLMYesOpt = False,
    extractive: ExtractiveOpt = False,
) -> None:
    """Answer a question from your vault only, citing the notes it comes from ([S1], [S2], ...)."""
    from vaultlens.services.verbs import asking

    app = open_app(vault, set_)
    render.note_if_cut(question, app.settings.search, "question")
    view = StreamView(enabled=not json_)
    try:
        got = confirmed(
            lambda grant: asking.ask(app, question, view.write, grant is not None, extractive), yes, json_
        )
    except KeyboardInterrupt:
        view.abandon()
        raise Cancelled("Stopped while the answer was streaming; nothing was saved.") from None
    if json_:
        render.print_json(got.as_dict())
        return
    view.finish(got.answer)
    print_sources(got)


def chat(
    vault: VaultOpt = None,
    set_: SetOpt = None,
    json_: JsonOpt = False,
    yes: LLMYesOpt = False,
    extractive: ExtractiveOpt = False,
) -> None:
    """Ask follow-up questions (one per line; an empty line or Ctrl-D ends). Each follow-up is
    rewritten into a standalone question before the vault is searched; history is bounded."""
    from vaultlens.services.verbs import asking

    app = open_app(vault, set_)
    session = asking.open_chat(app, extractive)
    interactive = sys.stdin.isatty()
    view = StreamView(enabled=False)
    try:
        while True:
            if interactive:
                render.err.print("[bold]you>[/bold] ", end="")
            line = sys.stdin.readline()
            if not line.strip():
                return
            view = StreamView(enabled=not json_)
            question = line.strip()
            turn = confirmed(functools.partial(_turn, session, question, view), yes, json_)
            alone, got = turn.standalone_question, turn.answer
            render.note_if_cut(alone, app.settings.search, "question")
            if json_:
                render.print_json(turn.as_dict(), line=True)
                continue
            if alone != question:
                render.err.print(f"[dim]searching for: {shown(alone)}[/dim]")
            view.finish(got.answer)
            print_sources(got)
    except KeyboardInterrupt:
        view.abandon()
        raise Cancelled("Chat stopped; nothing of it was saved.") from None
    finally:
        session.close()


def _turn(session: ChatSession, question: str, view: StreamView, grant: Proposal | None) -> ChatTurn:
    from vaultlens.services.verbs import asking

    return asking.chat_turn(session, question, view.write, grant is not None)


def providers(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False) -> None:
    """Which embedding and LLM providers are configured, where they run and which data each receives."""
    from vaultlens.services.verbs import inspecting

    app = open_app(vault, set_)
    rows = inspecting.providers(app)
    if json_:
        render.print_json([r.as_dict() for r in rows])
        return
    for r in rows:
        place = (
            f"{r.endpoint} (remote)"
            if r.remote
            else (f"{r.endpoint} (this machine)" if r.endpoint else "in-process")
        )
        render.out.print(f"[bold]{r.role:<14}[/bold] {shown(r.provider)} · {shown(r.model)} · {shown(place)}")
        if r.error:
            render.out.print(f"          [red]cannot be used:[/red] {shown(r.error)}")
            continue
        render.out.print(f"          receives: {shown(r.receives)}")
        render.out.print(f"          consent: {shown(r.consent)}")
        if r.api_key:
            render.out.print(f"          API key: {shown(r.api_key)}")
