"""Every setting declares the values it allows beside its field; a value outside them is a
ConfigError at load time that names the setting, the allowed range and where the value came from,
so every command refuses before it does anything (issue 9, failure 8).

Also what an adversarial smoke test found here, each refused with a clear message: numbers past
any sane size that passed validation and crashed deep inside (SQLite INTEGER, a ctypes thread
count, ``int(max_file_mb * 1e6)``), so every numeric setting has an upper bound too; config files
that are not UTF-8; and the hint after an unknown key, which now guesses the key meant and lists
the keys of the group typed.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest

from vaultlens.config.consent import consent_file, grant, granted
from vaultlens.config.keys import find_key, keys_file
from vaultlens.config.settings import GROUPS, Rule, Settings, allowed, load_settings, rule
from vaultlens.errors import ConfigError
from vl_support import VAULTLENS_BIN, cli_env, run_cli, write_vault

FAKE = ["--set", "embedding.provider=fake"]
ALL_KEYS = [f"{group}.{f.name}" for group, cls in GROUPS.items() for f in fields(cls)]
NUMERIC = [k for k in ALL_KEYS if (found := rule(k)) is not None and found.check is None]
NOT_UTF8 = b"[search]\nlimit = 3  # caf\xe9\n"  # Latin-1, as an old editor saves it


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


# ---- what the adversarial smoke test found ------------------------------------------------------


def _real(args: list[str], home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VAULTLENS_BIN), *args], env=cli_env(home), cwd=cwd, capture_output=True, text=True, timeout=60
    )


def _refused(proc: subprocess.CompletedProcess[str]) -> str:
    """The error text of a run that must have stopped on a user mistake: exit 2, no traceback."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.startswith("error:")
    return _plain(proc.stderr)


# ---- 1. every number has an upper bound --------------------------------------------------------------


def _top(key: str) -> float | None:
    """The numeric upper bound of ``key`` (None when it is bounded only by another setting)."""
    found = rule(key)
    assert found is not None
    bound = found.le if found.le is not None else found.lt
    return bound if isinstance(bound, (int, float)) else None


@pytest.mark.parametrize("key", NUMERIC)
def test_every_numeric_setting_has_an_upper_bound(key: str) -> None:
    found = rule(key)
    assert found is not None
    upper = found.le if found.le is not None else found.lt
    assert upper is not None, f"{key} accepts any large number"
    if isinstance(upper, str):  # bounded by a sibling, which must itself have a numeric bound
        assert _top(f"{key.partition('.')[0]}.{upper}") is not None


@pytest.mark.parametrize("key", NUMERIC)
def test_the_upper_bound_is_allowed_and_one_step_past_it_is_not(key: str) -> None:
    top = _top(key)
    if top is None:  # index.chunk_overlap: below index.chunk_target, whose own bound is checked here too
        found = rule(key)
        assert found is not None and isinstance(found.lt, str), f"{key} has no upper bound"
        return
    group, _, name = key.partition(".")
    step = 1 if isinstance(getattr(getattr(Settings(), group), name), int) else 0.5
    edge = {key: str(top)}
    below = {"index.chunk_target": "index.chunk_max", "watch.debounce_ms": "watch.max_wait_ms"}
    if key in below:  # the setting bounded by this one may not be below it
        edge[below[key]] = str(top)
    loaded = load_settings(None, edge)
    assert getattr(getattr(loaded.settings, group), name) == top
    with pytest.raises(ConfigError) as info:
        load_settings(None, {**edge, key: str(top + step)})
    assert info.value.message.startswith(f"Setting {key} must be ")
    said = f"{top:g}" if isinstance(top, float) else str(top)
    assert f" and {said}, got " in info.value.message or f"at most {said}, got " in info.value.message
    assert "(from --set)" in info.value.message
    assert f"Allowed: {key} " in (info.value.hint or "")


