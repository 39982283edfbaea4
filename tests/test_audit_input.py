"""What the audit commands do with a user's mistakes and an awkward vault, through the real CLI: a note the OS
will not let us read is listed as not read while the audit goes on."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from vaultlens.config.paths import audit_dir
from vl_support import cli_env, run_cli, run_without_file_access, write_vault

FILES: dict[str, str | bytes] = {
    "Главная.md": "# Главная\n[[Leaf]] [[Missing]]\n",
    "Leaf.md": "# Leaf\nback to [[Главная]] #map\n",
    "Lonely.md": "nobody links here\n",
    ".obsidian/app.json": "{}\n",
}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", FILES)


def flat(text: str) -> str:
    return " ".join(text.split())


def history(vault: Path) -> list[dict[str, str]]:
    result = run_cli(["history", "--vault", str(vault), "--json"])
    assert result.exit_code == 0, result.stderr
    entries: list[dict[str, str]] = json.loads(result.stdout)
    return entries


# ---- a note the OS will not let us read -------------------------------------------------------------------------

RUNNER = "import sys\nfrom vaultlens.cli.main import main\nsys.argv[0] = 'vaultlens'\nmain()"


def audit_without_file_access(vault: Path, home: Path, *args: str) -> tuple[int, str, str]:
    """`audit structure` where permission bits apply: in this process, or (as root) in a child without
    CAP_DAC_OVERRIDE, skipped with the reason where that cannot be dropped."""
    argv = ["audit", "structure", "--vault", str(vault), *args]
    if os.geteuid() != 0:
        result = run_cli(argv)
        return result.exit_code, result.stdout, result.stderr
    proc = run_without_file_access([sys.executable, "-c", RUNNER, *argv], env=cli_env(home), timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_note_that_cannot_be_read_is_listed_as_not_read_and_the_audit_goes_on(
    vault: Path, isolated_env: Path
) -> None:
    (vault / "unread.md").write_text("# Secret\n[[Leaf]]\n", encoding="utf-8")
    os.mkfifo(vault / "pipe.md")  # other unreadable kinds the scan already leaves out (counted as skipped)
    (vault / "dangling.md").symlink_to(vault / "nowhere.md")
    (vault / "unread.md").chmod(0o000)
    try:
        code, out, err = audit_without_file_access(vault, isolated_env, "--json")
        human = audit_without_file_access(vault, isolated_env)
    finally:
        (vault / "unread.md").chmod(0o644)
    assert code == 0, out + err
    data = json.loads(out)
    assert data["unread"] == {"unread.md": "cannot read: Permission denied"}
    assert data["summary"]["unread"] == 1
    assert data["notes"] == ["Leaf.md", "Lonely.md", "unread.md", "Главная.md"]
    assert data["orphans"] == ["Lonely.md", "unread.md"]  # its links are unknown; the others' were resolved
    assert [r["target"] for r in data["links"]["Главная.md"]] == ["Leaf.md", "UNRESOLVED"]
    assert data["summary"]["skipped_files"] == 3  # .obsidian, the FIFO and the dangling link
    assert human[0] == 0, human[1] + human[2]
    text = flat(human[1])
    assert "1 notes not read" in text and "not read: unread.md — cannot read: Permission denied" in text
    dashboard = (audit_dir(vault) / "vault-structure.md").read_text(encoding="utf-8")
    assert "Not read (1)" in dashboard and "cannot read: Permission denied" in dashboard
