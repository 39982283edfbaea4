"""Config layers (defaults < user file < vault file < env < --set), origins, and clear errors."""

from __future__ import annotations

import json
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

from vaultlens.config import paths
from vaultlens.config.settings import GROUPS, Settings, as_rows, load_settings
from vaultlens.embedding.registry import make_provider
from vaultlens.errors import ConfigError
from vaultlens.services.app import App
from vl_support import VAULTLENS_BIN, cli_env, run_cli, write_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", {"Note.md": "# Note\n"})


def user_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_and_their_origin(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the suite's own setting (conftest) removed: the real default here
    monkeypatch.delenv("VAULTLENS_EMBEDDING__TIER")
    loaded = load_settings(vault)
    assert loaded.settings == Settings()
    assert loaded.settings.embedding.batch_size == 64
    assert loaded.settings.embedding.tier == "auto"
    assert loaded.settings.index.chunk_target == 1200
    assert (loaded.settings.search.limit, loaded.settings.search.sections) == (10, 3)
    rows = as_rows(loaded)
    assert len(rows) == sum(len(fields(cls)) for cls in GROUPS.values())
    assert {origin for _, _, origin in rows} == {"default"}


def test_each_layer_overrides_the_one_below(vault: Path, isolated_env: Path, monkeypatch) -> None:
    user = user_config(isolated_env, "[embedding]\nbatch_size = 8\n[search]\nlimit = 3\nsections = 2\n")
    (vault / ".vaultlens.toml").write_text("[embedding]\nbatch_size = 16\n[search]\nlimit = 4\n")
    monkeypatch.setenv("VAULTLENS_EMBEDDING__BATCH_SIZE", "32")

    loaded = load_settings(vault, {"embedding.batch_size": "48"})
    assert loaded.settings.embedding.batch_size == 48
    assert loaded.origins["embedding.batch_size"] == "--set"
    assert loaded.settings.search.limit == 4
    assert loaded.origins["search.limit"] == str(vault / ".vaultlens.toml")
    assert loaded.settings.search.sections == 2
    assert loaded.origins["search.sections"] == str(user)
    assert loaded.origins["search.candidates"] == "default"

    loaded = load_settings(vault)
    assert loaded.settings.embedding.batch_size == 32
    assert loaded.origins["embedding.batch_size"] == "env VAULTLENS_EMBEDDING__BATCH_SIZE"

    monkeypatch.delenv("VAULTLENS_EMBEDDING__BATCH_SIZE")
    assert load_settings(vault).settings.embedding.batch_size == 16
    (vault / ".vaultlens.toml").unlink()
    assert load_settings(vault).settings.embedding.batch_size == 8
    user.unlink()
    assert load_settings(vault).settings.embedding.batch_size == 64


def test_env_batch_size_reaches_the_provider(vault: Path, monkeypatch) -> None:
    monkeypatch.setenv("VAULTLENS_EMBEDDING__BATCH_SIZE", "3")
    monkeypatch.setenv("VAULTLENS_EMBEDDING__THREADS", "1")
    app = App.open(vault)
    assert app.settings.embedding.batch_size == 3
    assert app.provider().batch_size == 3
    assert App.open(vault, {"embedding.batch_size": "5"}).provider().batch_size == 5


def test_vaultlens_config_points_at_another_user_file(vault: Path, tmp_path: Path, monkeypatch) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text('[embedding]\nmodel = "custom"\n')
    monkeypatch.setenv("VAULTLENS_CONFIG", str(other))
    loaded = load_settings(vault)
    assert loaded.settings.embedding.model == "custom"
    assert loaded.origins["embedding.model"] == str(other)


def test_env_values_are_coerced_to_the_setting_type(vault: Path, monkeypatch) -> None:
    monkeypatch.setenv("VAULTLENS_EMBEDDING__TIMEOUT_S", "2.5")
    monkeypatch.setenv("VAULTLENS_INDEX__MAX_FILE_MB", "3")
    monkeypatch.setenv("VAULTLENS_EMBEDDING__ENDPOINT", "http://127.0.0.1:9")
    s = load_settings(vault).settings
    assert s.embedding.timeout_s == 2.5
    assert s.index.max_file_mb == 3.0
    assert s.embedding.endpoint == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[embedding]\nbatchsize = 3\n", "Unknown setting 'embedding.batchsize'"),
        ("[nope]\nx = 1\n", "Unknown setting 'nope.x'"),
        ("limit = 3\n", "[limit] must be a table of settings"),
        (
            '[embedding]\nbatch_size = "many"\n',
            "Setting embedding.batch_size must be an int, got 'many' (from ",
        ),
        ("[embedding]\nbatch_size = 2.5\n", "Setting embedding.batch_size must be an int, got 2.5 (from "),
        ("[embedding]\ntimeout_s = true\n", "Setting embedding.timeout_s must be a number, got True (from "),
        ("[embedding]\nmodel = 5\n", "Setting embedding.model must be a string, got 5 (from "),
        ("[search]\nlimit = 0\n", "Setting search.limit must be between 1 and 10000, got 0"),
        (
            "[index]\nchunk_target = 5000\n",
            "Setting index.chunk_max must be between index.chunk_target (5000) and 100000, got 1800",
        ),
        ('[embedding]\nprovider = "Open AI"\n', "embedding.provider must be a provider name"),
        (
            "[embedding]\ntimeout_s = 0\n",
            "Setting embedding.timeout_s must be more than 0 and at most 86400, got 0.0",
        ),
        ("[embedding]\nmax_retries = -1\n", "Setting embedding.max_retries must be between 0 and 10, got -1"),
        ("[embedding\nbatch_size = 3\n", "is not valid TOML"),
    ],
)
def test_bad_vault_config_is_a_clear_config_error(vault: Path, toml: str, message: str) -> None:
    (vault / ".vaultlens.toml").write_text(toml)
    with pytest.raises(ConfigError) as info:
        load_settings(vault)
    assert message in str(info.value)
    assert info.value.exit_code == 2


