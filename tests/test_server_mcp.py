"""The MCP server through the SDK's own client: over stdio (a `vaultlens mcp` child) and over
streamable HTTP (`/mcp` of a real `serve`): each tool's happy path, bounds and errors."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from server_support import (
    LONG_NOTE,
    error_of,
    payload,
    run_async,
    running_server,
    trap_vault,
    with_http_session,
    with_stdio_session,
)
from vaultlens.server.envelope import NOTICE
from vaultlens.server.serve import Companion
from vl_support import VAULTLENS_BIN, cli_env

TOOLS = {"search_notes", "get_note", "find_related_notes", "vault_status", "list_notes"}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trap_vault(tmp_path_factory.mktemp("mcp"))


@pytest.fixture(scope="module")
def server(vault: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Companion]:
    with running_server(vault, tmp_path_factory.mktemp("home"), watch=False) as companion:
        yield companion


async def _tour(session: ClientSession) -> dict[str, Any]:
    """Every tool, happy path first, then its bounds and errors; returns what the asserts need."""
    out: dict[str, Any] = {}
    listed = (await session.list_tools()).tools
    out["tools"] = {t.name: t for t in listed}
    out["search"] = payload(await session.call_tool("search_notes", {"query": "cats sleep", "limit": 2}))
    out["note"] = payload(
        await session.call_tool("get_note", {"path": "Long.md", "offset": 10, "length": 500})
    )
    out["related"] = payload(
        await session.call_tool("find_related_notes", {"path": "Notes/Cats.md", "limit": 3})
    )
    out["status"] = payload(await session.call_tool("vault_status", {}))
    out["list"] = payload(await session.call_tool("list_notes", {"folder": "Notes"}))
    out["inject"] = payload(await session.call_tool("get_note", {"path": "Inject.md"}))
    out["errors"] = {
        "long query": error_of(await session.call_tool("search_notes", {"query": "x" * 2001})),
        "empty query": error_of(await session.call_tool("search_notes", {"query": ""})),
        "blank query": error_of(await session.call_tool("search_notes", {"query": "   "})),
        "limit 0": error_of(await session.call_tool("search_notes", {"query": "cats", "limit": 0})),
        "limit 26": error_of(await session.call_tool("search_notes", {"query": "cats", "limit": 26})),
        "slice too long": error_of(
            await session.call_tool("get_note", {"path": "Long.md", "length": 20_001})
        ),
        "negative offset": error_of(await session.call_tool("get_note", {"path": "Long.md", "offset": -1})),
        "offset past end": error_of(
            await session.call_tool("get_note", {"path": "Long.md", "offset": 10**8})
        ),
        "missing note": error_of(await session.call_tool("get_note", {"path": "Nope.md"})),
        "missing arg": error_of(await session.call_tool("get_note", {})),
        "unknown related": error_of(await session.call_tool("find_related_notes", {"path": "Nope"})),
        "bad cursor": error_of(await session.call_tool("list_notes", {"cursor": "%%%"})),
        "missing folder": error_of(await session.call_tool("list_notes", {"folder": "Nowhere"})),
    }
    pages: list[str] = []
    cursor = None
    while True:
        args: dict[str, str] = {"cursor": cursor} if cursor else {}
        page = payload(await session.call_tool("list_notes", args))["data"]
        pages += [n["path"] for n in page["notes"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    out["all"] = pages
    return out


def _check_tour(out: dict[str, Any]) -> None:
    tools = out["tools"]
    assert set(tools) == TOOLS  # no write tools
    for tool in tools.values():
        assert tool.annotations is not None and tool.annotations.readOnlyHint is True, tool.name
        assert tool.annotations.destructiveHint is False, tool.name
    assert tools["search_notes"].inputSchema["properties"]["query"]["maxLength"] == 2000
    assert tools["get_note"].inputSchema["properties"]["length"]["maximum"] == 20_000
    for key in ("search", "note", "related", "status", "list", "inject"):
        env = out[key]
        assert env["trust"] == "untrusted" and env["notice"] == NOTICE and env["source"] == "vaultlens", key
    assert out["search"]["data"]["results"][0]["path"] == "Notes/Cats.md"
    assert len(out["search"]["data"]["results"]) <= 2
    note = out["note"]["data"]
    assert note["text"] == LONG_NOTE[10:510] and note["next_offset"] == 510
    assert note["total_length"] == len(LONG_NOTE)
    assert out["related"]["data"]["results"][0]["path"] == "Notes/Dogs.md"
    assert out["status"]["data"]["indexed"] is True
    assert [n["path"] for n in out["list"]["data"]["notes"]] == ["Notes/Cats.md", "Notes/Dogs.md"]
    # a note that tries to give orders arrives as data inside the envelope, quotes escaped
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in out["inject"]["data"]["text"]
    assert out["inject"]["notice"].startswith("UNTRUSTED DATA")
    errors = out["errors"]
    for name, text in errors.items():
        assert "Traceback" not in text, name
    assert "invalid_input" in errors["slice too long"] or "20000" in errors["slice too long"]
    assert "empty_query" in errors["blank query"]
    assert "invalid_input" in errors["offset past end"]
    assert "note_not_found" in errors["missing note"]
    assert "note_not_found" in errors["unknown related"]
    assert "invalid_input" in errors["bad cursor"]
    assert "note_not_found" in errors["missing folder"]
    assert len(out["all"]) == 7 and out["all"] == sorted(out["all"])


def test_every_tool_over_streamable_http(server: Companion) -> None:
    _check_tour(run_async(lambda: with_http_session(server.url, _tour)))


def test_every_tool_over_stdio(server: Companion, vault: Path) -> None:
    home = server.app.home.root.parents[1]
    _check_tour(run_async(lambda: with_stdio_session(vault, home, _tour)))


def test_a_bug_in_a_tool_is_logged_and_its_details_are_not_handed_out(
    server: Companion, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Failure injection: the search verb raises what a bug would; the agent gets the generic error."""

    def bug(*_: Any, **__: Any) -> Any:
        raise KeyError("internal-detail-42")

    monkeypatch.setattr("vaultlens.services.verbs.finding.search", bug)

    async def use(session: ClientSession) -> str:
        return error_of(await session.call_tool("search_notes", {"query": "cats"}))

    text = run_async(lambda: with_http_session(server.url, use))
    assert (
        json.loads(text)["error"]["message"].startswith("Internal error") and "internal-detail-42" not in text
    )
    assert any("internal-detail-42" in str(r.exc_info) for r in caplog.records if r.exc_info)