def test_the_bounds_refuse_the_absurd_and_leave_room_for_legitimate_use() -> None:
    legitimate = {
        "embedding.threads": "1024",
        "search.candidates": "100000",
        "index.max_file_mb": "2048",
        "llm.read_timeout_s": "3600",
        "llm.max_tokens": "128000",
        "embedding.dimensions": "3072",
    }
    s = load_settings(None, legitimate).settings
    assert (s.embedding.threads, s.search.candidates, s.index.max_file_mb) == (1024, 100_000, 2048.0)
    assert (s.llm.read_timeout_s, s.llm.max_tokens, s.embedding.dimensions) == (3600.0, 128_000, 3072)
    for key, value in legitimate.items():
        absurd = str(int(value) * 1000)
        with pytest.raises(ConfigError, match=f"Setting {key} must be "):
            load_settings(None, {key: absurd})


HUGE = ["99999999999999999999999", "1e308", "-1e308", "1e400", "inf", "-inf", "nan", "1" + "0" * 5000]


@pytest.mark.parametrize(
    "value", HUGE, ids=["big-int", "1e308", "-1e308", "1e400", "inf", "-inf", "nan", "5001-digits"]
)
@pytest.mark.parametrize("key", NUMERIC)
def test_no_huge_number_gets_past_load_settings(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(None, {key: value})
    message = info.value.message
    assert message.startswith(f"Setting {key} must be ") and message.endswith("(from --set).")
    assert len(message) < 200, "a pasted wall of digits is cut short"
    assert f"Allowed: {key} " in (info.value.hint or "")
    hint = info.value.hint or ""
    if _top(key) is None:  # bounded above by a sibling only (index.chunk_overlap < index.chunk_target)
        assert "Fix the --set value" in hint or "Change one of the two." in hint
    else:
        assert "Fix the --set value" in hint, "past its own bound the number is wrong, whatever its siblings"


def test_the_reported_search_candidates_crash_is_a_clear_refusal(vault: Path) -> None:
    assert run_cli(["index", "--vault", str(vault), *FAKE]).exit_code == 0
    big = "99999999999999999999999"
    result = run_cli(["search", "cache", "--vault", str(vault), *FAKE, "--set", f"search.candidates={big}"])
    assert result.exit_code == 2, result.output
    text = _plain(result.stderr)
    assert f"Setting search.candidates must be between 1 and 100000, got {big} (from --set)." in text
    assert "Allowed: search.candidates 1..100000. Fix the --set value" in text
    assert result.stdout == "" and "Traceback" not in result.output


def test_the_reported_embedding_threads_crash_is_refused_and_the_index_is_kept(vault: Path) -> None:
    assert run_cli(["index", "--vault", str(vault), *FAKE]).exit_code == 0
    search = ["search", "cats", "--vault", str(vault), *FAKE, "--json"]
    before = run_cli(search)
    assert before.exit_code == 0 and "cats.md" in before.stdout
    big = "99999999999999999999"
    result = run_cli(["rebuild", "--vault", str(vault), *FAKE, "--set", f"embedding.threads={big}"])
    assert result.exit_code == 2, result.output
    text = _plain(result.stderr)
    assert f"Setting embedding.threads must be between 0 and 1024, got {big} (from --set)." in text
    assert run_cli(search).stdout == before.stdout, "refused before the rebuild touched the index"


def test_the_reported_max_file_mb_crash_is_refused_before_anything_is_created(
    vault: Path, isolated_env: Path
) -> None:
    result = run_cli(["index", "--vault", str(vault), *FAKE, "--set", "index.max_file_mb=1e308"])
    assert result.exit_code == 2, result.output
    text = _plain(result.stderr)
    assert "Setting index.max_file_mb must be more than 0 and at most 4096, got 1e+308 (from --set)." in text
    assert "Allowed: index.max_file_mb > 0, <= 4096." in text
    assert not (isolated_env / "indexes").exists()


def test_a_huge_value_from_the_environment_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTLENS_EMBEDDING__THREADS", "99999999999999999999")
    with pytest.raises(ConfigError) as info:
        load_settings(None)
    assert "got 99999999999999999999 (from env VAULTLENS_EMBEDDING__THREADS)" in info.value.message
    assert "Fix the environment variable VAULTLENS_EMBEDDING__THREADS" in (info.value.hint or "")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("toml", "says"),
    [
        (
            "[index]\nmax_file_mb = inf\n",
            "Setting index.max_file_mb must be more than 0 and at most 4096, got inf",
        ),
        (
            "[index]\nmax_file_mb = 1e400\n",
            "Setting index.max_file_mb must be more than 0 and at most 4096, got inf",
        ),
        (  # an int beyond any float
            "[index]\nmax_file_mb = 1" + "0" * 400 + "\n",
            "Setting index.max_file_mb must be more than 0 and at most 4096, got 100000000000000000000000000000... (401 characters)",
        ),
        (
            "[search]\ncandidates = 1e30\n",
            "Setting search.candidates must be between 1 and 100000, got 1000000000000",
        ),
        ("[search]\ncandidates = 1" + "0" * 5000 + "\n", "holds a number too long to read"),
    ],
    ids=["inf", "1e400", "400-digit-int", "1e30", "5001-digit-int"],
)
def test_a_huge_number_in_the_vault_file_is_refused_naming_the_file(
    vault: Path, isolated_env: Path, toml: str, says: str
) -> None:
    config = vault / ".vaultlens.toml"
    config.write_text(toml, encoding="utf-8")
    text = _refused(_real(["status", "--vault", str(vault)], isolated_env, vault))
    assert says in text
    assert str(config) in text


