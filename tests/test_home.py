"""Where vaultlens keeps its files: a bad VAULTLENS_HOME is a clear error naming it, never a traceback
(issue 9, failure 7), and the index is never placed inside the vault (issue 9, rough edges).

The data folder is checked by ``paths.ensure_home`` and the vault by
``paths.check_index_outside_vault``; the CLI tests run the real command line, in-process or, where
file permissions must bite even as root, in a child process without CAP_DAC_OVERRIDE."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from vaultlens.config import paths
from vaultlens.errors import ConfigError, FileSystemError, PermissionDenied
from vaultlens.services.app import App
from vl_support import (
    cli_env,
    run_cli,
    run_without_file_access,
    snapshot,
    without_root_file_access,
    write_vault,
)

FAKE = ["--set", "embedding.provider=fake"]
# the real CLI in a child process, with the deterministic test provider registered
CHILD = (
    "import sys, vaultlens.testing; from vaultlens.cli.main import main; sys.argv[0] = 'vaultlens'; main()"
)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", {"cats.md": "# Cats\n\nCats sleep most of the day.\n"})


def _plain(text: str) -> str:
    return " ".join(text.split())


def _child(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    """``vaultlens ARGS`` in a child that feels file permissions (as root: without the override)."""
    try:
        return subprocess.run(
            [sys.executable, "-c", CHILD, *args],
            env=cli_env(home),
            preexec_fn=without_root_file_access if os.geteuid() == 0 else None,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.SubprocessError as exc:
        pytest.skip(f"running as root and cannot drop CAP_DAC_OVERRIDE here ({exc})")


# ---- ensure_home ------------------------------------------------------------------------------------


def test_a_missing_home_is_created(isolated_env: Path) -> None:
    assert not isolated_env.exists()
    assert paths.ensure_home() == isolated_env
    assert isolated_env.is_dir()
    assert list(isolated_env.iterdir()) == []  # the write test leaves nothing behind


def test_a_file_as_home_names_vaultlens_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "home-file"
    target.write_text("not a folder\n")
    monkeypatch.setenv("VAULTLENS_HOME", str(target))
    with pytest.raises(FileSystemError) as info:
        paths.ensure_home()
    assert info.value.message == f"VAULTLENS_HOME ({target}) is a file, not a folder."
    assert "Set VAULTLENS_HOME to a writable folder" in (info.value.hint or "")
    assert info.value.to_dict()["path"] == str(target)


def test_a_home_under_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "plain").write_text("x")
    monkeypatch.setenv("VAULTLENS_HOME", str(tmp_path / "plain" / "home"))
    with pytest.raises(FileSystemError, match="cannot be created: a part of its path is a file"):
        paths.ensure_home()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_a_home_under_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTLENS_HOME", "/proc/vaultlens-home")
    with pytest.raises(FileSystemError) as info:
        paths.ensure_home()
    assert info.value.message.startswith("VAULTLENS_HOME (/proc/vaultlens-home) cannot be created (")
    assert "writable folder" in (info.value.hint or "")


def test_without_vaultlens_home_the_default_folder_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "data"
    blocker.write_text("x")
    monkeypatch.delenv("VAULTLENS_HOME")
    monkeypatch.setattr(paths.platformdirs, "user_data_dir", lambda name: str(blocker))
    with pytest.raises(FileSystemError) as info:
        paths.ensure_home()
    assert info.value.message == (
        f"The vaultlens data folder {blocker} (VAULTLENS_HOME is not set) is a file, not a folder."
    )


@pytest.mark.skipif(os.name != "posix", reason="uses POSIX permissions")
def test_a_read_only_home_is_refused_for_writers_only(isolated_env: Path) -> None:
    isolated_env.mkdir()
    isolated_env.chmod(0o555)
    code = (
        "import json; from vaultlens.config import paths; from vaultlens.errors import VaultlensError\n"
        "paths.ensure_home(writable=False)\n"
        "try:\n    paths.ensure_home()\nexcept VaultlensError as e:\n"
        "    print(json.dumps([type(e).__name__, e.message, e.hint]))"
    )
    try:
        proc = run_without_file_access([sys.executable, "-c", code], env=cli_env(isolated_env))
    finally:
        isolated_env.chmod(0o755)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (
        f'["PermissionDenied", "VAULTLENS_HOME ({isolated_env}) is not writable (permission denied).", '
        f'"{paths.HOME_HINT}"]'
    )
    assert PermissionDenied.exit_code == 8


# ---- a bad home through the CLI: a clear error, no traceback (needs App.open to call ensure_home) ----


@pytest.mark.parametrize("kind", ["file", "under a file", "under /proc"])
def test_cli_with_a_bad_home_names_vaultlens_home(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    if kind == "under /proc" and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    (tmp_path / "plain").write_text("x")
    home = {
        "file": tmp_path / "plain",
        "under a file": tmp_path / "plain" / "h",
        "under /proc": Path("/proc/vl"),
    }
    monkeypatch.setenv("VAULTLENS_HOME", str(home[kind]))
    for args in (["status"], ["index", *FAKE], ["search", "cats", *FAKE]):
        result = run_cli([*args, "--vault", str(vault)])
        text = _plain(result.stderr)
        assert result.exit_code == FileSystemError.exit_code, (args, result.output)
        assert f"VAULTLENS_HOME ({home[kind]})" in text, (args, text)
        assert "Set VAULTLENS_HOME to a writable folder" in text
        assert "Traceback" not in result.output


@pytest.mark.skipif(os.name != "posix", reason="uses POSIX permissions")
def test_cli_index_into_a_read_only_home_names_vaultlens_home(vault: Path, isolated_env: Path) -> None:
    isolated_env.mkdir()
    isolated_env.chmod(0o555)
    try:
        proc = _child(["index", "--vault", str(vault), *FAKE], isolated_env)
    finally:
        isolated_env.chmod(0o755)
    text = _plain(proc.stderr)
    assert proc.returncode == PermissionDenied.exit_code, proc.stderr
    assert f"VAULTLENS_HOME ({isolated_env}) is not writable (permission denied)." in text
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="uses POSIX permissions")
@pytest.mark.parametrize("journal", ["left by the last run", "checkpointed away"])
def test_a_read_only_index_does_not_ask_for_a_rebuild(vault: Path, isolated_env: Path, journal: str) -> None:
    """An index folder vaultlens may not write to is a permission problem: a rebuild cannot help.
    With the WAL files present SQLite opens the store read-only and the first write fails; without
    them the open itself fails. (Needs the services' ``translated_errors`` to name the index folder
    and SQLiteStore's open to pass sqlite3 errors through ``translate_error``.)"""
    assert run_cli(["index", "--vault", str(vault), *FAKE]).exit_code == 0
    (vault / "dogs.md").write_text("# Dogs\n\nDogs bark at the mail carrier.\n")
    app = App.open(vault)
    live = app.index_dir  # the live store's folder
    app.close()
    if journal == "checkpointed away":
        con = sqlite3.connect(live / "index.sqlite")
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        for name in ("index.sqlite-wal", "index.sqlite-shm"):
            (live / name).unlink(missing_ok=True)
    changed: list[tuple[Path, int]] = []
    for path in [live, *live.iterdir()]:
        if path.name.endswith(".lock"):
            continue  # the writer lock can still be taken: only the store is read-only
        changed.append((path, stat.S_IMODE(path.stat().st_mode)))
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        proc = _child(["index", "--vault", str(vault), *FAKE], isolated_env)
    finally:
        for path, mode in changed:
            path.chmod(mode)
    text = _plain(proc.stderr)
    assert proc.returncode == PermissionDenied.exit_code, proc.stderr
    assert f"index folder is not writable: {live}" in text
    assert "rebuild`" not in text and "Traceback" not in text
    assert "permissions" in text


# ---- the index never lives inside the vault ------------------------------------------------------------


def test_home_inside_the_vault_is_refused(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTLENS_HOME", str(vault / ".vaultlens"))
    with pytest.raises(ConfigError) as info:
        paths.check_index_outside_vault(vault)
    assert info.value.message.startswith(f"The index would be inside the vault: {vault / '.vaultlens'}")
    assert "sync tools would carry it" in info.value.message
    assert info.value.hint == "Set VAULTLENS_HOME to a folder outside the vault."


def test_a_home_linked_into_the_vault_is_refused(vault: Path, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "link").symlink_to(vault / "data", target_is_directory=True)
    monkeypatch.setenv("VAULTLENS_HOME", str(tmp_path / "link"))
    with pytest.raises(ConfigError, match="inside the vault"):
        paths.check_index_outside_vault(vault)


def test_a_home_beside_the_vault_is_fine(vault: Path, isolated_env: Path) -> None:
    assert not isolated_env.is_relative_to(vault)
    paths.check_index_outside_vault(vault)  # no error
    paths.check_index_outside_vault(vault / ".." / vault.name)


def _user_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's home folder holding the default data folder, as on Linux (~/.local/share/vaultlens)."""
    user = write_vault(tmp_path / "user", {"todo.md": "# Todo\n\nBuy milk.\n"})
    monkeypatch.delenv("VAULTLENS_HOME")
    monkeypatch.setattr(
        paths.platformdirs, "user_data_dir", lambda name: str(user / ".local/share/vaultlens")
    )
    monkeypatch.setattr(paths.platformdirs, "user_config_dir", lambda name: str(user / ".config/vaultlens"))
    return user


def test_the_user_folder_as_vault_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = _user_folder(tmp_path, monkeypatch)
    with pytest.raises(ConfigError) as info:
        paths.check_index_outside_vault(user)
    assert "--vault" in (info.value.hint or "")


def test_cli_refuses_an_index_inside_the_vault_and_changes_nothing(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(Needs App.open to call check_index_outside_vault before anything is created.)"""
    monkeypatch.setenv("VAULTLENS_HOME", str(vault / ".vaultlens"))
    before = snapshot(vault)
    for args in (["index", *FAKE], ["status"]):
        result = run_cli([*args, "--vault", str(vault)])
        assert result.exit_code == 2, (args, result.output)
        assert "The index would be inside the vault" in _plain(result.stderr)
    assert snapshot(vault) == before


def test_cli_in_the_user_folder_without_vault_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user = _user_folder(tmp_path, monkeypatch)
    monkeypatch.chdir(user)
    before = snapshot(user)
    result = run_cli(["index", *FAKE])
    assert result.exit_code == 2, result.output
    text = _plain(result.stderr)
    assert "The index would be inside the vault" in text and "--vault" in text
    assert snapshot(user) == before
