"""What the audit commands do with a user's mistakes and an awkward vault, through the real CLI: a bad ``--out``
is refused before anything is read or written, a report already in the vault is up to date (not an error), and a
note the OS will not let us read is listed as not read while the audit goes on."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from vaultlens.config.paths import audit_dir
from vl_support import cli_env, run_cli, run_without_file_access, snapshot, write_vault

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


# ---- a bad --out: refused before any work, nothing written anywhere ----------------------------------------------


@pytest.mark.parametrize(
    ("out", "why"),
    [
        ("{vault}/Главная.md", "it is a file, not a folder"),
        ("{vault}/.obsidian", "'.obsidian' is a hidden folder"),
        ("{vault}/.reports", "'.reports' is a hidden folder"),
        ("{vault}/Главная.md/Reports", "Главная.md is a file, not a folder"),
        ("{vault}/Taken", "vault-map.canvas there is not a file"),
        ("{tmp}/report.txt", "it is a file, not a folder"),
        ("{tmp}/report.txt/sub", "report.txt is a file, not a folder"),
    ],
)
def test_a_bad_out_is_refused_before_anything_is_read_or_written(
    vault: Path, tmp_path: Path, isolated_env: Path, out: str, why: str
) -> None:
    (vault / "Taken" / "vault-map.canvas").mkdir(parents=True)
    (tmp_path / "report.txt").write_text("mine\n", encoding="utf-8")
    before = snapshot(vault)
    target = out.format(vault=vault, tmp=tmp_path)
    result = run_cli(["audit", "structure", "--vault", str(vault), "--out", target, "--yes"])
    assert result.exit_code == 2, result.stdout + result.stderr
    message = flat(result.stderr)
    assert "Cannot put the audit reports in" in message and why in message, message
    assert "hint:" in message and "Traceback" not in result.stderr
    assert "Wrote" not in result.stdout and "notes in" not in result.stdout  # no audit ran
    assert snapshot(vault) == before
    assert not audit_dir(vault).exists()  # not the reports, not even the outline cache
    assert (tmp_path / "report.txt").read_text(encoding="utf-8") == "mine\n"
    assert history(vault) == []  # nothing planned either


@pytest.mark.parametrize(("out", "why"), [("{vault}/Reports", "inside the vault"), ("{tmp}/f", "is a file")])
def test_a_bad_deep_out_is_refused_before_any_work(
    vault: Path, tmp_path: Path, isolated_env: Path, out: str, why: str
) -> None:
    (tmp_path / "f").write_text("mine\n", encoding="utf-8")
    target = out.format(vault=vault, tmp=tmp_path)
    result = run_cli(["audit", "deep", "--vault", str(vault), "--no-llm", "--out", target])
    assert result.exit_code == 2, result.stdout + result.stderr  # not "no index yet": --out is checked first
    assert why in flat(result.stderr) and "Traceback" not in result.stderr
    assert not audit_dir(vault).exists()


# ---- a report the vault already holds ------------------------------------------------------------------------------


def test_a_report_already_in_the_vault_is_up_to_date_and_only_what_changed_is_written(vault: Path) -> None:
    args = ["audit", "structure", "--vault", str(vault), "--out", str(vault / "Reports"), "--yes"]
    first = run_cli(args)
    assert first.exit_code == 0, first.stderr
    # the second run counts the two report files the first one added: the dashboard changes, the map does not
    second = run_cli(args)
    assert second.exit_code == 0, second.stdout + second.stderr
    assert "Already up to date Reports/vault-map.canvas" in flat(second.stdout)
    assert "Written Reports/vault-structure.md" in flat(second.stdout)
    applied = sorted(e["path"] for e in history(vault) if e["state"] == "applied")
    assert applied == ["Reports/vault-map.canvas", *["Reports/vault-structure.md"] * 2]

    # as if the last run were in an earlier minute: the time under the title is not a change
    saved = vault / "Reports" / "vault-structure.md"
    text = saved.read_text(encoding="utf-8")
    stamp = re.search(r" · (\d{4}-\d\d-\d\d \d\d:\d\d UTC) · ", text)
    assert stamp is not None
    saved.write_text(text.replace(stamp.group(1), "2001-02-03 04:05 UTC"), encoding="utf-8")
    before = snapshot(vault)
    # nothing changed: no diff, nothing to confirm (no --yes, no terminal), exit 0
    third = run_cli(args[:-1])
    assert third.exit_code == 0, third.stdout + third.stderr
    out = flat(third.stdout)
    assert "Already up to date Reports/vault-structure.md" in out
    assert "Already up to date Reports/vault-map.canvas" in out
    assert "Written" not in out and "+++" not in out
    assert snapshot(vault) == before
    assert len(history(vault)) == 3  # nothing planned

    # a tag added: the dashboard changes, the map (notes and links only) does not
    (vault / "Lonely.md").write_text("nobody links here #new\n", encoding="utf-8")
    fourth = run_cli(args)
    assert fourth.exit_code == 0, fourth.stdout + fourth.stderr
    assert "Already up to date Reports/vault-map.canvas" in flat(fourth.stdout)
    added = [line for line in fourth.stdout.splitlines() if line.startswith("+")]  # the diff shown
    assert any("new" in line for line in added)
    entries = history(vault)
    assert len(entries) == 4 and entries[-1]["path"] == "Reports/vault-structure.md"
    assert entries[-1]["state"] == "applied"


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
