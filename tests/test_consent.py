"""Note text leaves the machine only after the user saw where it goes and agreed (once per destination)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loopback_proxy import REMOTE_HOST, LoopbackProxy, remote_url
from scripted_server import ScriptedEmbeddingServer
from vaultlens.config.consent import consent_file, grant, granted, require_consent
from vaultlens.config.paths import home
from vaultlens.errors import ConfigError, ConsentRequired, FileSystemError
from vl_support import run_cli, write_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(
        tmp_path / "vault", {"a.md": "# Bread\n\nFeed the starter every morning with rye flour.\n"}
    )


def remote_args(vault: Path, server: ScriptedEmbeddingServer) -> list[str]:
    # a made-up host name, reached through the tests' loopback proxy: vaultlens treats it as a remote
    # endpoint, the same path a real API endpoint takes
    endpoint = remote_url(server.url)
    return ["--vault", str(vault), "--set", "embedding.provider=openai", "--set", "embedding.model=emb-test",
            "--set", f"embedding.endpoint={endpoint}"]  # fmt: skip


def test_remote_provider_needs_agreement_and_it_is_remembered(
    vault: Path, monkeypatch: pytest.MonkeyPatch, loopback_proxy: LoopbackProxy
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ScriptedEmbeddingServer(dims=8) as server:
        refused = run_cli(["index", *remote_args(vault, server)])
        assert refused.exit_code != 0
        assert "will send the text of your notes" in refused.stderr and "emb-test" in refused.stderr
        assert "--yes" in refused.stderr and "Traceback" not in refused.output
        assert server.requests == []  # nothing left the machine

        agreed = run_cli(["index", "--yes", *remote_args(vault, server)])
        assert agreed.exit_code == 0, agreed.output
        assert server.requests, "the agreed run embeds through the remote endpoint"
        assert any(REMOTE_HOST in r for r in loopback_proxy.requests), (
            "by its made-up name, through the proxy"
        )
        assert any("emb-test" in d for d in json.loads((home() / "consent.json").read_text()))

        (vault / "b.md").write_text("# Trains\n\nThe night train leaves at nine.\n", encoding="utf-8")
        again = run_cli(["index", *remote_args(vault, server)])
        assert again.exit_code == 0, again.output  # remembered: no second question
        assert "will send" not in again.stderr


def test_local_provider_never_asks(vault: Path, use_provider: object) -> None:
    result = run_cli(["index", "--vault", str(vault)])
    assert result.exit_code == 0, result.output
    assert "will send" not in result.stderr
    assert not (home() / "consent.json").exists()


# ---- the consent file and the policy function ---------------------------------------------------

DEST = "openai model emb-test at https://api.example.invalid/v1"
WHAT = "the text of your notes"


def test_require_consent_refuses_then_remembers_a_grant() -> None:
    with pytest.raises(ConsentRequired) as info:
        require_consent(DEST, WHAT)
    assert (info.value.destination, info.value.what) == (DEST, WHAT)
    assert info.value.http_status == 403 and info.value.exit_code == 7
    assert not consent_file().exists()  # asking writes nothing

    require_consent(DEST, WHAT, granted_now=True)
    require_consent(DEST, WHAT)  # remembered
    assert granted(DEST)
    with pytest.raises(ConsentRequired):
        require_consent(DEST.replace("emb-test", "other-model"), WHAT)  # another model asks again


def test_a_grant_for_one_call_only_is_neither_stored_nor_borrowed() -> None:
    require_consent(DEST, WHAT, granted_now=True, remember=False)  # a server's request with its yes
    assert not consent_file().exists()
    grant(DEST)  # a yes given in the terminal
    with pytest.raises(ConsentRequired):
        require_consent(DEST, WHAT, remember=False)
    require_consent(DEST, WHAT)  # still counts for the terminal


def test_the_default_advice_names_no_provider_setting() -> None:
    """Each check names its own way out (embedding or LLM); a refusal built without one must not
    send an LLM user to the embedding setting."""
    assert "provider" not in (ConsentRequired("LLM openai model m at https://x", WHAT).hint or "")


def test_grant_writes_a_private_json_list_atomically() -> None:
    grant(DEST)
    grant(DEST)  # once is enough
    grant("ollama model m at http://10.0.0.2:11434")
    path = consent_file()
    assert json.loads(path.read_text(encoding="utf-8")) == [DEST, "ollama model m at http://10.0.0.2:11434"]
    assert path.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["consent.json"]  # no temporary file left
    assert json.loads(consent_file().read_text(encoding="utf-8")) == [
        DEST,
        "ollama model m at http://10.0.0.2:11434",
    ]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('["openai model a at https://x"', "is not valid JSON"),
        ("", "is not valid JSON"),
        ('{"openai model a at https://x": true}', "is not a list of destinations (found dict)"),
        ('["ok", 3]', "is not a list of destinations (found list with non-string items)"),
        ('"openai"', "is not a list of destinations (found str)"),
    ],
)
def test_a_corrupt_consent_file_is_refused_and_never_overwritten(content: str, problem: str) -> None:
    path = consent_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")
    for call in (lambda: granted(DEST), lambda: grant(DEST), lambda: require_consent(DEST, WHAT, True)):
        with pytest.raises(ConfigError) as info:
            call()
        assert str(path) in info.value.message and problem in info.value.message
        assert "delete it" in (info.value.hint or "") and "Fix it" in (info.value.hint or "")
    with pytest.raises(ConfigError):
        require_consent(DEST, WHAT)  # not a ConsentRequired: the user must fix the file first
    assert path.read_text(encoding="utf-8") == content  # the user's earlier answers are untouched


# ---- evaluation sends nothing before consent ----------------------------------------------------


def test_eval_queries_sends_nothing_to_a_remote_provider_without_consent(
    tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    queries = tmp_path / "eval" / "queries.jsonl"
    queries.parent.mkdir()
    queries.write_text(
        json.dumps({"vault": vault.name, "query": "rye starter", "relevant": ["a.md"], "lang": "en"}) + "\n",
        encoding="utf-8",
    )
    with ScriptedEmbeddingServer(dims=8) as server:
        sets = remote_args(vault, server)[2:]  # the --set pairs only: eval takes no --vault
        refused = run_cli(["eval", "queries", str(queries), *sets])
        assert refused.exit_code == ConsentRequired.exit_code, refused.output
        assert "will send the text of your notes" in refused.stderr and "Traceback" not in refused.output
        assert server.connections == 0 and server.requests == []  # not one connection

        agreed = run_cli(["eval", "queries", str(queries), "--yes", *sets])
        assert agreed.exit_code == 0, agreed.output
        assert server.connections > 0 and server.requests


def test_eval_beir_sends_nothing_to_a_remote_provider_without_consent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    beir = tmp_path / "tiny"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "Bread", "text": "Feed the rye starter."}) + "\n", encoding="utf-8"
    )
    (beir / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "rye starter"}) + "\n", encoding="utf-8"
    )
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", encoding="utf-8")
    with ScriptedEmbeddingServer(dims=8) as server:
        sets = remote_args(tmp_path, server)[2:]
        refused = run_cli(["eval", "beir", str(beir), *sets])
        assert refused.exit_code == ConsentRequired.exit_code, refused.output
        assert server.connections == 0 and server.requests == []
        agreed = run_cli(["eval", "beir", str(beir), "--yes", *sets])
        assert agreed.exit_code == 0, agreed.output
        assert server.connections > 0


def test_services_refuse_without_a_grant_and_a_server_can_pass_one(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vaultlens as services

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with ScriptedEmbeddingServer(dims=8) as server:
        endpoint = remote_url(server.url)
        overrides = {
            "embedding.provider": "openai",
            "embedding.model": "emb-test",
            "embedding.endpoint": endpoint,
        }
        app = services.App.open(vault, overrides)
        with pytest.raises(ConsentRequired) as info:
            services.index(app)
        assert "emb-test" in info.value.destination and info.value.to_dict()["code"] == "consent_required"
        assert server.connections == 0
        services.index(app, consent=True)  # what an API or MCP server does after asking its user
        assert server.requests
        services.index(app)  # remembered for this destination
        app.close()


def test_a_broken_obsidian_ignore_file_stops_remote_indexing(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["private/"', encoding="utf-8")
    with ScriptedEmbeddingServer(dims=8) as server:
        result = run_cli(["index", "--yes", *remote_args(vault, server)])
        assert result.exit_code != 0 and "app.json" in result.stderr
        assert "Traceback" not in result.output
        assert server.connections == 0
    status = run_cli(["status", "--vault", str(vault)])
    assert "app.json" in status.output + status.stderr
    local = run_cli(["index", "--vault", str(vault)])  # local embedding is not stopped, but reported
    assert local.exit_code == 0
    doctor = run_cli(["doctor", "--vault", str(vault)])
    assert doctor.exit_code != 0 and "app.json" in doctor.stderr


def test_granting_into_a_bad_home_names_vaultlens_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "home-is-a-file"
    target.write_text("x")
    monkeypatch.setenv("VAULTLENS_HOME", str(target))
    with pytest.raises(FileSystemError, match=r"^VAULTLENS_HOME \(.*\) is a file, not a folder\."):
        granted("openai model m at https://api.example/v1")
    with pytest.raises(FileSystemError) as info:
        grant("openai model m at https://api.example/v1")
    assert info.value.message == f"VAULTLENS_HOME ({target}) is a file, not a folder."
    assert "Set VAULTLENS_HOME to a writable folder" in (info.value.hint or "")
