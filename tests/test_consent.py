"""Note text leaves the machine only after the user saw where it goes and agreed (once per destination)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripted_server import ScriptedEmbeddingServer
from vaultlens.config.paths import home
from vl_support import run_cli, write_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(
        tmp_path / "vault", {"a.md": "# Bread\n\nFeed the starter every morning with rye flour.\n"}
    )


def remote_args(vault: Path, server: ScriptedEmbeddingServer) -> list[str]:
    # 0.0.0.0 reaches the loopback server on Linux but is not a loopback name, so vaultlens treats
    # it as a remote endpoint: the same path a real API endpoint takes
    endpoint = server.url.replace("127.0.0.1", "0.0.0.0")
    return ["--vault", str(vault), "--set", "embedding.provider=openai", "--set", "embedding.model=emb-test",
            "--set", f"embedding.endpoint={endpoint}"]  # fmt: skip


def test_remote_provider_needs_agreement_and_it_is_remembered(
    vault: Path, monkeypatch: pytest.MonkeyPatch
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
