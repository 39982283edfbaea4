"""The HTTP API on a real uvicorn server: each route, its bounds and errors, auth, and properties.

The property tests draw every parameter of every route from the server's own OpenAPI
document (in range and out of it, and arbitrary strings) and check that no reply is a 500
and that each reply body matches the schema the document gives for its status.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server_support import CHILD, NOTES, SECRET, run_async, running_server, trap_vault, with_http_session
from vaultlens.errors import ConfigError
from vaultlens.server.guard import check_bind, is_loopback
from vaultlens.server.limits import MAX_BODY_BYTES
from vaultlens.server.serve import Companion
from vl_support import cli_env, run_cli


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return trap_vault(tmp_path_factory.mktemp("api"))


@pytest.fixture(scope="module")
def server(vault: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Companion]:
    with running_server(vault, tmp_path_factory.mktemp("home"), watch=False) as companion:
        yield companion


def get(server: Companion, route: str, **params: Any) -> httpx.Response:
    return httpx.get(server.url + route, params=params, timeout=30)


# ---- routes -------------------------------------------------------------------------------------------


def test_search_returns_the_same_items_as_search_json(server: Companion, vault: Path) -> None:
    reply = get(server, "/v1/search", q="cats sleep", limit=3)
    assert reply.status_code == 200
    items = reply.json()
    assert items[0]["path"] == "Notes/Cats.md"
    assert {"path", "score", "sections"} <= set(items[0])
    home = server.app.home.root.parents[1]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(home))
        cli = run_cli(
            [
                "search",
                "cats sleep",
                "-n",
                "3",
                "--json",
                "--vault",
                str(vault),
                "--set",
                "embedding.provider=fake",
            ]
        )
    assert cli.exit_code == 0, cli.output
    import json

    assert json.loads(cli.stdout) == items


def test_status_similar_duplicates(server: Companion) -> None:
    status = get(server, "/v1/status").json()
    assert status["indexed"] is True and status["notes"] == 7
    similar = get(server, "/v1/similar", path="Notes/Cats.md", limit=2).json()
    assert similar["path"] == "Notes/Cats.md"
    assert similar["results"][0]["path"] == "Notes/Dogs.md"
    nfd = get(server, "/v1/similar", path="Cafe\u0301.md").json()  # typed NFD, stored NFC, as /v1/notes
    assert nfd["path"] == "Café.md"
    dups = get(server, "/v1/duplicates")
    assert dups.status_code == 200 and "pairs" in dups.json()


def test_a_note_is_read_in_bounded_slices_with_its_length_and_hash(server: Companion, vault: Path) -> None:
    raw = (vault / "Long.md").read_bytes()
    text = raw.decode("utf-8")
    first = get(server, "/v1/notes", path="Long.md", length=1000).json()
    assert first["text"] == text[:1000]
    assert first["total_length"] == len(text)
    assert first["content_hash"] == hashlib.sha256(raw).hexdigest()
    assert first["next_offset"] == 1000
    got, offset = "", 0
    while offset is not None:
        part = get(server, "/v1/notes", path="Long.md", offset=offset, length=20_000).json()
        assert part["length"] <= 20_000
        got += part["text"]
        offset = part["next_offset"]
    assert got == text
    nfd = get(server, "/v1/notes", path="Cafe\u0301.md")  # typed NFD, stored NFC: found
    assert nfd.status_code == 200 and nfd.json()["path"] == "Café.md"


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"path": "Long.md", "length": 20_001}, 400, "invalid_input"),
        ({"path": "Long.md", "length": 0}, 400, "invalid_input"),
        ({"path": "Long.md", "offset": -1}, 400, "invalid_input"),
        ({"path": "Long.md", "offset": 10**9}, 400, "invalid_input"),
        ({"path": "Long.md", "length": "many"}, 400, "invalid_input"),
        ({}, 400, "invalid_input"),
        ({"path": "Nope.md"}, 404, "note_not_found"),
        ({"path": "x" * 1025}, 400, "invalid_input"),
    ],
)
def test_note_slice_errors(server: Companion, params: dict[str, Any], status: int, code: str) -> None:
    reply = get(server, "/v1/notes", **params)
    assert reply.status_code == status, reply.text
    assert reply.json()["error"]["code"] == code
    assert reply.json()["error"]["message"]


def test_listing_pages_with_a_cursor(server: Companion) -> None:
    seen: list[str] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = get(server, "/v1/notes/list", **params).json()
        assert page["total"] == 7 and len(page["notes"]) <= 2
        seen += [n["path"] for n in page["notes"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == sorted(seen) and len(seen) == 7
    folder = get(server, "/v1/notes/list", folder="Notes/").json()
    assert [n["path"] for n in folder["notes"]] == ["Notes/Cats.md", "Notes/Dogs.md"]
    assert get(server, "/v1/notes/list", cursor="!!not-ours!!").json()["error"]["code"] == "invalid_input"
    assert get(server, "/v1/notes/list", folder="Nowhere").status_code == 404


@pytest.mark.parametrize(
    ("route", "params", "status", "code"),
    [
        ("/v1/search", {"q": ""}, 400, "invalid_input"),
        ("/v1/search", {"q": "   "}, 400, "empty_query"),
        ("/v1/search", {"q": "x" * 2001}, 400, "invalid_input"),
        ("/v1/search", {"q": "cats", "limit": 0}, 400, "invalid_input"),
        ("/v1/search", {"q": "cats", "limit": 101}, 400, "invalid_input"),
        ("/v1/similar", {"path": "Unknown note"}, 404, "note_not_found"),
        ("/v1/duplicates", {"threshold": 2}, 400, "invalid_input"),
        ("/v2/nothing", {}, 404, "not_found"),
    ],
)
def test_errors_have_one_shape_and_their_own_status(
    server: Companion, route: str, params: dict[str, Any], status: int, code: str
) -> None:
    reply = get(server, route, **params)
    assert reply.status_code == status, reply.text
    assert set(reply.json()) == {"error"}
    assert reply.json()["error"]["code"] == code
    assert "Traceback" not in reply.text


def test_writes_are_not_routes(server: Companion) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH", "TRACE"):
        reply = httpx.request(method, server.url + "/v1/notes", params={"path": "Notes/Cats.md"})
        assert reply.status_code == 405, method
        assert reply.json()["error"]["code"] == "method_not_allowed"
        assert reply.headers.get("allow") == "GET", method  # RFC 9110: a 405 says what is allowed


def test_the_server_never_writes_to_the_vault(server: Companion, vault: Path) -> None:
    from vl_support import snapshot

    before = snapshot(vault)
    for route, params in [
        ("/v1/search", {"q": "cats"}),
        ("/v1/notes", {"path": "Notes/Cats.md"}),
        ("/v1/notes/list", {}),
        ("/v1/similar", {"path": "Notes/Cats.md"}),
        ("/v1/duplicates", {}),
        ("/v1/status", {}),
    ]:
        assert get(server, route, **params).status_code == 200
    assert snapshot(vault) == before


def test_a_foreign_host_header_is_refused_on_loopback(server: Companion) -> None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not read the vault."""
    reply = httpx.get(server.url + "/v1/status", headers={"Host": "evil.example:8765"})
    assert reply.status_code == 403
    assert reply.json()["error"]["code"] == "forbidden_host"
    assert httpx.get(server.url + "/v1/status", headers={"Host": "localhost:1"}).status_code == 200


