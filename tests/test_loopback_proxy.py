"""The tests' own network rule: traffic goes to 127.0.0.0/8 only; a remote destination is a made-up host
reached through the loopback proxy (loopback_proxy.py), never another address."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from loopback_proxy import REMOTE_HOST, LoopbackProxy, remote_url
from scripted_server import ScriptedEmbeddingServer

TESTS = Path(__file__).resolve().parent


def test_a_made_up_host_reaches_the_loopback_server_through_the_proxy(loopback_proxy: LoopbackProxy) -> None:
    with ScriptedEmbeddingServer(dims=4) as server:
        url = remote_url(server.url)
        assert url.startswith(f"http://{REMOTE_HOST}:")
        with httpx.Client(timeout=10) as client:  # the environment's proxy, as vaultlens's clients take it
            for _ in range(2):  # a second request on the same client needs a new connection, and gets one
                reply = client.post(url + "/api/embed", json={"model": "m", "input": ["a", "b"]})
                assert reply.status_code == 200 and len(reply.json()["embeddings"]) == 2
    assert [r.path for r in server.requests] == ["/api/embed", "/api/embed"]
    assert f"POST {url}/api/embed" in loopback_proxy.requests


@pytest.mark.parametrize(
    "url", ["http://example.com/", "http://10.1.2.3:80/", "https://api.openai.com/v1/models"]
)
def test_any_other_destination_is_refused_without_leaving_the_machine(url: str) -> None:
    with httpx.Client(timeout=10) as client:
        try:
            status = client.get(url).status_code
        except httpx.ProxyError:  # HTTPS: the CONNECT tunnel is refused
            status = 502
    assert status == 502


def test_no_test_disguises_a_loopback_server_as_another_address() -> None:
    """0.0.0.0 (or any address) in place of 127.0.0.1 made a loopback model look remote; a made-up
    host through the proxy does that without naming an address beyond loopback."""
    disguise = re.compile(r"""replace\(\s*["']127\.0\.0\.1["']\s*,\s*["'](?!127\.)[0-9.:]+["']""")
    found = [p.name for p in sorted(TESTS.glob("*.py")) if disguise.search(p.read_text(encoding="utf-8"))]
    assert found == []