@pytest.mark.slow
def test_mcp_over_stdio_without_an_index_says_how_to_build_one(tmp_path: Path, isolated_env: Path) -> None:
    vault = trap_vault(tmp_path / "fresh")

    async def use(session: ClientSession) -> tuple[str, dict[str, Any]]:
        failed = error_of(await session.call_tool("search_notes", {"query": "cats"}))
        note = payload(await session.call_tool("get_note", {"path": "Notes/Cats.md"}))  # no index needed
        return failed, note

    failed, note = run_async(lambda: with_stdio_session(vault, isolated_env, use))
    assert "index_not_found" in failed and "vaultlens index" in failed
    assert note["data"]["text"].startswith("# Cats")


def test_home_option_finds_an_index_the_client_environment_does_not_name(
    server: Companion, vault: Path
) -> None:
    home = server.app.home.root.parents[1]

    async def use(session: ClientSession) -> tuple[dict[str, Any], dict[str, Any]]:
        found = payload(await session.call_tool("search_notes", {"query": "cats sleep"}))
        return found, payload(await session.call_tool("vault_status", {}))

    found, status = run_async(lambda: with_stdio_session(vault, home, use, home_option=True))
    assert found["data"]["results"][0]["path"] == "Notes/Cats.md"
    assert status["data"]["indexed"] is True


def test_vault_status_without_an_index_is_an_error_naming_the_way_out(tmp_path: Path) -> None:
    vault = trap_vault(tmp_path / "fresh")
    home = tmp_path / "elsewhere"

    async def use(session: ClientSession) -> str:
        return error_of(await session.call_tool("vault_status", {}))

    error = json.loads(run_async(lambda: with_stdio_session(vault, home, use)))["error"]
    assert error["code"] == "index_not_found" and str(home) in error["message"]
    assert (
        "vaultlens index" in error["hint"] and "--home" in error["hint"] and "VAULTLENS_HOME" in error["hint"]
    )


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("search_notes", {"query": ""}, "Invalid request: query: String should have at least 1 character."),
        ("search_notes", {"query": "cats", "limit": 26}, "limit: Input should be less than or equal to 25"),
        ("get_note", {}, "Invalid request: path: Field required."),
        ("get_note", {"path": "Long.md", "offset": "x"}, "offset: Input should be a valid integer"),
        ("no_such_tool", {}, "Unknown tool: no_such_tool"),
    ],
)
def test_refused_arguments_come_back_in_the_one_error_shape(
    server: Companion, tool: str, arguments: dict[str, Any], message: str
) -> None:
    async def use(session: ClientSession) -> str:
        return error_of(await session.call_tool(tool, arguments))

    body = json.loads(run_async(lambda: with_http_session(server.url, use)))  # the whole text is JSON
    assert set(body) == {"error"} and body["error"]["code"] == "invalid_input", body
    assert message in body["error"]["message"] and "pydantic" not in body["error"]["message"]


def test_tool_errors_carry_the_error_code_as_json(server: Companion) -> None:
    async def use(session: ClientSession) -> str:
        return error_of(await session.call_tool("get_note", {"path": "../secret.md"}))

    body = json.loads(run_async(lambda: with_http_session(server.url, use)))
    assert body["error"]["code"] == "vault" and "'..'" in body["error"]["message"]


@pytest.mark.slow
def test_a_client_that_sends_garbage_and_leaves_ends_the_session_without_a_traceback(
    tmp_path: Path, isolated_env: Path
) -> None:
    """The SDK answers a malformed line with a log notice; when stdin has already closed, that
    notice used to escape as an ExceptionGroup traceback with exit code 1."""
    vault = trap_vault(tmp_path / "fresh")
    proc = subprocess.run(
        [str(VAULTLENS_BIN), "mcp", "--vault", str(vault)],
        input='garbage\n{"jsonrpc": "2.0"}\n',
        env=cli_env(isolated_env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "ClosedResourceError" not in proc.stderr
