"""The vault is read-only to vaultlens: index, status, search and doctor change no byte of any file
in the vault and add none (SHA-256 of every file and the file list, before and after)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from vl_support import bilingual_vault, run_cli, snapshot, write_vault


def mtimes(root: Path) -> dict[str, int]:
    """Modification times of every folder and file: a file created and deleted again shows up here."""
    out = {".": root.stat().st_mtime_ns}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            out[p.relative_to(root).as_posix()] = p.lstat().st_mtime_ns
    return out


def test_commands_change_nothing_in_the_vault(tmp_path: Path, use_provider) -> None:
    vault = bilingual_vault(tmp_path / "vault")
    write_vault(
        vault,
        {
            ".obsidian/app.json": json.dumps({"userIgnoreFilters": ["Private/"]}),
            ".obsidian/workspace.json": '{"main": {}}',
            ".git/HEAD": "ref: refs/heads/main\n",
            ".vaultlens.toml": "[search]\nlimit = 5\n",
            ".vaultlensignore": "*.tmp.md\n",
            "Private/Diary.md": "# Dear diary\n",
            "scratch.tmp.md": "scratch\n",
            "Windows note.md": "\ufeff# Windows\r\n\r\nWritten with CRLF line endings.\r\n",
            "bad/binary.md": b"\x00\x01\x02",
            "bad/latin1.md": "Café".encode("latin-1"),
            "attachments/photo.png": b"\x89PNG\r\n\x1a\n" + bytes(64),
        },
    )
    (vault / "loop").symlink_to(".")
    before, times = snapshot(vault), mtimes(vault)

    steps = [
        ["index", "--vault", str(vault)],
        ["status", "--vault", str(vault)],
        ["status", "--json", "--vault", str(vault)],
        ["search", "закваска", "--vault", str(vault)],
        ["search", "Cache-Control", "--json", "--vault", str(vault)],
        ["doctor", "--vault", str(vault)],
        ["config", "show", "--vault", str(vault)],
        ["index", "--vault", str(vault)],
    ]
    for args in steps:
        result = run_cli(args)
        assert result.exit_code == 0, (args, result.output)
    stdin = run_cli(["search", "-", "--json", "--vault", str(vault)], stdin="хлеб\nHTTP\n")
    assert stdin.exit_code == 0 and len(stdin.stdout.splitlines()) == 2

    assert snapshot(vault) == before
    assert mtimes(vault) == times
