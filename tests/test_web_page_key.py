"""The page key: only a browser opened at the address `vaultlens serve` printed (or `vaultlens ui`
opened) may write through the page. Another local program (another OS user's too) can read the
page over loopback, and the page token in its HTML, but without the key's cookie it cannot write."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server_support import running_server
from vaultlens.config import pairing
from vaultlens.server import runtime
from vaultlens.server.serve import Companion
from vaultlens.web.pairing import HEADER
from vl_support import snapshot, write_vault

GARDEN = "".join(f"## Part {i}\n\nParagraph {i} about gardens, tomatoes number {i}.\n\n" for i in range(6))
NOTES = {
    "Plan.md": "# Plan\n\n" + GARDEN,
    "Plan extended.md": "# Plan extended\n\n" + GARDEN + "## Extra\n\nMore.\n",
}
PAIR = {"a": "Plan.md", "b": "Plan extended.md"}  # a near-duplicate pair: dismissing it is a write
META = re.compile(r'<meta name="vaultlens-csrf" content="([^"]*)">')


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Companion]:
    vault = write_vault(tmp_path / "vault", NOTES)
    with running_server(vault, tmp_path / "home", watch=False) as companion:
        yield companion


def dismissed(server: Companion) -> int:
    found = re.search(r"Dismissed pairs \((\d+)\)", httpx.get(server.url + "/duplicates", timeout=30).text)
    return int(found.group(1)) if found else 0


def test_a_local_program_that_reads_the_page_cannot_write_through_it(server: Companion) -> None:
    before = snapshot(server.app.vault)
    with httpx.Client(base_url=server.url, timeout=30) as client:  # no key, no cookie, no Origin
        shell = client.get("/")
        assert shell.status_code == 200 and 'id="q"' in shell.text  # reading stays open
        found = META.search(shell.text)
        token = found.group(1) if found else ""
        for path, body in [("/ui/api/dismiss", PAIR), ("/ui/api/apply", {"op_id": "x"})]:
            reply = client.post(path, json=body, headers={"X-Vaultlens-CSRF": token})
            assert reply.status_code == 403, (path, reply.text)
            error = reply.json()["error"]
            assert error["code"] == "page_key_required", error
            assert "vaultlens serve" in error["hint"] and "vaultlens ui" in error["hint"], error
    assert snapshot(server.app.vault) == before and dismissed(server) == 0


def test_the_printed_address_sets_the_cookie_and_then_the_page_writes(server: Companion) -> None:
    assert re.fullmatch(re.escape(server.url) + r"/\?key=[A-Za-z0-9_-]{43}", server.page_url)
    with httpx.Client(timeout=30) as client:
        first = client.get(server.page_url + "&q=tomatoes")
        assert first.status_code == 303 and first.headers["location"] == "/?q=tomatoes"  # key out of the URL
        cookie = first.headers["set-cookie"]
        for part in ("HttpOnly", "SameSite=Strict", "Path=/"):
            assert part in cookie, cookie
        shell = client.get(server.url + "/")
        found = META.search(shell.text)
        assert found and found.group(1), "no page token for the keyed browser"
        done = client.post(
            server.url + "/ui/api/dismiss", json=PAIR, headers={"X-Vaultlens-CSRF": found.group(1)}
        )
        assert done.status_code == 200, done.text
    assert dismissed(server) == 1


def test_a_wrong_key_gets_a_page_saying_so_and_no_cookie(server: Companion) -> None:
    with httpx.Client(timeout=30) as client:
        wrong = client.get(server.url + "/", params={"key": "x" * 43}, headers={"Accept": "text/html"})
        assert wrong.status_code == 403 and "set-cookie" not in wrong.headers
        assert "key" in wrong.text and "vaultlens serve" in wrong.text
        assert not client.cookies
        shell = client.get(server.url + "/")
        assert 'content=""' in shell.text and "read-only" in shell.text  # readable, no token, the hint


def test_the_paired_plugin_writes_without_the_cookie(server: Companion) -> None:
    token = pairing.issue(server.app.vault)
    reply = httpx.post(server.url + "/ui/api/dismiss", json=PAIR, headers={HEADER: token}, timeout=30)
    assert reply.status_code == 200, reply.text
    assert dismissed(server) == 1


def test_the_runtime_record_keeps_the_keyed_address_for_its_user_only(server: Companion) -> None:
    info = runtime.record(server.app, os.getpid())
    assert info is not None and info.page_url == server.page_url
    mode = runtime.record_file(server.app, info.pid).stat().st_mode
    assert stat.S_IMODE(mode) == 0o600, oct(mode)
