"""Terminal output: Rich for people, JSON for programs, one translator for errors."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from vaultlens.cli.interrupts import held_interrupts
from vaultlens.errors import VaultlensError
from vaultlens.vault.hidden import json_visible, visible

if TYPE_CHECKING:
    from vaultlens.config.settings import SearchSettings
    from vaultlens.index.runs import RunStats
    from vaultlens.index.watcher import FlushReport
    from vaultlens.services.verbs.finding import NoteHit
    from vaultlens.services.verbs.status import DoctorReport, IndexStatus, TierStatus

# no :emoji: codes: a fragment id such as 3f2a1b9c:A:1, a path or a note's text must print as written
out = Console(highlight=False, emoji=False)
err = Console(stderr=True, highlight=False, emoji=False)


def shown(text: str) -> str:
    """Text from a note, a model or a server as Rich prints it: markup escaped, and every control,
    bidi or invisible character named (``<ESC>``, ``<U+202E>``), so a terminal shows what is there."""
    return escape(visible(text))


def write_plain(text: str, stderr: bool = False) -> None:
    """Print ``text`` (a diff, a prompt) as it is, without markup, its hidden characters named."""
    stream = sys.stderr if stderr else sys.stdout
    stream.write(visible(text))
    stream.flush()


def print_json(data: object, line: bool = False) -> None:
    """``data`` as JSON (``line``: on one line, flushed at once, for a stream a reader follows live),
    every hidden character written as its ``\\u`` escape: the same value, nothing raw on a terminal."""
    sys.stdout.write(json_visible(json.dumps(data, ensure_ascii=False, indent=None if line else 2)) + "\n")
    if line:
        sys.stdout.flush()


def print_hits(hits: list[NoteHit]) -> None:
    if not hits:
        out.print("[dim]No matching notes.[/dim]")
        return
    if all(h.weak for h in hits):
        out.print(
            f"[yellow]Nothing in the vault matches this well[/yellow] (best similarity {max(h.similarity for h in hits):.2f});"
            " these are only the closest notes."
        )
    for n, hit in enumerate(hits, 1):
        out.print(
            f"[bold]{n}. {shown(hit.title)}[/bold]  [cyan]{shown(hit.path)}[/cyan]  "
            f"[dim]{hit.score:.3f} · similarity {hit.similarity:.2f}[/dim]"
        )
        for sec in hit.sections:
            where = " › ".join(sec.heading_path) or "(top of note)"
            place = f"L{sec.start_line}-{sec.end_line}"
            if sec.page is not None:  # a PDF's section: its page, lines within it
                place, where = f"page {sec.page}", f"{place} of the page"
            elif sec.card is not None:  # a canvas text card
                where = f"card {sec.card}"
            out.print(f"   [green]{place}[/green] {shown(where)}  [dim]{sec.score or 0:.3f}[/dim]")
            out.print(f"      {shown(sec.snippet)}", soft_wrap=False, overflow="ellipsis", no_wrap=True)


def note_if_cut(query: str, search: SearchSettings, what: str = "query") -> None:
    """Say on stderr (so --json output keeps its shape) that only the start of a long query is used."""
    kept, given = len(search.bounded_query(query)), len(query.strip())
    if kept < given:
        err.print(
            f"[yellow]note:[/yellow] the {what} is {given:,} characters long; only its first {kept:,} are used "
            "(search.max_query_chars)."
        )


def print_error(exc: VaultlensError) -> None:
    err.print(f"[bold red]error:[/bold red] {shown(exc.message)}")
    if exc.hint:
        err.print(f"[yellow]hint:[/yellow] {shown(exc.hint)}")


class RichProgress:
    """Indexer progress as a Rich bar: items done, rate and time left for each phase."""

    def __init__(self, unit: str = "items") -> None:
        self._bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("[dim]{task.fields[rate]}[/dim]"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=err,
            transient=False,
        )
        self._task: TaskID | None = None

    def __enter__(self) -> RichProgress:
        """Starts the bar whole: a Ctrl-C meanwhile is raised once it started, and stops it first
        (a bar left half-started kept the terminal's cursor hidden after the command ended)."""
        try:
            with held_interrupts():
                self._bar.start()
        except KeyboardInterrupt:
            self.__exit__(KeyboardInterrupt)
            raise
        return self

    def __exit__(self, leaving: type[BaseException] | None = None, *exc: object) -> None:
        """Stops the bar whole; a Ctrl-C meanwhile is raised after it, unless the command is already
        leaving on an error or an earlier Ctrl-C (then the second one changes nothing)."""
        try:
            with held_interrupts():
                self._bar.stop()
        except KeyboardInterrupt:
            if leaving is None:
                raise

    def phase(self, name: str, total: int) -> None:
        if self._task is not None:
            self._bar.update(self._task, completed=self._bar.tasks[-1].total)
        self._task = self._bar.add_task(name, total=total, rate="")

    def advance(self, n: int = 1) -> None:
        if self._task is None:
            return
        self._bar.advance(self._task, n)
        speed = self._bar.tasks[-1].speed
        self._bar.update(self._task, rate=f"{speed:,.0f}/s" if speed else "")


def by_kind(notes: int, pdfs: int, canvases: int) -> str:
    """What the index holds by kind, e.g. "40 notes, 10 PDFs, 1 canvas" (a kind with none left out, notes never)."""
    words = ((notes, "note", "notes"), (pdfs, "PDF", "PDFs"), (canvases, "canvas", "canvases"))
    return ", ".join(f"{n} {one if n == 1 else many}" for i, (n, one, many) in enumerate(words) if n or not i)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _print_tier(tier: TierStatus) -> None:
    if tier.reason:
        out.print(
            f"[bold]Tier[/bold]   {shown(tier.setting)} picked {shown(tier.chosen)}: {shown(tier.reason)}"
        )
    if tier.chosen == "off":
        if tier.covered:
            out.print(
                f"[bold]Tier[/bold]   off; {tier.covered} stored vectors of {shown(tier.model or '')} are unused"
            )
        return
    share = f"{tier.covered} of {tier.total} chunk texts"
    model = shown(tier.model or tier.setting)
    if tier.behind:
        out.print(
            f"[bold]Tier[/bold]   {model}: [yellow]{share}, behind[/yellow] "
            "(run `vaultlens index` to finish; search mixes it in where it is ready)"
        )
        if tier.last_error:
            out.print(f"         [yellow]the last fill stopped: {shown(tier.last_error)}[/yellow]")
    else:
        out.print(f"[bold]Tier[/bold]   {model}: {share}")


def print_status(info: IndexStatus) -> None:
    out.print(f"[bold]Vault[/bold]  {shown(info.vault)}")
    out.print(f"[bold]Index[/bold]  {shown(info.index_dir)}")
    _print_rule_problems(info.rule_problems)
    if not info.indexed:
        out.print("[yellow]Not indexed yet.[/yellow] Run `vaultlens index`.")
        return
    f = info.files
    out.print(
        f"[bold]Files[/bold]  [green]{f.get('indexed', 0)} indexed[/green], "
        f"[yellow]{f.get('skipped', 0)} skipped[/yellow], [red]{f.get('failed', 0)} failed[/red]"
    )
    out.print(
        f"[bold]Totals[/bold] {by_kind(info.notes, info.pdfs, info.canvases)}, {info.chunks} chunks, {_size(info.size_bytes)} on disk"
    )
    label = info.embedding_space.describe() if info.embedding_space else "none yet"
    warn = (
        ""
        if info.configured_space_matches
        else "  [red](differs from settings: run `vaultlens rebuild`)[/red]"
    )
    out.print(f"[bold]Model[/bold]  {shown(label)}{warn}")
    if info.tier:
        _print_tier(info.tier)
    run = info.last_run
    if run:
        st = run.stats
        out.print(
            f"[bold]Last run[/bold] {run.status}: {st.files_scanned} scanned, {st.files_changed} changed, "
            f"{st.chunks_embedded} embedded, {st.chunks_reused} reused, {st.chunks_deleted} deleted, "
            + (f"{st.tier_embedded} tier vectors, " if st.tier_embedded else "")
            + f"{st.seconds:.1f}s"
        )
        if run.status == "interrupted":
            out.print(
                "  [yellow]It was interrupted[/yellow]; the next `vaultlens index` resumes where it stopped."
            )
        if run.error:
            out.print(f"  [red]Why it failed:[/red] {shown(run.error)}")
    if info.rechunk_pending:
        out.print(
            "[yellow]Chunking settings changed[/yellow]: the next `vaultlens index` re-chunks every note "
            "(only chunks whose text changed are embedded again)."
        )
    if info.problems:
        out.print("[bold]Notes with a reason[/bold]")
        for p in info.problems:
            colour = {"skipped": "yellow", "failed": "red"}.get(p.status, "cyan")
            out.print(f"  [{colour}]{p.status:<8}[/{colour}] {shown(p.path)}: {shown(p.reason or '')}")
    if info.cleared and not info.chunks:
        out.print("[yellow]Cleared[/yellow]: the index is empty until you run `vaultlens index`.")
    change = info.space_change
    if change and change.configured:
        out.print(
            f"[bold]Settings[/bold] {shown(change.configured)}. {shown(change.message)}\n"
            "Run `vaultlens rebuild` (or `vaultlens rebuild --background` to keep searching meanwhile)."
        )


def _print_rule_problems(problems: list[str]) -> None:
    for problem in problems:
        err.print(f"[red]✗[/red] ignore rules: {shown(problem)}")


def print_doctor(report: DoctorReport) -> None:
    for p in report.problems:
        err.print(f"[red]✗[/red] {shown(p)}")
    if report.problems:
        err.print("Run `vaultlens rebuild` to rebuild the index from the vault.")
    _print_rule_problems(report.rule_problems)
    if report.rule_problems:
        err.print("Notes you excluded in Obsidian may be indexed until .obsidian/app.json is fixed.")
    for p in report.unfinished_writes:
        err.print(f"[red]✗[/red] {escape(p)}.")
    if report.healthy:
        out.print("[green]✓[/green] index is healthy")
    if report.ann_recall is not None:
        out.print(f"ANN tier recall@10 against exact search: {report.ann_recall:.3f}")
    if report.unused_vectors:
        out.print(
            f"[dim]{report.unused_vectors} vectors without a chunk are kept for reuse; "
            "the next index run drops them.[/dim]"
        )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _summary(stats: RunStats) -> str:
    text = (
        f"updated {_count(stats.files_changed, 'note')}, removed {stats.files_deleted}, "
        f"{_count(stats.chunks_embedded, 'chunk')} embedded"
    )
    if stats.tier_error:  # the next flush or run resumes it
        text += f"; [yellow]quality tier behind: {shown(stats.tier_error)}[/yellow]"
    return text


def flush_line(report: FlushReport) -> str:
    """The one line `watch` and `serve` print for a flush of the watcher."""
    clock = time.strftime("%H:%M:%S", time.localtime(report.at))
    if report.kind == "error":
        return (
            f"[dim]{clock}[/dim] [red]sync failed:[/red] {shown(report.reason)}; "
            f"full reconcile in {report.retry_s:.0f}s"
        )
    assert report.stats is not None
    text = _summary(report.stats)
    if report.kind == "startup":
        return f"[dim]{clock}[/dim] reconciled at start: {text}"
    if report.kind == "reconcile":
        return f"[dim]{clock}[/dim] full reconcile ({shown(report.reason)}): {text}"
    return f"[dim]{clock}[/dim] {text}"
