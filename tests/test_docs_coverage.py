"""Everything a user or an agent can call is written down: every CLI command, HTTP route (/v1, /ui),
MCP tool and setting key appears in README.md or docs/*.md. Each list is read from the code itself (the
Typer app, the FastAPI app, the MCP server, the settings dataclasses), so a new one fails here until
it is documented."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import typer

import vaultlens
from vaultlens.cli.main import cli
from vaultlens.config.settings import _all_keys
from vl_support import write_vault

REPO = Path(__file__).resolve().parents[1]


def _docs() -> str:
    texts = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return "\n".join(p.read_text(encoding="utf-8") for p in texts)


DOCS = re.sub(r"\s+", " ", _docs())  # a command may wrap in the middle of a line


def commands(group: Any = None, path: tuple[str, ...] = ()) -> Iterator[str]:
    """Every command line of the Typer app, groups and leaves (``write continue``)."""
    group = typer.main.get_command(cli) if group is None else group
    for name, command in getattr(group, "commands", {}).items():
        yield " ".join((*path, name))
        yield from commands(command, (*path, name))


def undocumented(names: Iterable[str], forms: Any) -> list[str]:
    """The names none of whose written forms (``forms(name)``) appears in the docs."""
    return sorted(n for n in names if not any(f in DOCS for f in forms(n)))


def test_every_cli_command_is_documented() -> None:
    found = sorted(commands())
    assert "write continue" in found and "obsidian pair" in found  # the walk reaches the subcommands
    assert undocumented(found, lambda c: [f"vaultlens {c}"]) == []


def _routes(routes: Iterable[Any]) -> Iterator[Any]:
    for route in routes:
        original = getattr(route, "original_router", None)
        yield from _routes(original.routes) if original is not None else [route]


def route_written(path: str) -> bool:
    """``/v1/notes/{path}`` counts when written up to its first parameter (``/v1/notes/...``), as a
    whole path: ``/ask`` inside ``/v1/ask`` does not count for the page ``/ask``."""
    stem = path.split("{")[0].rstrip("/") or "/"
    return re.search(r"(?<![\w./-])" + re.escape(stem) + r"(?![\w-])", DOCS) is not None


def test_every_http_route_is_documented(tmp_path: Path) -> None:
    """The API under /v1, the page's own API under /ui, and the pages themselves."""
    from starlette.routing import Route

    from vaultlens.server.api import create_api

    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n"})
    api = create_api(vaultlens.App.open(vault, {"embedding.provider": "fake"}))
    paths = {r.path for r in _routes(api.routes) if isinstance(r, Route) and r.path != "/openapi.json"}
    assert "/v1/search" in paths and "/note" in paths and any(p.startswith("/ui/api/") for p in paths)
    assert sorted(p for p in paths if not route_written(p)) == []


def test_every_mcp_tool_is_documented(tmp_path: Path) -> None:
    from vaultlens.server.mcp_tools import build_mcp

    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n"})
    tools = [t.name for t in asyncio.run(build_mcp(vaultlens.App.open(vault)).list_tools())]
    assert "search_notes" in tools
    assert undocumented(tools, lambda t: [f"`{t}`", f"{t}("]) == []


def toml_keys(text: str) -> set[str]:
    """``group.name`` for every ``name = ...`` under ``[group]`` in the docs' TOML blocks (commented-out
    examples count: they show the key and a value)."""
    found: set[str] = set()
    for block in re.findall(r"```toml\n(.*?)```", text, re.S):
        group = ""
        for line in block.splitlines():
            line = line.lstrip("# ").strip()
            if header := re.match(r"\[([a-z_]+)\]", line):
                group = header.group(1)
                continue
            for part in line.split(";"):
                if group and (key := re.match(r"([a-z_]+)\s*=", part.strip())):
                    found.add(f"{group}.{key.group(1)}")
    return found


def test_every_setting_is_documented() -> None:
    keys = _all_keys()
    assert "embedding.tier" in keys and "watch.debounce_ms" in keys
    shown = toml_keys(_docs())
    assert "llm.read_timeout_s" in shown  # the README's [llm] example
    assert [k for k in undocumented(keys, lambda k: [k]) if k not in shown] == []


def test_the_checks_find_what_is_not_written() -> None:
    assert undocumented(["no-such-command"], lambda n: [f"vaultlens {n}"]) == ["no-such-command"]
    assert route_written("/v1/search") and route_written("/v1/notes/{path}")
    assert not route_written("/search") and not route_written("/v1/no-such-route")
    assert toml_keys("```toml\n[llm]\n# model = 'x'; endpoint = 'y'\n```\n") == {"llm.model", "llm.endpoint"}
