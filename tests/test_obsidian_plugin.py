"""`vaultlens obsidian install` (the plugin from the package, into .obsidian/plugins/vaultlens/ only)
and `vaultlens obsidian pair` (the write token the page's write routes accept from the plugin)."""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from server_support import running_server
from vaultlens.config import pairing
from vaultlens.services.installing.plugin import SHIPPED, shipped_files
from vl_support import run_cli, snapshot, write_vault

NOTES = {"Notes/Cats.md": "# Cats\n\nCats sleep.\n", "Dogs.md": "# Dogs\r\n\r\nDogs walk.\r\n"}
PLUGIN = Path(".obsidian/plugins/vaultlens")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", NOTES)


def notes_of(vault: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(vault).items() if not k.startswith(".obsidian")}


def test_install_writes_the_shipped_plugin_and_changes_no_note(vault: Path) -> None:
    before = notes_of(vault)
    got = run_cli(["obsidian", "install", "--vault", str(vault), "--yes"])
    assert got.exit_code == 0, got.stderr
    assert all(f"create    {name}" in got.stdout for name in SHIPPED)
    for name, data in shipped_files().items():
        assert (vault / PLUGIN / name).read_bytes() == data
    manifest = json.loads((vault / PLUGIN / "manifest.json").read_text())
    assert manifest["id"] == "vaultlens" and manifest["isDesktopOnly"] is True
    assert manifest["version"] == version("vaultlens")
    assert notes_of(vault) == before
    assert sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if p.is_file()) == sorted(
        [*NOTES, *(f"{PLUGIN.as_posix()}/{n}" for n in SHIPPED)]
    )
    again = run_cli(["obsidian", "install", "--vault", str(vault)])  # nothing to write: no question
    assert again.exit_code == 0 and "nothing to write" in again.stdout


def test_an_update_replaces_only_the_plugin_files_and_keeps_its_settings(vault: Path) -> None:
    (vault / PLUGIN).mkdir(parents=True)
    (vault / PLUGIN / "main.js").write_text("old build")
    (vault / PLUGIN / "manifest.json").write_text(json.dumps({"id": "vaultlens", "version": "0.0.1"}))
    (vault / PLUGIN / "data.json").write_text('{"writeToken": "kept"}')
    got = run_cli(["obsidian", "install", "--vault", str(vault), "--yes"])
    assert got.exit_code == 0 and "replace   main.js" in got.stdout
    assert (vault / PLUGIN / "main.js").read_bytes() == shipped_files()["main.js"]
    assert (vault / PLUGIN / "data.json").read_text() == '{"writeToken": "kept"}'


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"manifest.json": json.dumps({"id": "other-plugin"}), "main.js": "theirs"}, "other-plugin"),
        ({"manifest.json": "not json", "main.js": "theirs"}, "None"),
        ({"index.js": "theirs"}, "index.js"),
    ],
)
def test_a_folder_holding_another_plugin_is_refused_and_left_as_it_is(
    vault: Path, files: dict[str, str], named: str
) -> None:
    write_vault(vault / PLUGIN, files)
    before = snapshot(vault)
    got = run_cli(["obsidian", "install", "--vault", str(vault), "--yes"])
    assert got.exit_code == 2 and named in got.stderr and "Nothing was written" in got.stderr
    assert snapshot(vault) == before


def test_without_yes_and_without_a_terminal_nothing_is_written(vault: Path) -> None:
    got = run_cli(["obsidian", "install", "--vault", str(vault)])
    assert got.exit_code == 2 and "--yes" in got.stderr
    assert not (vault / ".obsidian").exists()


def test_a_linked_plugins_folder_is_refused(vault: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "plugins").symlink_to(elsewhere)
    got = run_cli(["obsidian", "install", "--vault", str(vault), "--yes"])
    assert got.exit_code == 2 and "is a link" in got.stderr
    assert list(elsewhere.iterdir()) == []


# ---- pairing ---------------------------------------------------------------------------------------

NO_OP = {"a": "Notes/Cats.md", "b": "Dogs.md"}  # dismiss, the smallest write: the verb refuses this pair


def dismiss(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url + "/ui/api/dismiss", json=NO_OP, headers=headers, timeout=30)


def test_only_the_paired_token_lets_a_program_write_and_revoke_withdraws_it(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTLENS_HOME", str(tmp_path / "home"))
    with running_server(vault, tmp_path / "home", watch=False) as server:
        refused = dismiss(server.url)  # a program with no page key and no pairing: refused
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "page_key_required"
        assert dismiss(server.url, **{"X-Vaultlens-Write-Token": "guessed"}).status_code == 403

        got = run_cli(["obsidian", "pair", "--vault", str(vault)])
        token = got.stdout.strip()
        assert got.exit_code == 0 and len(token) >= 40 and "shown once" in got.stderr
        assert json.loads(pairing.pair_file(vault).read_text()) == {"sha256": pairing.sha256_hex(token)}
        passed = dismiss(server.url, **{"X-Vaultlens-Write-Token": token})  # past the guard, to the verb
        assert passed.status_code == 400 and passed.json()["error"]["code"] == "invalid_input", passed.text
        # /v1 stays read-only with it
        v1 = httpx.post(server.url + "/v1/dismiss", json=NO_OP, headers={"X-Vaultlens-Write-Token": token})
        assert v1.status_code in (404, 405)

        newer = run_cli(["obsidian", "pair", "--vault", str(vault)]).stdout.strip()
        stale = dismiss(server.url, **{"X-Vaultlens-Write-Token": token})
        assert stale.status_code == 403 and stale.json()["error"]["code"] == "write_token_refused"
        assert "vaultlens obsidian pair" in stale.json()["error"]["hint"]
        assert run_cli(["obsidian", "pair", "--vault", str(vault), "--revoke"]).exit_code == 0
        assert dismiss(server.url, **{"X-Vaultlens-Write-Token": newer}).status_code == 403


def test_pairing_a_folder_that_is_no_vault_issues_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTLENS_HOME", str(tmp_path / "home"))
    (tmp_path / "a file").write_text("x")
    for wrong in (tmp_path / "Notes-typo", tmp_path / "a file"):
        got = run_cli(["obsidian", "pair", "--vault", str(wrong), "--json"])
        assert got.exit_code != 0
        error = json.loads(got.stdout)["error"]
        assert error["code"] == "vault" and str(wrong) in error["message"], error
        assert not pairing.pair_file(wrong).exists(), "no token kept for it"


def test_install_and_pair_take_the_vault_as_every_command_does(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --vault: $VAULTLENS_VAULT, then the current folder (a user who `cd`s into the vault, as the
    README's first lines do); pair's own "`vaultlens obsidian pair --revoke` withdraws it" then works as printed."""
    monkeypatch.setenv("VAULTLENS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VAULTLENS_VAULT", str(vault))
    got = run_cli(["obsidian", "install", "--yes"])
    assert got.exit_code == 0, got.output
    assert (vault / PLUGIN / "main.js").read_bytes() == shipped_files()["main.js"]
    paired = run_cli(["obsidian", "pair"])
    assert paired.exit_code == 0, paired.output
    assert json.loads(pairing.pair_file(vault).read_text()) == {
        "sha256": pairing.sha256_hex(paired.stdout.strip())
    }
    monkeypatch.delenv("VAULTLENS_VAULT")
    monkeypatch.chdir(vault)
    revoked = run_cli(["obsidian", "pair", "--revoke"])
    assert revoked.exit_code == 0 and "Revoked" in revoked.stdout, revoked.output
    assert not pairing.pair_file(vault).exists()
