"""The `vaultlens` command line: JSON shapes, JSON Lines from stdin, exit codes, and user mistakes
answered with a message (never a traceback)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from vaultlens.config.paths import index_dir
from vl_support import BILINGUAL, REPO, VAULTLENS_BIN, bilingual_vault, cli_env, run_cli, write_vault


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, use_provider) -> tuple[Path, Path]:
    """A vault indexed once through `vaultlens index`, and the home holding its index."""
    root = tmp_path_factory.mktemp("cli")
    vault = bilingual_vault(root / "vault")
    home = root / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(home))
        result = run_cli(["index", "--vault", str(vault), "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["files_scanned"] == len(BILINGUAL) and stats["chunks_embedded"] > 0
    return vault, home


@pytest.fixture
def vault(indexed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    """Read-only use of the shared index."""
    monkeypatch.setenv("VAULTLENS_HOME", str(indexed[1]))
    return indexed[0]


@pytest.fixture
def own_vault(indexed: tuple[Path, Path], isolated_env: Path) -> Path:
    """A private copy of the index for commands that change it."""
    vault, home = indexed
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(home))
        src = index_dir(vault)
    shutil.copytree(src, index_dir(vault))
    return vault


def test_index_text_output_and_second_run(own_vault: Path) -> None:
    result = run_cli(["index", "--vault", str(own_vault)])
    assert result.exit_code == 0, result.output
    assert f"Scanned {len(BILINGUAL)} notes: 0 changed, 0 removed; 0 chunks embedded" in " ".join(
        result.stdout.split()
    )


def test_search_json_items_have_relative_path_and_score(vault: Path) -> None:
    result = run_cli(["search", "хачапури и вино в квеври", "--json", "--limit", "3", "--vault", str(vault)])
    assert result.exit_code == 0, result.output
    items = json.loads(result.stdout)
    assert 1 <= len(items) <= 3
    assert items[0]["path"] == "Путешествия/Грузия 2023.md"
    for item in items:
        assert not Path(item["path"]).is_absolute() and (vault / item["path"]).is_file()
        assert isinstance(item["score"], float)
        assert item["title"]
        for sec in item["sections"]:
            assert {"heading_path", "start_line", "end_line", "score", "snippet", "chunk_id"} <= sec.keys()
            assert 1 <= sec["start_line"] <= sec["end_line"]


def test_search_text_output_shows_titles_and_line_ranges(vault: Path) -> None:
    result = run_cli(["search", "kx_rollout_guard_7731", "--vault", str(vault), "-n", "1"])
    assert result.exit_code == 0, result.output
    assert "1. Deploy runbook" in result.stdout and "Tech/Deploy runbook.md" in result.stdout
    assert "L1-" in result.stdout


def test_search_stdin_emits_one_json_line_per_query(vault: Path) -> None:
    queries = ["ржаная закваска подкормка", "", "Cache-Control immutable", "marathon taper"]
    result = run_cli(
        ["search", "-", "--json", "--limit", "2", "--vault", str(vault)], stdin="\n".join(queries) + "\n"
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 3  # the blank line is not a query
    objects = [json.loads(line) for line in lines]
    assert [o["query"] for o in objects] == [q for q in queries if q]
    firsts = [o["results"][0]["path"] for o in objects]
    assert firsts == ["Кулинария/Закваска.md", "Tech/HTTP caching.md", "Health/Marathon training.md"]
    for o in objects:
        assert 1 <= len(o["results"]) <= 2
        assert all({"path", "score"} <= r.keys() for r in o["results"])


def test_a_query_longer_than_max_query_chars_is_cut_and_the_cli_says_so(vault: Path) -> None:
    query = "хачапури и вино в квеври " * 4
    kept = len(query.strip()[:20])
    cut = ["--set", "search.max_query_chars=20", "--vault", str(vault)]
    note = f"note: the query is {len(query.strip())} characters long; only its first {kept} are used"
    result = run_cli(["search", query, "--json", *cut])
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.stdout), list)  # the JSON keeps its shape; the notice is on stderr
    assert note in result.stderr
    lines = run_cli(["search", "-", "--json", *cut], stdin=f"{query}\nквеври\n")
    assert lines.stderr.count("note: the query is") == 1  # the short one is used whole
    asked = run_cli(["ask", query, "--extractive", "--json", *cut])
    assert asked.exit_code == 0, asked.output
    assert note.replace("query", "question") in asked.stderr
    assert json.loads(asked.stdout)["question"] == query.strip()[:20]
    assert "note:" not in run_cli(["search", "квеври", *cut]).stderr


def test_status_json_and_text(vault: Path) -> None:
    result = run_cli(["status", "--json", "--vault", str(vault)])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["files"] == {"indexed": len(BILINGUAL), "skipped": 0, "failed": 0}
    assert info["notes"] == len(BILINGUAL)
    assert info["chunks"] >= len(BILINGUAL)
    assert info["embedding_space"]["model"] == "use-multilingual-v3"
    assert info["last_run"]["status"] == "ok"
    for key in (
        "files_scanned",
        "files_changed",
        "chunks_embedded",
        "chunks_reused",
        "chunks_deleted",
        "seconds",
    ):
        assert key in info["last_run"]
    text = run_cli(["status", "--vault", str(vault)])
    assert text.exit_code == 0
    flat = " ".join(text.stdout.split())
    assert f"{len(BILINGUAL)} indexed" in flat and "local:use-multilingual-v3 (512-d)" in flat


def test_doctor_passes_on_a_healthy_index(vault: Path) -> None:
    result = run_cli(["doctor", "--vault", str(vault)])
    assert (result.exit_code, result.stderr) == (0, "")


def test_clear_then_rebuild(own_vault: Path) -> None:
    cleared = run_cli(["clear", "--vault", str(own_vault)])
    assert cleared.exit_code == 0 and "cleared" in cleared.stdout
    info = json.loads(run_cli(["status", "--json", "--vault", str(own_vault)]).stdout)
    assert (info["notes"], info["chunks"]) == (0, 0)
    empty = run_cli(["search", "закваска", "--json", "--vault", str(own_vault)])
    assert (empty.exit_code, json.loads(empty.stdout)["error"]["code"]) == (4, "index_empty")
    said = " ".join(run_cli(["search", "закваска", "--vault", str(own_vault)]).stderr.split())
    assert "The index is empty (it was cleared)" in said

    rebuilt = run_cli(["rebuild", "--json", "--vault", str(own_vault)])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert json.loads(rebuilt.stdout)["files_changed"] == len(BILINGUAL)
    info = json.loads(run_cli(["status", "--json", "--vault", str(own_vault)]).stdout)
    assert info["notes"] == len(BILINGUAL)
    assert run_cli(["doctor", "--vault", str(own_vault)]).exit_code == 0


def test_vault_comes_from_env_or_current_folder(vault: Path, indexed: tuple[Path, Path]) -> None:
    home = indexed[1]
    by_env = subprocess.run(
        [str(VAULTLENS_BIN), "status", "--json"],
        env=cli_env(home, VAULTLENS_VAULT=str(vault)),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert by_env.returncode == 0, by_env.stderr
    assert json.loads(by_env.stdout)["notes"] == len(BILINGUAL)
    by_cwd = subprocess.run(
        [str(VAULTLENS_BIN), "status", "--json"],
        env=cli_env(home),
        cwd=vault,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert by_cwd.returncode == 0, by_cwd.stderr
    assert json.loads(by_cwd.stdout)["vault"] == str(vault.resolve())


def _real(args: list[str], home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VAULTLENS_BIN), *args], env=cli_env(home), cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["search", "x", "--vault", "{missing}"], 2, "does not exist"),
        (["index", "--vault", "{file}"], 2, "is not a folder"),
        (["search", "x", "--vault", "{fresh}"], 4, "There is no index for"),
        (["doctor", "--vault", "{fresh}"], 4, "Run `vaultlens index` to build it."),
        (
            ["search", "x", "--vault", "{fresh}", "--set", "search.limit=lots"],
            2,
            "must be an int, got 'lots'",
        ),
        (["search", "x", "--vault", "{fresh}", "--limit", "0"], 2, "--limit"),
        (["frobnicate"], 2, "No such command"),
    ],
)
def test_user_mistakes_get_a_message_and_exit_code_not_a_traceback(
    tmp_path: Path, isolated_env: Path, args: list[str], code: int, message: str
) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "Note.md").write_text("# Note\n")
    (tmp_path / "file.md").write_text("x")
    subs = {
        "{missing}": str(tmp_path / "missing"),
        "{file}": str(tmp_path / "file.md"),
        "{fresh}": str(fresh),
    }
    proc = _real([subs.get(a, a) for a in args], isolated_env, tmp_path)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (fresh / ".vaultlens").exists() and sorted(p.name for p in fresh.iterdir()) == ["Note.md"]


def test_status_before_any_index_says_so(tmp_path: Path, isolated_env: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"A.md": "# A\n"})  # the home is beside it, not inside
    result = run_cli(["status", "--vault", str(vault)])
    assert result.exit_code == 0
    assert "Not indexed yet" in result.stdout
    assert json.loads(run_cli(["status", "--json", "--vault", str(vault)]).stdout)["indexed"] is False
    assert not (isolated_env / "indexes").exists()  # looking creates nothing


@pytest.mark.slow
def test_bytes_that_are_not_utf8_in_a_query_or_a_vault_path_are_a_clear_error(
    vault: Path, indexed: tuple[Path, Path], tmp_path: Path
) -> None:
    """The shell passes such bytes through (a Latin-1 terminal, a file name from another system);
    they used to end in a UnicodeEncodeError traceback deep in the store."""
    home = indexed[1]
    env = cli_env(home)

    def run(args: list[str | bytes], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(VAULTLENS_BIN), *args], env=env, input=stdin, capture_output=True, timeout=60
        )

    cases: list[tuple[list[str | bytes], bytes]] = [
        (["search", b"\xff\xfe caching", "--vault", str(vault)], b""),
        (["ask", b"\xff\xfe", "--extractive", "--vault", str(vault)], b""),
        (["search", "-", "--vault", str(vault)], b"\xff\xfe\n"),
    ]
    for args, stdin in cases:
        proc = run(args, stdin)
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 2, err
        assert "not valid UTF-8" in err and "Traceback" not in err
    odd = tmp_path / "odd"
    odd.mkdir()
    bad = bytes(odd) + b"/vault\xff"
    os.makedirs(bad)
    with open(bad + b"/Note.md", "wb") as fh:
        fh.write(b"# Note\n\nText.\n")
    proc = run(["index", "--vault", bad])
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2 and "is not valid UTF-8" in " ".join(err.split()) and "Traceback" not in err


def test_a_vault_from_the_environment_says_so_when_it_is_wrong(tmp_path: Path, isolated_env: Path) -> None:
    proc = subprocess.run(
        [str(VAULTLENS_BIN), "status"],
        env=cli_env(isolated_env, VAULTLENS_VAULT=str(tmp_path / "nope")),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "$VAULTLENS_VAULT" in proc.stderr and "does not exist" in proc.stderr


def test_the_readme_names_exactly_the_commands_without_json() -> None:
    """The README's "every command but ... takes --json" is checked against the commands themselves."""
    from typer.main import get_command

    from vaultlens.cli.main import cli

    def without_json(command: Any, name: str) -> list[str]:
        if hasattr(command, "commands"):  # a group: its subcommands
            return [
                n for sub, c in command.commands.items() for n in without_json(c, f"{name} {sub}".strip())
            ]
        options = {o for p in command.params for o in getattr(p, "opts", ())}
        return [] if "--json" in options else [name]

    said = re.search(r"Every command but (.+?) \(", (REPO / "README.md").read_text(encoding="utf-8"))
    assert said, "the README says which commands take --json"
    assert sorted(re.findall(r"`([^`]+)`", said[1])) == sorted(without_json(get_command(cli), ""))
