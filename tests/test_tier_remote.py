"""The provider form of the quality tier (``embedding.tier = "ollama:MODEL"`` / ``"openai-compatible:MODEL"``),
against the scripted embedding server on loopback (the stand-in for an Ollama or OpenAI-compatible
server) with the real bundled model as the main one: the fill and the search blend, the model's
prefixes on the exact texts sent, consent before the first send, and a slow or absent server that
never breaks search or an index run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from mcp import ClientSession

import vaultlens as services
from loopback_proxy import remote_url
from scripted_server import ScriptedEmbeddingServer, Step, expected_unit
from server_support import payload, run_async, running_server, with_http_session
from vaultlens.config.consent import consent_file
from vaultlens.embedding.tiers.registry import make_tier
from vaultlens.embedding.tiers.remote import RemoteTier, declared_prefixes
from vaultlens.errors import ConfigError, ConsentRequired
from vaultlens.index.indexing.indexer import Indexer
from vaultlens.server import runtime
from vaultlens.services.app import App
from vaultlens.services.finding.search import rank_notes
from vl_support import run_cli, settings, write_vault

NOTES = {
    "Bread.md": "# Sourdough\n\nFeed the starter every morning with rye flour and water.\n",
    "Trains.md": "# Night trains\n\nThe night train to Vienna leaves at nine from platform four.\n",
    "Garden.md": "# Tomatoes\n\nWater tomato plants deeply at the base twice a week.\n\n## Pruning\n\n"
    "Pinch the suckers between the stem and a branch.\n",
}
QUERY = "when does the train leave"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", NOTES)


def tier_sets(
    server: ScriptedEmbeddingServer, model: str = "nomic-embed-text", **more: str
) -> dict[str, str]:
    """Settings for an Ollama tier on ``server`` (loopback: this machine, no consent needed)."""
    return {"embedding.tier": f"ollama:{model}", "embedding.tier_endpoint": server.url, **more}


def remote(server: ScriptedEmbeddingServer) -> str:
    # a made-up host name, reached through the tests' loopback proxy: vaultlens treats it as a server
    # elsewhere, the path a real remote endpoint takes (as in test_consent.py)
    return remote_url(server.url)


def sent(server: ScriptedEmbeddingServer, since: int = 0) -> list[str]:
    """Every text the server received, in order, from request ``since`` on."""
    return [t for r in server.requests[since:] for t in r.body["input"]]


def plain(app: App, query: str) -> list[tuple[str, float]]:
    """The bundled model's ranking alone (the tier left out)."""
    with app.reading() as store:
        hits = rank_notes(store, app.provider(), query, app.settings.search, 10, 3)
    return [(h.path, h.score) for h in hits]


def test_index_fills_the_tier_with_prefixed_passages_and_search_blends_it(vault: Path) -> None:
    with ScriptedEmbeddingServer(dims=8) as server:
        app = App.open(vault, tier_sets(server))
        stats = services.index(app)
        passages = sent(server)
        assert {r.path for r in server.requests} == {"/api/embed"}
        assert {r.body["model"] for r in server.requests} == {"nomic-embed-text"}
        # nomic-embed-text's declared document prefix on every passage, each chunk text once
        assert passages and all(t.startswith("search_document: ") for t in passages)
        assert len(set(passages)) == len(passages) == stats.tier_embedded
        status = services.status(app).tier
        assert status is not None and (status.covered, status.total) == (len(passages), len(passages))
        assert status.behind is False and status.last_error is None
        assert status.model is not None and status.model.startswith("ollama:nomic-embed-text")
        with app.reading() as store:
            _, stored = store.matrix(tier=True)
        # what is stored is exactly the server's vectors of the prefixed texts
        assert np.allclose(np.sort(stored @ expected_unit(passages, 8).T, axis=1)[:, -1], 1.0, atol=1e-5)

        before = len(server.requests)
        hits = services.search(app, QUERY)
        assert sent(server, before) == ["search_query: " + QUERY]  # one request, the query prefix
        assert hits.notices == ()
        assert [(h.path, h.score) for h in hits] != plain(app, QUERY)  # the tier's scores were blended in
        assert services.index(app).tier_embedded == 0  # nothing new: nothing sent again
        app.close()