# ---- 2. a config file that is not UTF-8 --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("command", [["status"], ["index", *FAKE], ["config", "show"]])
def test_a_vault_config_that_is_not_utf8_is_named_not_a_traceback(
    vault: Path, isolated_env: Path, command: list[str]
) -> None:
    config = vault / ".vaultlens.toml"
    config.write_bytes(NOT_UTF8)
    text = _refused(_real([*command, "--vault", str(vault)], isolated_env, vault))
    assert f"Config file {config} is not UTF-8 text: byte 0xe9 on line 2 is not valid UTF-8." in text
    assert "save the file as UTF-8" in text
    assert config.read_bytes() == NOT_UTF8, "the user's file is left as it was"
    assert not (isolated_env / "indexes").exists()


def test_a_user_config_that_is_not_utf8_is_named_not_a_traceback(vault: Path, isolated_env: Path) -> None:
    isolated_env.mkdir(parents=True, exist_ok=True)
    user = isolated_env / "config.toml"
    user.write_bytes(NOT_UTF8)
    text = _refused(_real(["status", "--vault", str(vault)], isolated_env, vault))
    assert f"Config file {user} is not UTF-8 text: byte 0xe9 on line 2" in text
    assert user.read_bytes() == NOT_UTF8


def test_a_utf8_byte_order_mark_is_accepted(vault: Path) -> None:
    """Some Windows editors start a UTF-8 file with a byte order mark; it is still UTF-8 TOML."""
    config = vault / ".vaultlens.toml"
    config.write_bytes(b"\xef\xbb\xbf[search]\nlimit = 3\n")
    result = run_cli(["config", "show", "--vault", str(vault), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["search.limit"] == {
        "value": 3,
        "from": str(config),
        "allowed": "1..10000",
    }


def test_a_key_file_that_is_not_utf8_is_a_config_error(isolated_env: Path) -> None:
    path = keys_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"openai": "caf\xe9"}')
    path.chmod(0o600)
    with pytest.raises(ConfigError) as info:
        find_key("openai", "")
    assert info.value.message == f"The API key file {path} is not UTF-8 text."
    assert "Save it as UTF-8" in (info.value.hint or "")
    assert path.read_bytes() == b'{"openai": "caf\xe9"}'


def test_a_consent_file_that_is_not_utf8_is_refused_and_never_overwritten(isolated_env: Path) -> None:
    path = consent_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    content = b'["openai model caf\xe9 at https://x"]'
    path.write_bytes(content)
    for call in (lambda: granted("d"), lambda: grant("d")):
        with pytest.raises(ConfigError) as info:
            call()
        assert info.value.message == f"The consent file {path} is not UTF-8 text."
        assert "delete it" in (info.value.hint or "")
    assert path.read_bytes() == content


# ---- 3. unknown keys and wrong types -----------------------------------------------------------------


@pytest.mark.parametrize("group", list(GROUPS))
def test_an_unknown_key_lists_every_key_of_its_group_and_no_other(vault: Path, group: str) -> None:
    result = run_cli(["status", "--vault", str(vault), "--set", f"{group}.zzz=1"])
    assert result.exit_code == 2, result.output
    text = _plain(result.stderr)
    mine = [f"{group}.{f.name}" for f in fields(GROUPS[group])]  # from the dataclass: it cannot drift
    assert f"Unknown setting '{group}.zzz' in --set." in text
    assert f"hint: Known {group} settings: {', '.join(mine)}." in text
    assert not any(k in text for k in ALL_KEYS if k not in mine)


@pytest.mark.parametrize(
    ("typed", "guess"),
    [
        ("search.candidatez", "search.candidates"),
        ("search.max_lexical_weigth", "search.max_lexical_weight"),
        ("discover.duplicate_treshold", "discover.duplicate_threshold"),
        ("watch.debounce", "watch.debounce_ms"),
        ("llm.providr", "llm.provider"),
        ("serach.limit", "search.limit"),
        ("limit", "search.limit"),
        ("max_retries", "embedding.max_retries or llm.max_retries"),
    ],
)
def test_an_unknown_key_suggests_the_closest_one(vault: Path, typed: str, guess: str) -> None:
    result = run_cli(["status", "--vault", str(vault), "--set", f"{typed}=1"])
    assert result.exit_code == 2, result.output
    assert f"Did you mean {guess}?" in _plain(result.stderr)


def test_an_unknown_group_lists_every_setting_by_group(vault: Path) -> None:
    result = run_cli(["status", "--vault", str(vault), "--set", "nope.x=1"])
    assert result.exit_code == 2, result.output
    text = _plain(result.stderr)
    for group, cls in GROUPS.items():
        assert f"{group}: {', '.join(f.name for f in fields(cls))}" in text


def test_an_unknown_key_in_the_vault_file_suggests_the_closest_one(vault: Path, isolated_env: Path) -> None:
    config = vault / ".vaultlens.toml"
    config.write_text("[search]\ncandidatez = 50\n", encoding="utf-8")
    text = _refused(_real(["status", "--vault", str(vault)], isolated_env, vault))
    assert f"Unknown setting 'search.candidatez' in {config}." in text
    assert "Did you mean search.candidates? Known search settings: search.limit," in text
    assert (
        "search.max_lexical_weight, search.tier_weight, search.one_language_tier_weight, "
        "search.one_language_max_lexical_weight, search.tier_weight_across, search.ann_threshold." in text
    )


def test_a_setting_outside_any_table_is_told_its_table(vault: Path, isolated_env: Path) -> None:
    (vault / ".vaultlens.toml").write_text("limit = 3\n", encoding="utf-8")
    text = _refused(_real(["status", "--vault", str(vault)], isolated_env, vault))
    assert "[limit] must be a table of settings." in text
    assert "write [search] and then limit = 3 under it." in text


@pytest.mark.parametrize("origin", ["--set", "env", "file"])
def test_a_wrong_type_says_an_int_and_where_it_came_from(
    vault: Path, monkeypatch: pytest.MonkeyPatch, origin: str
) -> None:
    overrides: dict[str, str] = {}
    if origin == "--set":
        overrides["search.limit"] = "ten"
        where = "--set"
    elif origin == "env":
        monkeypatch.setenv("VAULTLENS_SEARCH__LIMIT", "ten")
        where = "env VAULTLENS_SEARCH__LIMIT"
    else:
        (vault / ".vaultlens.toml").write_text('[search]\nlimit = "ten"\n', encoding="utf-8")
        where = str(vault / ".vaultlens.toml")
    with pytest.raises(ConfigError) as info:
        load_settings(vault, overrides)
    assert info.value.message == f"Setting search.limit must be an int, got 'ten' (from {where})."
    assert (info.value.hint or "").startswith("Allowed: search.limit 1..10000. Fix ")


def test_a_wrong_type_of_a_float_says_a_number(vault: Path) -> None:
    result = run_cli(["status", "--vault", str(vault), "--set", "index.max_file_mb=lots"])
    assert result.exit_code == 2, result.output
    assert "Setting index.max_file_mb must be a number, got 'lots' (from --set)." in _plain(result.stderr)


def test_a_config_file_nested_past_any_limit_is_a_clear_error(vault: Path) -> None:
    (vault / ".vaultlens.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="nests tables or arrays too deeply"):
        load_settings(vault, {})
