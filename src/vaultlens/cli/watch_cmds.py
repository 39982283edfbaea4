"""`vaultlens watch`: one line per flush while the index follows the vault."""

from __future__ import annotations

import contextlib
import signal
import threading
import time

from rich.markup import escape

from vaultlens.cli import render
from vaultlens.cli.options import SetOpt, VaultOpt, YesOpt, open_app, with_consent
from vaultlens.index.runs import RunStats
from vaultlens.index.watcher import FlushReport
from vaultlens.services.watch import watch as watch_service


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _summary(stats: RunStats) -> str:
    return (
        f"updated {_count(stats.files_changed, 'note')}, removed {stats.files_deleted}, "
        f"{_count(stats.chunks_embedded, 'chunk')} embedded"
    )


def describe(report: FlushReport) -> str:
    """The one line printed for a flush."""
    clock = time.strftime("%H:%M:%S", time.localtime(report.at))
    if report.kind == "error":
        return (
            f"[dim]{clock}[/dim] [red]sync failed:[/red] {escape(report.reason)}; "
            f"full reconcile in {report.retry_s:.0f}s"
        )
    assert report.stats is not None
    text = _summary(report.stats)
    if report.kind == "startup":
        return f"[dim]{clock}[/dim] reconciled at start: {text}"
    if report.kind == "reconcile":
        return f"[dim]{clock}[/dim] full reconcile ({escape(report.reason)}): {text}"
    return f"[dim]{clock}[/dim] {text}"


def watch(vault: VaultOpt = None, set_: SetOpt = None, yes: YesOpt = False) -> None:
    """Keep the index current while you write: reconcile now, then follow saves, renames and moves."""
    app = open_app(vault, set_)
    stop = threading.Event()
    # SIGTERM stops like Ctrl-C: the current flush is committed or rolled back, the lock released
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    with contextlib.ExitStack() as startup:
        bar = startup.enter_context(render.RichProgress())

        def on_flush(report: FlushReport) -> None:
            startup.close()  # no live display while idle: it would redraw ten times a second
            render.out.print(describe(report))
            if report.kind == "startup":
                debounce = app.settings.watch.debounce_ms
                render.out.print(
                    f"Watching {escape(str(app.vault))} (debounce {debounce} ms). Press Ctrl-C to stop."
                )

        try:
            with_consent(yes, lambda consent: watch_service(app, on_flush, stop, bar, consent))
        except KeyboardInterrupt:
            startup.close()
            render.out.print("Stopped watching; the index is up to date with the last flush.")
        finally:
            app.close()
