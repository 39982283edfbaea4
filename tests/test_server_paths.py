"""No path outside the vault, nor one the vault's rules hide, is readable through the API or MCP.

Every attack form goes through every verb that takes a path (`/v1/notes`, `/v1/similar`,
`/v1/notes/list`; `get_note`, `find_related_notes`, `list_notes`) on a real server, and the
secret written beside the vault (and into its hidden and ignored files) never appears in any
response.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession

from server_support import (
    ATTACKS,
    SECRET,
    attack_paths,
    error_of,
    run_async,
    running_server,
    text_of,
    trap_vault,
    with_http_session,
    with_stdio_session,
)
from vaultlens.errors import VaultError
from vaultlens.server.serve import Companion
from vaultlens.services.app import App
from vaultlens.services.verbs.finding import note
from vaultlens.vault.safepath import check_untrusted


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trap_vault(tmp_path_factory.mktemp("paths"))


@pytest.fixture(scope="module")
def server(vault: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Companion]:
    with running_server(vault, tmp_path_factory.mktemp("home"), watch=False) as companion:
        yield companion


def test_the_table_has_at_least_fifteen_attack_forms(vault: Path) -> None:
    assert len(attack_paths(vault)) >= 15


def test_a_plain_note_is_readable_so_refusals_mean_something(server: Companion) -> None:
    reply = httpx.get(server.url + "/v1/notes", params={"path": "Notes/Cats.md"})
    assert reply.status_code == 200
    assert reply.json()["text"].startswith("# Cats")


@pytest.mark.parametrize("endpoint", ["/v1/notes", "/v1/similar"])
def test_every_attack_is_refused_by_the_api(server: Companion, vault: Path, endpoint: str) -> None:
    for name, path in attack_paths(vault):
        reply = httpx.get(server.url + endpoint, params={"path": path})
        assert 400 <= reply.status_code < 500, (name, reply.status_code, reply.text)
        error = reply.json()["error"]
        assert error["code"] in {"vault", "note_not_found", "invalid_input"}, (name, error)
        assert error["message"], name
        assert SECRET not in reply.text, name


@pytest.mark.parametrize("variant", ["notes/cats.md", "Notes/CATS.md", "Notes/Cats.MD", "Notes/Cats", "Cats"])
def test_notes_and_similar_resolve_a_path_by_one_rule(server: Companion, variant: str) -> None:
    """A case or extension variant, or a bare name, is not the note's path: both routes refuse it
    alike, and both take the exact path."""
    answers = [
        httpx.get(server.url + route, params={"path": variant}) for route in ("/v1/notes", "/v1/similar")
    ]
    assert [a.status_code for a in answers] == [404, 404], [a.text for a in answers]
    assert {a.json()["error"]["code"] for a in answers} == {"note_not_found"}
    for route in ("/v1/notes", "/v1/similar"):
        assert httpx.get(server.url + route, params={"path": "Notes/Cats.md"}).status_code == 200


def test_raw_encoded_query_strings_are_refused(server: Companion) -> None:
    """The server decodes the query string once; what is still encoded after that is refused too."""
    for raw in [
        "path=..%2Fsecret.md",
        "path=%2e%2e%2fsecret.md",
        "path=%252e%252e%252fsecret.md",
        "path=%25252e%25252e%25252fsecret.md",
        "path=..%5Csecret.md",
        "path=..%00",
        "path=%C0%AE%C0%AE%2Fsecret.md",  # overlong UTF-8 for '.'
    ]:
        reply = httpx.get(f"{server.url}/v1/notes?{raw}")
        assert 400 <= reply.status_code < 500, (raw, reply.text)
        assert SECRET not in reply.text, raw


@pytest.mark.parametrize(
    "folder",
    [
        "..",
        "../",
        "../outside",
        "/",
        "/etc",
        "~",
        "%2e%2e",
        ".obsidian",
        "Private",
        "Linked folder",
        "Notes/..",
    ],
)
def test_listing_refuses_folders_outside_or_hidden(server: Companion, folder: str) -> None:
    reply = httpx.get(server.url + "/v1/notes/list", params={"folder": folder})
    assert 400 <= reply.status_code < 500, (folder, reply.text)
    assert SECRET not in reply.text


def test_no_listing_or_search_shows_hidden_or_ignored_notes(server: Companion) -> None:
    listed = httpx.get(server.url + "/v1/notes/list", params={"limit": 500}).json()
    paths = {n["path"] for n in listed["notes"]}
    assert "Notes/Cats.md" in paths
    assert not paths & {"Private/Diary.md", "Ignored.md", ".obsidian/workspace.md", "Link out.md"}
    found = httpx.get(server.url + "/v1/search", params={"q": SECRET, "limit": 100})
    assert found.status_code == 200
    assert SECRET not in found.text


async def _mcp_attacks(session: ClientSession, vault: Path) -> list[str]:
    failures = []
    for name, path in attack_paths(vault):
        calls: list[tuple[str, dict[str, Any]]] = [
            ("get_note", {"path": path}),
            ("find_related_notes", {"path": path}),
        ]
        for tool, args in calls:
            result = await session.call_tool(tool, args)
            text = text_of(result)
            if not result.isError or SECRET in text:
                failures.append(f"{tool} {name}: {text[:200]}")
    for folder in ["..", "/etc", "~", ".obsidian", "Private"]:
        result = await session.call_tool("list_notes", {"folder": folder})
        if not result.isError or SECRET in text_of(result):
            failures.append(f"list_notes {folder}")
    # the refusal says why, as the error's own code and message
    error_of(await session.call_tool("get_note", {"path": "../secret.md"}))
    return failures


def test_every_attack_is_refused_over_mcp_http(server: Companion, vault: Path) -> None:
    failures = run_async(lambda: with_http_session(server.url, lambda s: _mcp_attacks(s, vault)))
    assert failures == []


@pytest.mark.slow
def test_every_attack_is_refused_over_mcp_stdio(server: Companion, vault: Path, tmp_path: Path) -> None:
    home = Path(server.app.home.root).parents[1]  # the index built for the server
    failures = run_async(lambda: with_stdio_session(vault, home, lambda s: _mcp_attacks(s, vault)))
    assert failures == []


# ---- the textual check alone (no server) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [
        "100% done.md",
        "Café.md",
        "Cafe\u0301.md",
        "日本語/ノート.md",
        "a%2e.md",
        "Notes/Q&A.md",
        "x~y.md",
        "Über/ß.md",
    ],
)
def test_ordinary_note_names_pass_the_untrusted_check(rel: str) -> None:
    assert check_untrusted(rel) == rel.split("/")


@pytest.mark.parametrize(("name", "rel"), [a for a in ATTACKS if "{" not in a[1]])
def test_the_textual_attacks_are_refused_before_any_file_is_touched(name: str, rel: str) -> None:
    textual = not any(
        word in name for word in ("dot-folder", "ignored", "symlink", "not a note")
    )  # those pass the text check and are refused by the vault's rules
    if textual:
        with pytest.raises(VaultError, match="Refusing note path"):
            check_untrusted(rel)
    else:
        assert ".obsidian" in rel or check_untrusted(rel)


@pytest.mark.parametrize(
    ("rel", "what"),
    [("pic.png", "an attachment"), ("board.canvas", "a Canvas file"), ("t.base", "a Bases file")],
)
def test_a_file_that_is_not_a_note_is_named_for_what_it_is(tmp_path: Path, rel: str, what: str) -> None:
    vault = tmp_path / "v"
    vault.mkdir()
    (vault / rel).write_text("{}\n", encoding="utf-8")
    with pytest.raises(VaultError) as refused:
        note(App.open(vault), rel)
    assert f"{rel!r}: it is {what}, not a Markdown note." in refused.value.message
