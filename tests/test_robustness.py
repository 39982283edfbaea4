"""Bad input (issue 2 bar): invalid UTF-8, a 50 MB note, a binary `.md`, symlink loops, an unreadable
file, malformed front matter, empty notes. Each is reported in status with a specific reason and
every normal note is still indexed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import vaultlens as services
from vaultlens.services.app import App
from vl_support import (
    BILINGUAL,
    VAULTLENS_BIN,
    bilingual_vault,
    cli_env,
    file_records,
    run_cli,
    run_without_file_access,
    write_vault,
)

BAD: dict[str, str | bytes] = {
    "bad/invalid utf8.md": b"# Broken\n\nCaf\xe9 au lait, written by an old editor in Latin-1.\n",
    "bad/binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
    "bad/front matter.md": "---\ntitle: ok\ntags: [a, b\nstatus: draft\n---\n# Survives\n\nThe body of a note "
    "with broken front matter about migrating birds is still searchable.\n",
    "bad/empty.md": b"",
    "bad/only whitespace.md": "\n\n   \n\t\n",
}
HUGE = "bad/huge.md"
HUGE_BYTES = 50 * 1024 * 1024


def build_bad_vault(root: Path) -> Path:
    vault = bilingual_vault(root)
    write_vault(vault, BAD)
    line = b"A very long note that nobody should try to embed in one go. " * 16 + b"\n"
    with (vault / HUGE).open("wb") as fh:
        full, rest = divmod(HUGE_BYTES, len(line))
        fh.write(b"# Huge\n\n")
        fh.write(line * full)
        fh.write(b"x" * (rest - 8))
    assert (vault / HUGE).stat().st_size == HUGE_BYTES
    (vault / "loop").symlink_to(".")
    (vault / "bad/ping.md").symlink_to("pong.md")
    (vault / "bad/pong.md").symlink_to("ping.md")
    os.mkfifo(vault / "bad/pipe.md")  # reading a FIFO would hang the indexer
    return vault


def reasons(info: dict) -> dict[str, tuple[str, str]]:
    return {p["path"]: (p["status"], p["reason"]) for p in info["problems"]}


def test_bad_input_is_reported_and_everything_else_is_indexed(tmp_path: Path, use_provider) -> None:
    vault = build_bad_vault(tmp_path / "vault")
    result = run_cli(["index", "--vault", str(vault), "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    app = App.open(vault)
    info = services.status(app).as_dict()
    # index and status count the same skipped files: the scan's (too large, loops, a FIFO) and those
    # read and rejected (invalid UTF-8, binary, two empty notes), on this run and on the next
    assert stats["files_skipped"] == info["files"]["skipped"] == 9
    again = json.loads(run_cli(["index", "--vault", str(vault), "--json"]).stdout)
    assert again["files_skipped"] == 9 and again["files_changed"] == 0
    found = reasons(info)
    assert found["bad/invalid utf8.md"] == ("skipped", "not valid UTF-8 (first bad byte at offset 13)")
    assert found["bad/binary.md"] == ("skipped", "binary content (NUL bytes), not a text note")
    assert found["bad/empty.md"] == ("skipped", "empty note (nothing to index)")
    assert found["bad/only whitespace.md"] == ("skipped", "empty note (nothing to index)")
    assert found["bad/front matter.md"] == (
        "indexed",
        "malformed YAML front matter at line 4; indexed as plain text",
    )
    status, why = found[HUGE]
    assert status == "skipped" and why.startswith("too large (52.4 MB") and why.endswith("> 10 MB limit)")
    assert found["loop/"] == ("skipped", "symlink loop (folder already visited)")
    assert found["bad/ping.md"] == ("skipped", "symlink loop")
    assert found["bad/pong.md"] == ("skipped", "symlink loop")
    assert found["bad/pipe.md"] == ("skipped", "not a regular file")
    assert len(found) == 10

    records = file_records(app)
    indexed = {p for p, r in records.items() if r.status == "indexed"}
    assert indexed == set(BILINGUAL) | {"bad/front matter.md"}
    assert all(records[p].n_chunks > 0 for p in indexed)
    assert info["notes"] == len(indexed)
    assert services.doctor(app).healthy
    hits = services.search(app, "migrating birds")
    assert hits[0].path == "bad/front matter.md"
    app.close()

    text = run_cli(["status", "--vault", str(vault)])
    flat = " ".join(text.stdout.split())
    assert "bad/binary.md: binary content (NUL bytes), not a text note" in flat
    assert "loop/: symlink loop (folder already visited)" in flat

    again = json.loads(run_cli(["index", "--vault", str(vault), "--json"]).stdout)
    assert (again["chunks_embedded"], again["files_changed"]) == (0, 0)
    assert reasons(services.status(App.open(vault)).as_dict()) == found


def test_an_unreadable_file_is_reported_as_failed(tmp_path: Path, isolated_env: Path) -> None:
    vault = write_vault(
        tmp_path / "vault",
        {"Readable.md": "# Readable\n\nPlain text anyone can read.\n", "Locked.md": "# Locked\n\nPrivate.\n"},
    )
    (vault / "Locked.md").chmod(0)
    if os.geteuid() == 0:
        # chmod 000 does not stop root; run the real CLI as root without the file-access override
        proc = run_without_file_access(
            [str(VAULTLENS_BIN), "index", "--vault", str(vault), "--json"],
            env=cli_env(isolated_env),
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        stats = json.loads(proc.stdout)
    else:
        result = run_cli(["index", "--vault", str(vault), "--json"])
        assert result.exit_code == 0, result.output
        stats = json.loads(result.stdout)
    assert (stats["files_failed"], stats["chunks_embedded"]) == (1, 1)
    app = App.open(vault)
    info = services.status(app).as_dict()
    assert reasons(info) == {"Locked.md": ("failed", "cannot read: Permission denied")}
    assert info["files"] == {"indexed": 1, "skipped": 0, "failed": 1}
    assert services.doctor(app).healthy
    app.close()

    (vault / "Locked.md").chmod(0o644)  # a failed file is retried on the next run
    again = json.loads(run_cli(["index", "--vault", str(vault), "--json"]).stdout)
    assert (again["files_changed"], again["files_failed"], again["chunks_embedded"]) == (1, 0, 1)
    assert reasons(services.status(App.open(vault)).as_dict()) == {}
