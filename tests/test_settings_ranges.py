"""Every setting declares the values it allows beside its field; a value outside them is a
ConfigError at load time that names the setting, the allowed range and where the value came from,
so every command refuses before it does anything (issue 9, failure 8)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from vaultlens.config.settings import GROUPS, Rule, Settings, allowed, load_settings, rule
from vaultlens.errors import ConfigError
from vl_support import run_cli, write_vault

FAKE = ["--set", "embedding.provider=fake"]
ALL_KEYS = [f"{group}.{f.name}" for group, cls in GROUPS.items() for f in fields(cls)]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(
        tmp_path / "vault",
        {
            "cats.md": "# Cats\n\nCats sleep most of the day.\n",
            "stars.md": "# Stars\n\nStars burn hydrogen.\n",
        },
    )


def _plain(text: str) -> str:
    return " ".join(text.split())  # Rich wraps long error lines


def test_search_candidates_zero_is_refused_by_name(vault: Path) -> None:
    assert run_cli(["index", "--vault", str(vault), *FAKE]).exit_code == 0
    result = run_cli(["search", "x", "--vault", str(vault), *FAKE, "--set", "search.candidates=0"])
    assert result.exit_code == 2, result.output
    text = _plain(result.stderr)
    assert "Setting search.candidates must be between 1 and 100000, got 0 (from --set)." in text
    assert "Allowed: search.candidates 1..100000" in text
    assert "Traceback" not in result.output and result.stdout == ""


# the values issue 9 found accepted, each through the CLI command that would have used it
ISSUE_VALUES = [
    ("search", "search.max_lexical_weight", "-0.5", "must be between 0 and 1, got -0.5"),
    ("duplicates", "discover.duplicate_threshold", "-1", "must be between 0 and 1, got -1.0"),
    ("search", "search.max_query_chars", "-5", "must be between 1 and 100000, got -5"),
    ("search", "search.candidates", "-1", "must be between 1 and 100000, got -1"),
    ("index", "index.max_file_mb", "-1", "must be more than 0 and at most 4096, got -1.0"),
    ("index", "embedding.timeout_s", "-1", "must be more than 0 and at most 86400, got -1.0"),
]


@pytest.mark.parametrize(("command", "key", "value", "says"), ISSUE_VALUES, ids=[v[1] for v in ISSUE_VALUES])
def test_values_the_issue_found_accepted_are_refused_before_anything_runs(
    vault: Path, isolated_env: Path, command: str, key: str, value: str, says: str
) -> None:
    args = {"search": ["search", "cats"], "duplicates": ["duplicates"], "index": ["index"]}[command]
    result = run_cli([*args, "--vault", str(vault), *FAKE, "--set", f"{key}={value}"])
    assert result.exit_code == 2, result.output
    assert f"Setting {key} {says} (from --set)." in _plain(result.stderr)
    assert "Traceback" not in result.output
    assert not (isolated_env / "indexes").exists(), "refused at load time: nothing was created"


def test_the_origin_of_a_bad_value_is_named(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTLENS_SEARCH__CANDIDATES", "0")
    with pytest.raises(ConfigError) as info:
        load_settings(vault)
    assert "got 0 (from env VAULTLENS_SEARCH__CANDIDATES)" in info.value.message
    assert "Fix the environment variable VAULTLENS_SEARCH__CANDIDATES" in (info.value.hint or "")
    monkeypatch.delenv("VAULTLENS_SEARCH__CANDIDATES")

    (vault / ".vaultlens.toml").write_text("[discover]\nduplicate_limit = 0\n")
    with pytest.raises(ConfigError) as info:
        load_settings(vault)
    assert f"got 0 (from {vault / '.vaultlens.toml'})" in info.value.message
    assert "remove it to use the default (100)" in (info.value.hint or "")


@pytest.mark.parametrize(
    ("overrides", "message", "hint"),
    [
        (
            {"index.chunk_overlap": "1200"},
            "Setting index.chunk_overlap must be at least 0 and less than index.chunk_target (1200), got 1200",
            "index.chunk_target is 1200 (the default). Change one of the two.",
        ),
        (
            {"index.chunk_max": "900"},
            "Setting index.chunk_max must be between index.chunk_target (1200) and 100000, got 900",
            "index.chunk_target is 1200 (the default)",
        ),
        (
            {"watch.debounce_ms": "20000"},
            "Setting watch.max_wait_ms must be between watch.debounce_ms (20000) and 86400000, got 10000 (the default)",
            "watch.debounce_ms is 20000 (from --set)",
        ),
        (
            {"embedding.endpoint": "ftp://example.org"},
            "Setting embedding.endpoint must be empty (the provider's default) or an http:// or https:// URL",
            "Fix the --set value",
        ),
        (
            {"embedding.api_key_env": "MY KEY"},
            "Setting embedding.api_key_env must be empty or the name of an environment variable",
            "",
        ),
        ({"embedding.max_retries": "11"}, "Setting embedding.max_retries must be between 0 and 10", ""),
    ],
)
def test_settings_that_depend_on_each_other_name_both(
    overrides: dict[str, str], message: str, hint: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(None, overrides)
    assert message in info.value.message
    assert hint in (info.value.hint or "")
    assert info.value.exit_code == 2


def test_boundaries_themselves_are_allowed() -> None:
    edges = {
        "search.candidates": "1",
        "search.limit": "1",
        "search.sections": "1",
        "search.max_query_chars": "1",
        "search.max_lexical_weight": "0",
        "discover.duplicate_threshold": "1",
        "discover.duplicate_limit": "1",
        "discover.min_chars": "0",
        "index.chunk_target": "200",
        "index.chunk_max": "200",
        "index.chunk_overlap": "0",
        "index.batch_files": "1",
        "embedding.batch_size": "1",
        "embedding.max_retries": "0",
        "embedding.dimensions": "0",
        "embedding.threads": "0",
        "watch.debounce_ms": "0",
        "watch.max_wait_ms": "0",
    }
    s = load_settings(None, edges).settings
    assert (s.search.candidates, s.index.chunk_max, s.watch.max_wait_ms) == (1, 200, 0)
    assert load_settings(None, {"search.max_lexical_weight": "1"}).settings.search.max_lexical_weight == 1.0


def test_watch_max_wait_is_declared_with_its_default() -> None:
    assert Settings().watch.max_wait_ms == 10000
    assert allowed("watch.max_wait_ms") == "watch.debounce_ms..86400000"


@pytest.mark.parametrize("key", ALL_KEYS)
def test_every_setting_declares_a_rule_and_its_default_obeys_it(key: str) -> None:
    found = rule(key)
    assert isinstance(found, Rule), f"{key} has no range declared beside its field"
    assert allowed(key), key
    load_settings(None)  # every default passes its own rule


def _just_outside(key: str) -> str | None:
    """A value one step outside the first numeric bound of ``key`` (None for text settings)."""
    group = key.partition(".")[0]
    found = rule(key)
    assert found is not None
    if found.check is not None:
        return None
    op, bound = found.bounds()[0]
    limit = getattr(getattr(Settings(), group), bound) if isinstance(bound, str) else bound
    step = 1 if isinstance(getattr(getattr(Settings(), group), key.partition(".")[2]), int) else 0.5
    value = {"ge": limit - step, "gt": limit, "le": limit + step, "lt": limit}[op]
    return str(value)


@pytest.mark.parametrize("key", [k for k in ALL_KEYS if _just_outside(k) is not None])
def test_a_value_just_outside_any_numeric_rule_is_refused_by_name(key: str) -> None:
    value = _just_outside(key)
    assert value is not None
    with pytest.raises(ConfigError) as info:
        load_settings(None, {key: value})
    assert info.value.message.startswith(f"Setting {key} must be ")
    assert "Allowed:" in (info.value.hint or "")


def test_allowed_ranges_in_symbols() -> None:
    assert allowed("search.candidates") == "1..100000"
    assert allowed("search.max_lexical_weight") == "0..1"
    assert allowed("embedding.timeout_s") == "> 0, <= 86400"
    assert allowed("index.chunk_overlap") == ">= 0, < index.chunk_target"
    assert allowed("nope.x") == ""
