"""Hostile vaults through the real CLI (issue 9 #2, #3, #4 scan half, #6): a file name that is not
UTF-8, a YAML alias bomb, a folder that can be listed but not entered, a folder link to the vault
root. Each is reported with its reason; the run goes on and every other note is searchable.

Vectors come from the deterministic hashing provider (``--set embedding.provider=fake``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from vaultlens.index.indexing.indexer import Indexer
from vaultlens.testing import HashingEmbeddingProvider
from vl_support import (
    cli_env,
    opened_store,
    run_cli,
    run_without_file_access,
    settings,
    write_vault,
)

FAKE = ["--set", "embedding.provider=fake"]
GOOD = {
    "Cats.md": "# Pets\n\nFeline pets purr, chase mice and sleep on warm windowsills all afternoon.\n",
    "Sky/Stars.md": "# Sky\n\nAstronomy maps stars, galaxies and nebulae with telescopes on dark nights.\n",
}


def cli(vault: Path, *args: str) -> tuple[int, str, str]:
    result = run_cli([*args, "--vault", str(vault), *FAKE])
    return result.exit_code, result.stdout, result.stderr


def problems(vault: Path) -> dict[str, tuple[str, str]]:
    code, out, err = cli(vault, "status", "--json")
    assert code == 0, err
    return {p["path"]: (p["status"], p["reason"]) for p in json.loads(out)["problems"]}


def top_hit(vault: Path, query: str) -> str:
    code, out, err = cli(vault, "search", query, "-n", "1", "--json")
    assert code == 0, err
    return str(json.loads(out)[0]["path"])


def alias_bomb(levels: int, body: str) -> str:
    names = [f"l{i}" for i in range(levels)]
    lines = [f"{names[0]}: &{names[0]} [" + ",".join(['"x"'] * 9) + "]"]
    for prev, cur in zip(names, names[1:], strict=False):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines.append(f"tags: *{names[-1]}")
    return "---\n" + "\n".join(lines) + f"\n---\n# Trap\n\n{body}\n"


def test_a_file_name_that_is_not_utf8_is_skipped_and_the_run_goes_on(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", GOOD)
    for name in (b"bad\xffname.md", b"Sky/ctl\x1bname.md"):
        (Path(os.fsdecode(os.fsencode(vault) + b"/" + name))).write_bytes(b"# Bad\n\nUnreachable words.\n")
    code, out, err = cli(vault, "index")
    assert code == 0, out + err
    assert top_hit(vault, "feline pets") == "Cats.md"
    assert top_hit(vault, "astronomy telescopes") == "Sky/Stars.md"
    expected = {
        "bad\\xffname.md": ("skipped", "file name is not valid UTF-8 (rename it)"),
        "Sky/ctl\\x1bname.md": ("skipped", "file name contains the control character U+001B (rename it)"),
    }
    assert problems(vault) == expected  # `status --json` is valid JSON
    code, out, _ = cli(vault, "status")
    flat = " ".join(out.split())
    assert "bad\\xffname.md: file name is not valid UTF-8 (rename it)" in flat
    assert "\x1b" not in out
    code, out, err = cli(vault, "index", "--json")  # stable: nothing to do the second time
    assert code == 0, err
    assert json.loads(out)["files_changed"] == 0
    assert problems(vault) == expected


@pytest.mark.parametrize("levels", [9, 12])
def test_a_front_matter_alias_bomb_is_reported_and_its_body_indexed(tmp_path: Path, levels: int) -> None:
    vault = write_vault(
        tmp_path / "v",
        {**GOOD, "Trap.md": alias_bomb(levels, "Sourdough starter needs rye flour and warm water daily.")},
    )
    code, out, err = cli(vault, "index", "--json")
    assert code == 0, out + err
    assert json.loads(out)["files_failed"] == 0
    assert problems(vault) == {
        "Trap.md": (
            "indexed",
            "front matter too complex: aliases expand to more than 10,000 values; indexed as plain text",
        )
    }
    assert top_hit(vault, "sourdough rye flour") == "Trap.md"
    assert top_hit(vault, "feline pets") == "Cats.md"
    code, out, err = cli(vault, "status", "--json")
    assert len(out) < 100_000  # nothing expanded made it into the index


def test_a_folder_that_can_be_listed_but_not_entered_is_skipped(tmp_path: Path, isolated_env: Path) -> None:
    vault = write_vault(tmp_path / "v", {**GOOD, "locked/Secret.md": "# Locked\n\nHidden words.\n"})
    (vault / "locked").chmod(0o644)
    try:
        if os.geteuid() == 0:  # permission bits do not stop root: run the CLI without the override
            runner = "import sys, vaultlens.testing\nfrom vaultlens.cli.main import main\nsys.argv[0] = 'vaultlens'\nmain()"
            proc = run_without_file_access(
                [sys.executable, "-c", runner, "index", "--vault", str(vault), "--json", *FAKE],
                env=cli_env(isolated_env),
                timeout=300,
            )
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        else:
            code, out, err = cli(vault, "index", "--json")
    finally:
        (vault / "locked").chmod(0o755)
    assert code == 0, out + err
    assert json.loads(out)["files_scanned"] == 2
    assert problems(vault) == {"locked/": ("skipped", "cannot read folder: Permission denied")}
    assert top_hit(vault, "feline pets") == "Cats.md"


def test_a_folder_link_to_the_vault_root_is_never_indexed_twice(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", GOOD)
    assert cli(vault, "index")[0] == 0
    (vault / "loopd").mkdir()
    (vault / "loopd" / "up").symlink_to("..")
    # the watcher's flush: a new folder is listed, events under it are classified one by one
    s = settings(vault, **{"embedding.provider": "fake"})
    with opened_store(tmp_path / "store", create=True) as store:
        indexer = Indexer(vault, store, HashingEmbeddingProvider(), s)
        indexer.run()
        indexer.sync(upserts=["loopd/up/Cats.md", "loopd/up/Sky/Stars.md"], folders=["loopd", "loopd/up"])
        records = store.file_records()
    assert {p: r.status for p, r in records.items()} == {
        "Cats.md": "indexed",
        "Sky/Stars.md": "indexed",
        "loopd/up/": "skipped",
    }
    assert records["loopd/up/"].reason == "symlink loop (folder already visited)"
    code, out, err = cli(vault, "index", "--json")
    assert code == 0, err
    assert json.loads(out)["files_scanned"] == 2
    assert problems(vault) == {"loopd/up/": ("skipped", "symlink loop (folder already visited)")}