def test_prefixes_come_from_the_model_table_or_the_settings() -> None:
    assert declared_prefixes("bge-m3:latest").query == "" and declared_prefixes("bge-m3").passage == ""
    e5 = declared_prefixes("intfloat/multilingual-e5-large")
    assert (e5.query, e5.passage) == ("query: ", "passage: ")
    assert declared_prefixes("some-model-nobody-lists").query == ""
    with ScriptedEmbeddingServer(dims=8) as server:
        own = make_tier(
            settings(
                **tier_sets(
                    server,
                    "nomic-embed-text",
                    **{"embedding.tier_query_prefix": "", "embedding.tier_passage_prefix": "doc: "},
                )
            ).embedding
        )
        assert isinstance(own, RemoteTier)
        own.embed(["a passage"])
        own.embed_queries(["a query"])
        assert sent(server) == ["doc: a passage", "a query"]
        # the passage prefix is part of the space: vectors of another prefix are not mixed in
        assert "doc: " in own.space.model and own.space.dimensions == 8
        own.close()


def test_openai_compatible_tier_sends_its_key_and_e5_prefixes(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIER_KEY", "tier-secret")
    with ScriptedEmbeddingServer(dims=8) as server:
        sets = {
            "embedding.tier": "openai-compatible:multilingual-e5-large",
            "embedding.tier_endpoint": server.url,
            "embedding.tier_api_key_env": "TIER_KEY",
        }
        app = App.open(vault, sets)
        services.index(app)
        services.search(app, QUERY)
        assert {r.path for r in server.requests} == {"/embeddings"}
        assert {r.headers["authorization"] for r in server.requests} == {"Bearer tier-secret"}
        assert all(t.startswith("passage: ") for t in sent(server)[:-1])
        assert sent(server)[-1] == "query: " + QUERY
        app.close()
        monkeypatch.delenv("TIER_KEY")
        with pytest.raises(ConfigError, match="no API key") as info:
            make_tier(settings(**{**sets, "embedding.tier_endpoint": remote(server)}).embedding)
        assert "TIER_KEY" in (info.value.hint or "")


def test_nothing_goes_to_a_remote_tier_before_consent(vault: Path) -> None:
    with ScriptedEmbeddingServer(dims=8) as server:
        sets = {"embedding.tier": "ollama:bge-m3", "embedding.tier_endpoint": remote(server)}
        args = ["--vault", str(vault), *(x for k, v in sets.items() for x in ("--set", f"{k}={v}"))]
        refused = run_cli(["index", *args])
        assert refused.exit_code == ConsentRequired.exit_code, refused.output
        assert "your search queries" in refused.stderr and "bge-m3" in refused.stderr
        assert "Traceback" not in refused.output
        assert server.connections == 0  # not one connection, not even for the main model's run

        app = App.open(vault, sets)
        with pytest.raises(ConsentRequired) as info:
            services.index(app)
        assert info.value.destination == f"ollama model bge-m3 at {remote(server)}"
        assert server.connections == 0
        providers = {p.role: p for p in services.providers(app)}
        tier_row = providers["embedding tier"]
        assert tier_row.remote is True and tier_row.endpoint == remote(server)
        assert tier_row.consent.startswith("not yet asked")

        services.index(app, consent=True)  # what the CLI does after the user said yes
        assert sent(server) and all(r.body["model"] == "bge-m3" for r in server.requests)
        assert {p.role: p for p in services.providers(app)}["embedding tier"].consent == "granted"
        before = len(server.requests)
        assert services.search(app, QUERY).notices == ()  # the remembered yes covers queries
        assert sent(server, before) == [QUERY]  # bge-m3 takes no prefix

        consent_file().unlink()  # the user takes the yes back
        before = len(server.requests)
        hits = services.search(app, QUERY)
        assert len(server.requests) == before  # the query was not sent
        assert (
            len(hits.notices) == 1 and "left out" in hits.notices[0] and "search queries" in hits.notices[0]
        )
        assert [(h.path, h.score) for h in hits] == plain(app, QUERY)
        app.close()


def test_a_remote_provider_and_a_remote_tier_are_one_question(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ScriptedEmbeddingServer(dims=8) as main, ScriptedEmbeddingServer(dims=8) as tier:
        app = App.open(
            vault,
            {
                "embedding.provider": "openai",
                "embedding.model": "emb-test",
                "embedding.endpoint": remote(main),
                "embedding.tier": "ollama:bge-m3",
                "embedding.tier_endpoint": remote(tier),
            },
        )
        with pytest.raises(ConsentRequired) as info:
            services.index(app)
        asked = info.value.proposal
        assert "emb-test" in asked.destination
        # a yes to this question also sends to the tier's server: the question says so
        assert any(f"ollama model bge-m3 at {remote(tier)}" in r for r in asked.remarks)
        assert main.connections == tier.connections == 0
        services.index(app, consent=True)
        assert main.requests and tier.requests
        services.index(app)  # both remembered
        app.close()


def test_a_slow_tier_server_never_breaks_index_or_search(vault: Path) -> None:
    with ScriptedEmbeddingServer(dims=8) as server:
        sets = tier_sets(
            server, "bge-m3", **{"embedding.tier_timeout_s": "0.3", "embedding.max_retries": "1"}
        )
        app = App.open(vault, sets)
        services.index(app)  # the server answers: the tier is full
        (vault / "Trains.md").write_text(NOTES["Trains.md"] + "\n## Sleeper\n\nBook a berth early.\n")
        server.script = [Step(delay=1.0)] * 3  # past the 0.3 s timeout: the fill's try and its retry
        stats = services.index(app)
        assert stats.complete and stats.tier_error and "did not answer in time" in stats.tier_error
        status = services.status(app)
        assert status.last_run is not None and status.last_run.status == "ok"
        tier = status.tier
        assert tier is not None and tier.behind and tier.covered < tier.total
        assert tier.last_error == stats.tier_error

        before = len(server.requests)
        hits = services.search(app, QUERY)  # the query times out once, without a retry
        assert len(server.requests) == before + 1
        assert len(hits.notices) == 1 and "did not answer in time" in hits.notices[0]
        assert [(h.path, h.score) for h in hits] == plain(app, QUERY)

        shown = run_cli(
            ["status", "--vault", str(vault), *(x for k, v in sets.items() for x in ("--set", f"{k}={v}"))]
        )
        assert "behind" in shown.stdout and "did not answer in time" in shown.stdout
        app.close()


def test_a_tier_server_that_is_down_then_back_resumes_the_missing_texts(vault: Path) -> None:
    server = ScriptedEmbeddingServer(dims=8)
    with server:
        app = App.open(vault, tier_sets(server, "bge-m3", **{"embedding.max_retries": "0"}))
        first = services.index(app)
    port = server.httpd.server_address[1]
    added = {"Ferry.md": "# Ferry\n\nThe ferry crosses the lake every hour in summer.\n",
             "Bikes.md": "# Bikes\n\nOil the chain after riding in the rain.\n"}  # fmt: skip
    for name, text in added.items():
        (vault / name).write_text(text, encoding="utf-8")

    down = services.index(app)  # nothing listens on the port now
    assert down.complete and down.tier_embedded == 0 and "Cannot reach" in down.tier_error
    tier = services.status(app).tier
    assert tier is not None and tier.behind and tier.total - tier.covered == len(added)
    result = run_cli(["index", "--vault", str(vault), "--set", "embedding.tier=ollama:bge-m3",
                      "--set", f"embedding.tier_endpoint={server.url}", "--set", "embedding.max_retries=0"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "quality tier stopped" in result.stderr and "resumes" in result.stderr
    hits = services.search(app, QUERY)
    assert hits and "Cannot reach" in hits.notices[0]

    with ScriptedEmbeddingServer(dims=8, port=port) as back:  # the same server, back up
        resumed = services.index(app)
        assert resumed.tier_embedded == len(added) and resumed.tier_error == ""
        assert len(sent(back)) == len(added)  # only the texts still missing
        assert all(sum(title in t for t in sent(back)) == 1 for title in ("Ferry", "Bikes"))
        tier = services.status(app).tier
        assert tier is not None and not tier.behind and tier.last_error is None
        assert first.tier_embedded + len(added) == tier.covered
    app.close()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ollama:", "ollama:<model>"),
        ("ollama:  ", "ollama:<model>"),
        ("llamafile:bge-m3", "no tier provider of that kind"),
    ],
)
def test_a_tier_form_it_cannot_use_is_a_clear_config_error(vault: Path, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        make_tier(settings(**{"embedding.tier": value}).embedding)
    assert info.value.hint
    result = run_cli(["index", "--vault", str(vault), "--set", f"embedding.tier={value}"])
    assert result.exit_code == ConfigError.exit_code and message in result.stderr
    assert "Traceback" not in result.output
    assert not json.loads(run_cli(["status", "--json", "--vault", str(vault)]).stdout)["indexed"]


def test_watch_flushes_do_not_wait_for_a_failed_tier_server_again(vault: Path) -> None:
    with ScriptedEmbeddingServer(dims=8) as server:
        app = App.open(vault, tier_sets(server, "bge-m3", **{"embedding.max_retries": "1"}))
        services.index(app)
        server.script = [Step(status=503)] * 10  # the server is failing from now on
        with app.writing(), app.live.lease() as store:
            indexer = Indexer(app.vault, store, app.provider(), app.settings, tier=app.tier)
            for n, name in enumerate(("Bread.md", "Trains.md")):
                (vault / name).write_text(NOTES[name] + f"\nEdit {n}.\n", encoding="utf-8")
                before = len(server.requests)
                stats = indexer.sync([name])
                assert stats.chunks_embedded == 1 and "HTTP 503" in stats.tier_error
                # the first flush tries (and retries once); the next one within TIER_PAUSE_S does not
                assert len(server.requests) - before == (2 if n == 0 else 0)
            assert store.tier_coverage()[0] < store.tier_coverage()[1]
        app.close()


def test_a_server_s_search_carries_the_notice_when_the_tier_is_left_out(
    vault: Path, isolated_env: Path
) -> None:
    server = ScriptedEmbeddingServer(dims=8)
    with server:
        sets = tier_sets(server, "bge-m3", **{"embedding.max_retries": "0"})
        services.index(App.open(vault, sets))
    with running_server(vault, isolated_env, watch=False, overrides=sets) as companion:
        reply = httpx.get(companion.url + "/v1/search", params={"q": QUERY}, timeout=30)
        assert (
            reply.status_code == 200 and reply.json()[0]["path"] == "Trains.md"
        )  # the body: hits, as always
        notices = json.loads(reply.headers["Vaultlens-Notices"])
        assert len(notices) == 1 and "left out" in notices[0] and "Cannot reach" in notices[0]
        via = runtime.search_via_server(companion.app, QUERY, None, None)  # what `vaultlens search` uses
        assert via is not None and via.notices == tuple(notices)
        page = httpx.get(companion.url + "/ui/api/search", params={"q": QUERY}, timeout=30)  # the web page's
        assert page.json()[0]["path"] == "Trains.md"
        assert json.loads(page.headers["Vaultlens-Notices"]) == notices

        async def use(session: ClientSession) -> dict[str, Any]:
            return payload(await session.call_tool("search_notes", {"query": QUERY}))

        found = run_async(lambda: with_http_session(companion.url, use))["data"]
        assert found["results"] and found["notices"] == notices


def test_another_model_on_the_server_starts_the_tier_over(vault: Path) -> None:
    with ScriptedEmbeddingServer(dims=8) as server:
        first = services.index(App.open(vault, tier_sets(server, "bge-m3")))
        other = App.open(vault, tier_sets(server, "nomic-embed-text"))
        with other.reading() as store:
            assert other.search_tier(store) is None  # bge-m3's vectors are never blended with another model's
        before = len(server.requests)
        again = services.index(other)
        assert again.tier_embedded == first.tier_embedded  # every text again, in the new model
        assert {r.body["model"] for r in server.requests[before:]} == {"nomic-embed-text"}
        tier = services.status(other).tier
        assert tier is not None and tier.covered == tier.total and "nomic-embed-text" in (tier.model or "")
        other.close()
