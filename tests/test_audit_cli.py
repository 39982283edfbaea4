"""`vaultlens audit structure`: outside the vault by default, into it only through confirmed safewrite notes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vaultlens.config.paths import audit_dir
from vl_support import run_cli, snapshot, write_vault

FILES: dict[str, str | bytes] = {
    "Hub.md": "---\ntags: [Map]\n---\n# Hub\n[[Leaf]] [[Missing]] [[Leaf#Nope]]\n",
    "Leaf.md": "# Leaf\nback to [[Hub]] #map\n",
    "Lonely.md": "nobody links here\n",
}
REQUIRED = (
    "notes", "links", "embeds", "tags", "orphans", "orphans_no_incoming", "broken_links", "same_name_groups",
    "no_outgoing", "missing_anchors", "tag_counts", "folders", "file_types", "components", "hubs", "largest",
    "emptiest",
)  # fmt: skip


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", FILES)


def test_json_has_every_field_and_files_go_outside_the_vault(vault: Path, isolated_env: Path) -> None:
    before = snapshot(vault)
    result = run_cli(["audit", "structure", "--vault", str(vault), "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    for field in REQUIRED:
        assert field in data, field
    assert data["notes"] == ["Hub.md", "Leaf.md", "Lonely.md"]
    assert data["orphans"] == ["Lonely.md"]
    assert data["broken_links"] == [{"source": "Hub.md", "raw": "Missing", "line": 5, "kind": "wiki"}]
    assert data["missing_anchors"][0]["anchor"] == "Nope"
    assert data["tag_counts"] == {"Map": 2}
    assert data["links"]["Leaf.md"] == [{"raw": "Hub", "target": "Hub.md", "kind": "wiki", "line": 2}]
    folder = audit_dir(vault)
    assert folder.is_relative_to(isolated_env)
    assert {Path(p) for p in data["files"].values()} == {
        folder / "vault-structure.md",
        folder / "vault-map.canvas",
        folder / "vault-structure.json",
    }
    assert json.loads((folder / "vault-structure.json").read_text(encoding="utf-8"))["orphans"] == [
        "Lonely.md"
    ]
    assert "[[Lonely]]" in (folder / "vault-structure.md").read_text(encoding="utf-8")
    assert snapshot(vault) == before


def test_out_folder_outside_the_vault(vault: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    result = run_cli(["audit", "structure", "--vault", str(vault), "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "vault-map.canvas",
        "vault-structure.json",
        "vault-structure.md",
    ]
    assert "1 orphans" in " ".join(result.stdout.split())


def test_into_the_vault_only_after_confirmation(vault: Path) -> None:
    before = snapshot(vault)
    refused = run_cli(["audit", "structure", "--vault", str(vault), "--out", str(vault / "Audits")])
    assert refused.exit_code == 9, refused.stderr  # no terminal to answer: WriteRefused, nothing written
    assert "confirm the diff" in refused.stderr
    assert snapshot(vault) == before

    done = run_cli(["audit", "structure", "--vault", str(vault), "--out", str(vault / "Audits"), "--yes"])
    assert done.exit_code == 0, done.stderr
    assert "+vaultlens-report: structure-audit" in done.stdout  # the exact diff was shown
    assert (vault / "Audits" / "vault-structure.md").is_file()
    canvas = json.loads((vault / "Audits" / "vault-map.canvas").read_text(encoding="utf-8"))
    assert {n["file"] for n in canvas["nodes"] if n["type"] == "file"} == {"Hub.md", "Leaf.md", "Lonely.md"}
    history = json.loads(run_cli(["history", "--vault", str(vault), "--json"]).stdout)
    assert sorted(e["path"] for e in history if e["state"] == "applied") == [
        "Audits/vault-map.canvas",
        "Audits/vault-structure.md",
    ]
    # the saved dashboard links to Lonely, but is left out of the next audit, so Lonely stays an orphan
    again = json.loads(run_cli(["audit", "structure", "--vault", str(vault), "--json"]).stdout)
    assert again["orphans"] == ["Lonely.md"]
    assert again["notes"] == ["Hub.md", "Leaf.md", "Lonely.md"]


def test_a_relative_out_is_taken_from_the_vault_not_the_current_folder(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    refused = run_cli(["audit", "structure", "--vault", str(vault), "--out", "Audits"])
    assert refused.exit_code == 9, refused.stderr  # a folder in the vault: each note a diff to confirm
    done = run_cli(["audit", "structure", "--vault", str(vault), "--out", "Audits", "--yes"])
    assert done.exit_code == 0, done.stderr
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in (vault / "Audits").iterdir()) == ["vault-map.canvas", "vault-structure.md"]
    assert f"The dashboard and map go into the vault folder {vault / 'Audits'}." in done.stdout
    sibling = run_cli(["audit", "structure", "--vault", str(vault), "--out", "../reports"])
    assert sibling.exit_code == 0, sibling.stderr
    assert f"Wrote {vault.parent / 'reports' / 'vault-structure.json'}" in sibling.stdout
    assert list(elsewhere.iterdir()) == []


def test_json_with_an_out_folder_inside_the_vault_is_refused(vault: Path) -> None:
    result = run_cli(["audit", "structure", "--vault", str(vault), "--out", str(vault), "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "config"


def test_missing_vault_is_a_clear_error(tmp_path: Path) -> None:
    result = run_cli(["audit", "structure", "--vault", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "does not exist" in " ".join(result.stderr.split()) and "Traceback" not in result.stderr


def test_unreadable_notes_are_reported_not_fatal(tmp_path: Path) -> None:
    vault = write_vault(
        tmp_path / "vault", {"ok.md": "[[bin]]\n", "bin.md": b"\x00\x01binary", "bad.md": b"\xff\xfe"}
    )
    data = json.loads(run_cli(["audit", "structure", "--vault", str(vault), "--json"]).stdout)
    assert set(data["unread"]) == {"bin.md", "bad.md"}
    assert data["links"]["ok.md"][0]["target"] == "bin.md"  # still a file links resolve to
