"""The ``vaultlens`` command's root: the app, its commands grouped in help panels, and the one place
errors become a message and an exit code.

Each command lives in the ``*_cmds`` module of its group; they parse arguments, call a verb and
render the result. Errors are :class:`VaultlensError` subclasses printed as a message and a hint
with a distinct exit code, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NoReturn

import typer

from vaultlens.cli import render
from vaultlens.cli.ask_cmds import ask, chat, providers
from vaultlens.cli.audit_cmds import audit_cli, moc
from vaultlens.cli.discover_cmds import duplicates_cli, similar
from vaultlens.cli.index_cmds import clear, index, rebuild
from vaultlens.cli.inspect_cmds import (
    bench_cli,
    bench_embed,
    config_cli,
    config_show,
    doctor,
    eval_beir,
    eval_cli,
    eval_queries,
    status,
)
from vaultlens.cli.notetool_cmds import continue_, dataview, flashcards, transform
from vaultlens.cli.obsidian_cmds import obsidian_cli
from vaultlens.cli.relink_cmds import merge, move
from vaultlens.cli.review_cmds import review
from vaultlens.cli.search_cmds import search
from vaultlens.cli.serve_cmds import mcp, serve, ui
from vaultlens.cli.watch_cmds import watch
from vaultlens.cli.write_cmds import apply, history, undo, write_app
from vaultlens.cli.write_many_cmds import batch, split
from vaultlens.errors import TRANSLATED, VaultlensError, translate_error

cli = typer.Typer(
    name="vaultlens",
    help="Find, relate and audit the notes in a Markdown / Obsidian vault, locally.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# --help lists the commands by what they are for, in the order a newcomer meets them; each
# panel's commands are registered in the order they are listed (see the end of this module).
KEEP, FIND, ASK, CHANGE, AUDIT, SERVE, INSPECT = (
    "Keep the index",
    "Find",
    "Ask",
    "Change notes",
    "Audit",
    "Serve",
    "Inspect",
)


_PANELS: list[tuple[str, list[Callable[..., None] | tuple[str, typer.Typer]]]] = [
    (KEEP, [index, watch, rebuild, clear]),
    (FIND, [search, similar, ("duplicates", duplicates_cli)]),
    (ASK, [ask, chat]),
    (CHANGE, [("write", write_app), review, move, merge, apply, undo, history]),
    (AUDIT, [("audit", audit_cli), moc]),  # audit structure (no model), audit deep; a MOC from its clusters
    (SERVE, [serve, ui, mcp, ("obsidian", obsidian_cli)]),  # companion: HTTP API + MCP (cli/serve_cmds.py)
    (INSPECT, [status, doctor, providers, ("config", config_cli), ("eval", eval_cli), ("bench", bench_cli)]),
]
for _panel, _commands in _PANELS:
    for _command in _commands:
        if isinstance(_command, tuple):
            cli.add_typer(_command[1], name=_command[0], rich_help_panel=_panel)
        else:
            cli.command(rich_help_panel=_panel)(_command)
config_cli.command("show")(config_show)
eval_cli.command("beir")(eval_beir)
eval_cli.command("queries")(eval_queries)
bench_cli.command("embed")(bench_embed)
write_app.command("continue")(continue_)
write_app.command("transform")(transform)
write_app.command("dataview")(dataview)
write_app.command("flashcards")(flashcards)
write_app.command("split")(split)  # cli/write_many_cmds.py
write_app.command("batch")(batch)


def main() -> None:
    try:
        cli()
    except VaultlensError as exc:
        _fail(exc)
    except TRANSLATED as exc:  # the last line: services translate their own store and OS errors
        _fail(translate_error(exc))


def _fail(error: VaultlensError) -> NoReturn:
    """Say what went wrong (as JSON on stdout when --json was asked for) and exit with its code."""
    if "--json" in sys.argv[1:]:
        render.print_json({"error": error.to_dict()})
    else:
        render.print_error(error)
    sys.exit(error.exit_code)


if __name__ == "__main__":
    main()