def test_unknown_key_lists_the_known_ones(vault: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(vault, {"search.limt": "3"})
    assert "Unknown setting 'search.limt' in --set" in info.value.message
    assert "search.limit" in (info.value.hint or "")


def test_unknown_env_setting_is_an_error(vault: Path, monkeypatch) -> None:
    monkeypatch.setenv("VAULTLENS_EMBEDING__MODEL", "x")
    with pytest.raises(
        ConfigError, match="Unknown setting 'embeding.model' in env VAULTLENS_EMBEDING__MODEL"
    ):
        load_settings(vault)


def test_index_lives_outside_the_vault_one_per_vault(tmp_path: Path, isolated_env: Path) -> None:
    a = write_vault(tmp_path / "a" / "Vault", {"x.md": "x"})
    b = write_vault(tmp_path / "b" / "Vault", {"x.md": "x"})
    da, db = paths.index_dir(a), paths.index_dir(b)
    assert da != db
    assert da.is_relative_to(isolated_env / "indexes")
    assert not da.is_relative_to(a)
    assert paths.index_dir(a / ".." / "Vault") == da  # the resolved path names the index


def test_config_show_prints_every_value_with_its_origin(vault: Path, isolated_env: Path, monkeypatch) -> None:
    user = user_config(isolated_env, "[search]\nsections = 2\n")
    (vault / ".vaultlens.toml").write_text("[index]\nchunk_overlap = 150\n")
    monkeypatch.setenv("VAULTLENS_EMBEDDING__BATCH_SIZE", "7")
    result = run_cli(["config", "show", "--vault", str(vault), "--set", "search.limit=5", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["search.limit"].pop("allowed") == "1..10000"  # every setting says what it accepts
    for item in shown.values():
        item.pop("allowed", None)
    assert shown["search.limit"] == {"value": 5, "from": "--set"}
    assert shown["embedding.batch_size"] == {"value": 7, "from": "env VAULTLENS_EMBEDDING__BATCH_SIZE"}
    assert shown["index.chunk_overlap"] == {"value": 150, "from": str(vault / ".vaultlens.toml")}
    assert shown["search.sections"] == {"value": 2, "from": str(user)}
    assert shown["embedding.provider"] == {"value": "local", "from": "default"}

    text = run_cli(["config", "show", "--vault", str(vault), "--set", "search.limit=5"])
    assert text.exit_code == 0
    flat = " ".join(text.stdout.split())  # Rich may wrap a long origin onto the next line
    assert "search.limit = 5 # --set" in flat
    assert "embedding.batch_size = 7 # env VAULTLENS_EMBEDDING__BATCH_SIZE" in flat
    assert "embedding.model = 'use-multilingual-v3' # default" in flat


def _run(args: list[str], home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VAULTLENS_BIN), *args], env=cli_env(home), cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("[embedding\n", ["config", "show"], "is not valid TOML"),
        ("[search]\nlimitt = 3\n", ["config", "show"], "Unknown setting 'search.limitt'"),
        (
            "",
            ["config", "show", "--set", "search.limit=abc"],
            "Setting search.limit must be an int, got 'abc'",
        ),
        ("", ["config", "show", "--set", "search.limit"], "--set expects KEY=VALUE"),
        ("", ["status", "--set", "nope.x=1"], "Unknown setting 'nope.x'"),
    ],
)
def test_cli_config_mistakes_exit_non_zero_without_traceback(
    vault: Path, isolated_env: Path, setup: str, args: list[str], message: str
) -> None:
    if setup:
        (vault / ".vaultlens.toml").write_text(setup)
    proc = _run([*args, "--vault", str(vault)], isolated_env, vault)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith("error:")


def test_settings_take_any_provider_name_and_the_registry_rejects_an_unknown_one(vault: Path) -> None:
    """The provider list exists once, in the registry: settings only check that it is a name."""
    (vault / ".vaultlens.toml").write_text('[embedding]\nprovider = "cohere"\n')
    s = load_settings(vault).settings
    assert s.embedding.provider == "cohere"
    with pytest.raises(ConfigError) as info:
        make_provider(s.embedding)
    assert "embedding.provider must be one of local, ollama, openai" in info.value.message
    assert "'cohere'" in info.value.message
    assert info.value.exit_code == 2 and info.value.http_status == 400
