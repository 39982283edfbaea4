"""`vaultlens watch`: one line per flush while the index follows the vault.

With ``--json`` stdout carries one JSON object per line: one per flush (``kind`` startup,
changes, reconcile or error, ``time``, ``stats``, ``reason``, ``retry_s``), then
``{"kind": "stopped", "time"}`` after Ctrl-C, or ``{"kind": "fatal", "time", "error": {"code",
"message", "hint"}}`` when watch stops on an error (the exit code is the error's; the same
``error`` object other commands print with ``--json``). Human messages go to stderr.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING

from vaultlens.cli import render
from vaultlens.cli.confirm import confirmed
from vaultlens.cli.options import JsonOpt, SetOpt, VaultOpt, YesOpt, open_app
from vaultlens.cli.render import shown
from vaultlens.errors import TRANSLATED, VaultlensError, translate_error

if TYPE_CHECKING:
    from vaultlens.index.watcher import FlushReport


# what `vaultlens` turns into an error message; with --json, into the last object of the stream
FATAL: tuple[type[Exception], ...] = (VaultlensError, *TRANSLATED)


def watch(vault: VaultOpt = None, set_: SetOpt = None, json_: JsonOpt = False, yes: YesOpt = False) -> None:
    """Keep the index current while you write: reconcile now, then follow saves, renames and moves."""
    if not json_:
        _watch(vault, set_, json_, yes)
        return
    try:
        _watch(vault, set_, json_, yes)
    except FATAL as exc:
        error = translate_error(exc)
        render.print_json({"kind": "fatal", "time": time.time(), "error": error.to_dict()}, line=True)
        sys.exit(error.exit_code)


def _watch(vault: VaultOpt, set_: SetOpt, json_: bool, yes: bool) -> None:
    from vaultlens.services.verbs import indexing

    app = open_app(vault, set_)
    stop = threading.Event()
    # SIGTERM stops like Ctrl-C: the current flush is committed or rolled back, the lock released
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    # with --json, stdout is for the objects only: people read stderr
    console = render.err if json_ else render.out
    with contextlib.ExitStack() as startup:
        bar = startup.enter_context(render.RichProgress())

        def on_flush(report: FlushReport) -> None:
            startup.close()  # no live display while idle: it would redraw ten times a second
            if json_:
                render.print_json(report.as_dict(), line=True)
            else:
                console.print(render.flush_line(report))
            if report.kind == "startup":
                w = app.settings.watch
                console.print(
                    f"Watching {shown(str(app.vault))} (debounce {w.debounce_ms} ms, "
                    f"max wait {w.max_wait_ms} ms). Press Ctrl-C to stop."
                )

        try:
            confirmed(lambda grant: indexing.watch(app, on_flush, stop, bar, grant is not None), yes, json_)
        except KeyboardInterrupt:
            startup.close()
            if json_:
                render.print_json({"kind": "stopped", "time": time.time()}, line=True)
            console.print(
                "Stopped watching; every finished batch is saved (a tier fill stopped part-way "
                "goes on at the next `watch` or `index`)."
            )
        finally:
            app.close()