def test_a_request_body_past_the_cap_is_refused_before_it_is_read(server: Companion) -> None:
    """A 600 MB POST used to be read whole into memory (after the Host and token checks)."""
    big = b"x" * (MAX_BODY_BYTES + 1)
    reply = httpx.post(server.url + "/v1/ask", content=big, headers={"content-type": "application/json"})
    assert reply.status_code == 413 and reply.json()["error"]["code"] == "request_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap counts what arrives
        for _ in range(MAX_BODY_BYTES // 65_536 + 2):
            yield b"x" * 65_536

    streamed = httpx.post(
        server.url + "/v1/ask", content=chunks(), headers={"content-type": "application/json"}
    )
    assert streamed.status_code == 413
    assert get(server, "/v1/status").status_code == 200  # the server goes on


# ---- binding and tokens ---------------------------------------------------------------------------------


def test_loopback_names() -> None:
    assert all(is_loopback(h) for h in ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
    assert not any(is_loopback(h) for h in ["0.0.0.0", "::", "192.168.1.2", "example.com"])


def test_a_non_loopback_bind_without_a_token_is_refused() -> None:
    for host in ("0.0.0.0", "::", "192.168.1.20"):
        with pytest.raises(ConfigError, match="no token is set"):
            check_bind(host, None, None)
    with pytest.raises(ConfigError, match="not set or empty"):
        check_bind("127.0.0.1", None, "VAULTLENS_TEST_TOKEN")
    for wrong in ("a b", "s3cr3t-t0ken!", "1TOKEN", ""):  # a token pasted in place of the variable's name
        with pytest.raises(ConfigError, match="NAME of an environment variable"):
            check_bind("0.0.0.0", "t" if wrong == "a b" else None, wrong)


@pytest.mark.slow
def test_serve_refuses_a_public_bind_from_the_command_line(tmp_path: Path, isolated_env: Path) -> None:
    vault = trap_vault(tmp_path / "v")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, "serve", "--vault", str(vault), "--host", "0.0.0.0", "--port", "0"],
        env=cli_env(isolated_env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "no token is set" in done.stderr and "--token-env" in done.stderr
    assert "Traceback" not in done.stderr
    unset = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            "serve",
            "--vault",
            str(vault),
            "--host",
            "0.0.0.0",
            "--token-env",
            "NOPE_UNSET",
        ],
        env=cli_env(isolated_env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert unset.returncode == 2 and "NOPE_UNSET" in unset.stderr
    pasted = subprocess.run(  # the secret itself where its variable's name goes
        [sys.executable, "-c", CHILD, "serve", "--vault", str(vault), "--token-env", "s3cr3t token!"],
        env=cli_env(isolated_env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pasted.returncode == 2 and "NAME of an environment variable" in " ".join(pasted.stderr.split())
    assert "Traceback" not in pasted.stderr


def test_a_token_protects_every_route_and_mcp(vault: Path, tmp_path: Path) -> None:
    token = "s3cret-" + os.urandom(8).hex()
    with running_server(vault, tmp_path / "home", host="0.0.0.0", token=token, watch=False) as server:
        for headers in (
            {},
            {"Authorization": "Bearer wrong"},
            {"Authorization": token},
            {"Authorization": "Basic x"},
        ):
            for route in ("/v1/status", "/v1/notes?path=Notes/Cats.md", "/openapi.json", "/mcp"):
                reply = httpx.get(server.url + route, headers=headers)
                assert reply.status_code == 401, (route, headers)
                assert reply.json()["error"]["code"] == "unauthorized"
                assert reply.headers["www-authenticate"].startswith("Bearer")
        ok = httpx.get(server.url + "/v1/status", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
        # a public bind with a token does not check Host: the token is the guard
        assert (
            httpx.get(
                server.url + "/v1/status", headers={"Authorization": f"Bearer {token}", "Host": "vault.lan"}
            ).status_code
            == 200
        )

        async def tools(session: Any) -> list[str]:
            return [t.name for t in (await session.list_tools()).tools]

        assert "get_note" in run_async(lambda: with_http_session(server.url, tools, token=token))
        with pytest.raises(BaseException):  # noqa: B017 - the SDK surfaces the 401 as an exception group
            run_async(lambda: with_http_session(server.url, tools, token="wrong"))


# ---- properties against the OpenAPI document ------------------------------------------------------------


def _spec(server: Companion) -> dict[str, Any]:
    return httpx.get(server.url + "/openapi.json").json()


def _param_strategy(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    options = schema.get("anyOf", [schema])
    kinds = {o.get("type") for o in options}
    weird = st.text(max_size=40) | st.sampled_from(["../x", "%2e%2e/", "-1", "1e9", "", " ", "\x00"])
    if "integer" in kinds:
        o = next(o for o in options if o.get("type") == "integer")
        lo, hi = o.get("minimum", -5), o.get("maximum", 10**6)
        return st.integers(lo - 3, hi + 3) | weird
    if "number" in kinds:
        return st.floats(-1, 2, allow_nan=False) | weird
    if "string" in kinds:
        vault_words = st.sampled_from(["Notes/Cats.md", "Cats", "Long.md", "Notes", "cats sleep", "Café.md"])
        return vault_words | st.text(max_size=60) | weird
    return weird


def _validate(spec: dict[str, Any], route: str, reply: httpx.Response) -> None:
    responses = spec["paths"][route]["get"]["responses"]
    doc = responses.get(str(reply.status_code))
    assert doc is not None, (
        f"{route} answered {reply.status_code}, which the spec does not list: {reply.text}"
    )
    schema = doc["content"]["application/json"]["schema"]
    jsonschema.validate(reply.json(), {**schema, "components": spec["components"]})


ROUTES = ["/v1/status", "/v1/search", "/v1/similar", "/v1/duplicates", "/v1/notes", "/v1/notes/list"]


@pytest.mark.parametrize("route", ROUTES)
def test_no_input_makes_a_500_and_every_reply_matches_the_spec(server: Companion, route: str) -> None:
    spec = _spec(server)
    params = spec["paths"][route]["get"].get("parameters", [])
    strategy = st.fixed_dictionaries(
        {},
        optional={p["name"]: _param_strategy(p["schema"]) for p in params},
    )
    with httpx.Client(base_url=server.url, timeout=30) as client:

        @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(strategy)
        def check(query: dict[str, Any]) -> None:
            reply = client.get(route, params=query)
            assert reply.status_code < 500, (query, reply.text)
            _validate(spec, route, reply)
            assert SECRET not in reply.text

        check()


def test_the_schema_declares_the_limits_that_make_400s(server: Companion) -> None:
    """What the schema allows is accepted: a parameter a route refuses with a 400 (control
    characters, a cursor of another alphabet) is refused by the schema too, with the reason; what no
    schema can say (an offset past the end, a blank query) its description says."""
    spec = _spec(server)

    def param(route: str, name: str) -> dict[str, Any]:
        return dict(next(p for p in spec["paths"][route]["get"]["parameters"] if p["name"] == name))

    def pattern(route: str, name: str) -> str:
        schema = param(route, name)["schema"]
        return str(next(o["pattern"] for o in schema.get("anyOf", [schema]) if "pattern" in o))

    checks = {
        ("/v1/notes", "path"): ("Notes/Cats.md", "Notes/\x8dCats.md"),
        ("/v1/similar", "path"): ("Notes/Cats.md", "Notes/\u202eCats.md"),
        ("/v1/notes/list", "folder"): ("Notes", "No\x07tes"),
        ("/v1/notes/list", "cursor"): ("Tm90ZXM", "not a cursor!"),
    }
    for (route, name), (good, bad) in checks.items():
        assert re.search(pattern(route, name), good), (route, name)
        assert not re.search(pattern(route, name), bad), (route, name)
        reply = get(server, route, **{name: bad})
        assert reply.status_code == 400, (route, name, reply.text)
    assert "past the end is a 400" in param("/v1/notes", "offset")["description"]
    assert "whitespace is a 400" in param("/v1/search", "q")["description"]  # empty_query, its own code
    control = get(server, "/v1/notes", path="Notes/\x8dCats.md").json()["error"]["message"]
    assert "control character U+008D" in control


@pytest.mark.parametrize("route", ["/v1/notes", "/v1/similar"])
def test_a_name_longer_than_the_file_system_allows_is_no_note(server: Companion, route: str) -> None:
    reply = get(server, route, path="0" * 300 + ".md")
    assert reply.status_code == 404, reply.text
    assert reply.json()["error"]["code"] == "note_not_found"


def test_openapi_lists_every_route_and_the_error_shape(server: Companion) -> None:
    spec = _spec(server)
    assert set(ROUTES) <= set(spec["paths"])
    assert "ErrorBody" in spec["components"]["schemas"]
    for route in ROUTES:
        assert "422" not in spec["paths"][route]["get"]["responses"]
    assert len(NOTES) > 0


def test_a_port_in_use_is_a_clear_error() -> None:
    import socket

    from vaultlens.server.serve import bind

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        with pytest.raises(ConfigError, match="in use"):
            bind("127.0.0.1", held.getsockname()[1])
    with pytest.raises(ConfigError, match="Cannot serve"):
        bind("no-such-host.invalid", 0)


def test_a_query_past_max_query_chars_is_refused_not_cut(tmp_path: Path) -> None:
    """A program has no terminal to be told its query was cut: the API and MCP refuse it, naming the limit."""
    vault = trap_vault(tmp_path / "v")
    overrides = {"embedding.provider": "fake", "search.max_query_chars": "20"}
    long = "cats sleep in the sun all afternoon"  # 35 characters
    with running_server(vault, tmp_path / "home", watch=False, overrides=overrides) as companion:
        searched = httpx.get(companion.url + "/v1/search", params={"q": long})
        asked = httpx.post(companion.url + "/v1/ask", json={"question": long, "extractive": True})
        short = httpx.get(companion.url + "/v1/search", params={"q": "cats sleep"})

        async def tool(session: Any) -> Any:
            return await session.call_tool("search_notes", {"query": long})

        mcp = run_async(lambda: with_http_session(companion.url, tool))
    for reply in (searched, asked):
        assert reply.status_code == 400, reply.text
        error = reply.json()["error"]
        assert error["code"] == "invalid_input" and "search.max_query_chars" in error["message"]
    assert mcp.isError and "search.max_query_chars" in mcp.content[0].text
    assert short.status_code == 200
