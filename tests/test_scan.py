"""Scanner: what Obsidian would show is listed; everything left out is reported with its reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vaultlens.errors import VaultError
from vaultlens.vault.scan import VaultRules, check_vault, scan_vault
from vl_support import without_root_file_access, write_vault

MB = 1_000_000


def _scan(root: Path, max_bytes: int = 10 * MB) -> tuple[list[str], dict[str, str]]:
    result = scan_vault(root, max_bytes)
    return [f.path for f in result.files], {s.path: s.reason for s in result.skipped}


def test_dot_folders_are_skipped_with_a_reason(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            "Note.md": "# Note\n",
            ".obsidian/app.json": "{}",
            ".obsidian/snippets/x.md": "# not a note\n",
            ".trash/Deleted.md": "# deleted\n",
            ".git/HEAD": "ref: refs/heads/main\n",
            ".git/notes.md": "# git internals\n",
        },
    )
    files, skipped = _scan(tmp_path)
    assert files == ["Note.md"]
    for folder in (".obsidian/", ".trash/", ".git/"):
        assert skipped[folder] == "hidden folder"
    assert not any(p.startswith((".obsidian/", ".trash/", ".git/")) and p[-1] != "/" for p in skipped)


def test_user_ignore_filters_prefix_and_regex(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            ".obsidian/app.json": json.dumps(
                {"userIgnoreFilters": ["Archive/", "Templates/Daily", r"/\.draft\.md$/", "/[unclosed/"]}
            ),
            "Archive/Old.md": "old\n",
            "Templates/Daily note.md": "template\n",
            "Templates/Weekly.md": "weekly\n",
            "Ideas/Plan.draft.md": "draft\n",
            "Ideas/Plan.md": "plan\n",
        },
    )
    files, skipped = _scan(tmp_path)
    assert files == ["Ideas/Plan.md", "Templates/Weekly.md"]
    assert skipped["Archive/"] == "excluded by .obsidian/app.json userIgnoreFilters 'Archive/'"
    assert skipped["Templates/Daily note.md"] == (
        "excluded by .obsidian/app.json userIgnoreFilters 'Templates/Daily'"
    )
    assert skipped["Ideas/Plan.draft.md"] == (
        "excluded by .obsidian/app.json userIgnoreFilters '/\\\\.draft\\\\.md$/'"
    )


def test_broken_app_json_is_not_fatal_and_is_reported(tmp_path: Path) -> None:
    write_vault(tmp_path, {".obsidian/app.json": "{not json", "A.md": "a\n"})
    result = scan_vault(tmp_path, 10 * MB)
    assert [f.path for f in result.files] == ["A.md"]
    assert len(result.rule_problems) == 1
    assert result.rule_problems[0].startswith(".obsidian/app.json is not valid JSON (")
    assert result.rule_problems[0].endswith("; its excluded files are not applied")
    assert VaultRules(tmp_path, 10 * MB).rule_problems == tuple(result.rule_problems)


def test_sound_rules_report_no_problem(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            ".obsidian/app.json": json.dumps({"userIgnoreFilters": ["Archive/", "", r"/\.tmp$/"]}),
            ".vaultlensignore": "# comment\nprivate/\n",
            "A.md": "a\n",
        },
    )
    assert scan_vault(tmp_path, 10 * MB).rule_problems == []
    write_vault(tmp_path / "bare", {"A.md": "a\n"})  # no .obsidian at all
    assert scan_vault(tmp_path / "bare", 10 * MB).rule_problems == []
    write_vault(tmp_path / "nofilters", {".obsidian/app.json": '{"alwaysUpdateLinks": true}', "A.md": "a\n"})
    assert scan_vault(tmp_path / "nofilters", 10 * MB).rule_problems == []


def test_one_bad_filter_keeps_every_other_filter_and_is_reported(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            ".obsidian/app.json": json.dumps(
                {"userIgnoreFilters": ["Archive/", "/[unclosed/", 42, r"/(?<name>js)/", "Private/"]}
            ),
            "Archive/Old.md": "old\n",
            "Private/Diary.md": "secret\n",
            "Open.md": "open\n",
        },
    )
    result = scan_vault(tmp_path, 10 * MB)
    assert [f.path for f in result.files] == ["Open.md"]
    assert {s.path for s in result.skipped} == {"Archive/", "Private/", ".obsidian/"}
    problems = result.rule_problems
    assert len(problems) == 3
    assert problems[0].startswith(
        ".obsidian/app.json userIgnoreFilters entry 2 ('/[unclosed/') is not a valid regular expression ("
    )
    assert problems[1] == ".obsidian/app.json userIgnoreFilters entry 3 (42) is not a string; left out"
    assert "entry 4 ('/(?<name>js)/')" in problems[2]  # JavaScript syntax Python does not take
    assert all(p.endswith("; left out") for p in problems)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('["Archive/"]', ".obsidian/app.json is not a JSON object; its excluded files are not applied"),
        (
            '{"userIgnoreFilters": "Archive/"}',
            ".obsidian/app.json userIgnoreFilters is a str, not a list; no excluded files are applied",
        ),
        (
            b'{"userIgnoreFilters": ["\xff"]}',
            ".obsidian/app.json is not UTF-8 text; its excluded files are not applied",
        ),
    ],
)
def test_app_json_of_the_wrong_shape_is_reported(tmp_path: Path, content: str | bytes, problem: str) -> None:
    write_vault(tmp_path, {".obsidian/app.json": content, "Archive/Old.md": "old\n", "A.md": "a\n"})
    result = scan_vault(tmp_path, 10 * MB)
    assert [f.path for f in result.files] == ["A.md", "Archive/Old.md"]  # nothing applied...
    assert result.rule_problems == [problem]  # ...and the caller is told


def test_app_json_with_a_bom_is_read(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + json.dumps({"userIgnoreFilters": ["Archive/"]}).encode()
    write_vault(tmp_path, {".obsidian/app.json": data, "Archive/Old.md": "old\n", "A.md": "a\n"})
    result = scan_vault(tmp_path, 10 * MB)
    assert ([f.path for f in result.files], result.rule_problems) == (["A.md"], [])


def test_bad_vaultlensignore_line_is_reported_and_the_rest_applied(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            ".vaultlensignore": "private/\n!\n*.tmp.md\n",
            "private/D.md": "d\n",
            "x.tmp.md": "t\n",
            "A.md": "a\n",
        },
    )
    result = scan_vault(tmp_path, 10 * MB)
    assert [f.path for f in result.files] == ["A.md"]
    assert result.rule_problems == [".vaultlensignore line 2 ('!') is not a valid pattern; left out"]


def test_unreadable_app_json_is_reported(tmp_path: Path) -> None:
    write_vault(tmp_path, {".obsidian/app.json": "{}", "A.md": "a\n"})
    (tmp_path / ".obsidian" / "app.json").unlink()
    (tmp_path / ".obsidian" / "app.json").mkdir()  # reading it fails even as root
    rules = VaultRules(tmp_path, 10 * MB)
    assert len(rules.rule_problems) == 1
    assert rules.rule_problems[0].startswith(".obsidian/app.json cannot be read (")
    assert rules.scan("").rule_problems == list(rules.rule_problems)


def test_vaultlensignore_uses_gitignore_syntax(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            ".vaultlensignore": "private/\n*.tmp.md\n!keep.tmp.md\n",
            "private/Diary.md": "secret\n",
            "scratch.tmp.md": "tmp\n",
            "keep.tmp.md": "kept\n",
            "Public.md": "public\n",
        },
    )
    files, skipped = _scan(tmp_path)
    assert files == ["Public.md", "keep.tmp.md"]
    assert skipped["private/"] == "ignored by .vaultlensignore"
    assert skipped["scratch.tmp.md"] == "ignored by .vaultlensignore"


def test_hidden_note_is_reported(tmp_path: Path) -> None:
    write_vault(tmp_path, {".secret.md": "# hidden\n", "Visible.md": "v\n", ".DS_Store": "x"})
    files, skipped = _scan(tmp_path)
    assert files == ["Visible.md"]
    assert skipped == {".secret.md": "hidden file"}


def test_a_fifo_named_md_is_reported_not_opened(tmp_path: Path) -> None:
    write_vault(tmp_path, {"Real.md": "real\n"})
    os.mkfifo(tmp_path / "pipe.md")  # opening it for reading would block forever
    files, skipped = _scan(tmp_path)
    assert files == ["Real.md"]
    assert skipped == {"pipe.md": "not a regular file"}


def test_folder_symlink_loop_is_reported_once(tmp_path: Path) -> None:
    write_vault(tmp_path, {"a/Note.md": "note\n"})
    (tmp_path / "a" / "back").symlink_to("..")
    (tmp_path / "self").symlink_to(".")
    files, skipped = _scan(tmp_path)
    assert files == ["a/Note.md"]
    assert skipped["a/back/"] == "symlink loop (folder already visited)"
    assert skipped["self/"] == "symlink loop (folder already visited)"


def test_file_symlink_loop_is_reported_as_a_loop(tmp_path: Path) -> None:
    write_vault(tmp_path, {"Real.md": "real\n"})
    (tmp_path / "ping.md").symlink_to("pong.md")
    (tmp_path / "pong.md").symlink_to("ping.md")
    (tmp_path / "dangling.md").symlink_to("missing.md")
    files, skipped = _scan(tmp_path)
    assert files == ["Real.md"]
    assert skipped["ping.md"] == "symlink loop"
    assert skipped["pong.md"] == "symlink loop"
    assert skipped["dangling.md"] == "broken symlink (its target does not exist)"


def test_symlink_outside_vault_is_reported_and_not_followed(tmp_path: Path) -> None:
    outside = write_vault(tmp_path / "outside", {"Secret.md": "outside\n", "dir/Other.md": "other\n"})
    vault = write_vault(tmp_path / "vault", {"In.md": "in\n"})
    (vault / "leak.md").symlink_to(outside / "Secret.md")
    (vault / "leakdir").symlink_to(outside / "dir")
    (vault / "inner.md").symlink_to(vault / "In.md")
    files, skipped = _scan(vault)
    assert files == ["In.md", "inner.md"]  # a link that stays inside is fine
    assert skipped["leak.md"] == "symlink points outside the vault"
    assert skipped["leakdir"] == "symlink points outside the vault"


def test_too_large_note_is_reported_with_sizes(tmp_path: Path) -> None:
    write_vault(tmp_path, {"Big.md": "x" * 2_500_000, "Small.md": "small\n", "big.png": b"\0" * 2_500_000})
    files, skipped = _scan(tmp_path, max_bytes=2 * MB)
    assert files == ["Small.md", "big.png"]  # the size limit is for notes, attachments are not read
    assert skipped == {"Big.md": "too large (2.5 MB > 2 MB limit)"}


def test_odd_names_are_listed_with_their_exact_paths(tmp_path: Path) -> None:
    names = [
        "with space.md",
        "Привет мир.md",
        "🚀 launch plan.md",
        "-leading-dash.md",
        "папка с пробелом/заметка №1.md",
        "quotes 'single' \"double\".md",
        "UPPER.MD",
    ]
    write_vault(tmp_path, {n: f"# {n}\n" for n in names})
    result = scan_vault(tmp_path, 10 * MB)
    assert sorted(f.path for f in result.notes) == sorted(names)
    assert result.skipped == []


def test_files_are_sorted_and_classified(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            "b/Note.md": "n\n",
            "a/Board.canvas": "{}",
            "a/View.base": "views: []\n",
            "a/pic.png": b"\x89PNG",
        },
    )
    result = scan_vault(tmp_path, 10 * MB)
    assert [(f.path, f.kind) for f in result.files] == [
        ("a/Board.canvas", "canvas"),
        ("a/View.base", "base"),
        ("a/pic.png", "attachment"),
        ("b/Note.md", "note"),
    ]
    note = result.notes[0]
    st = (tmp_path / "b/Note.md").stat()
    assert (note.size, note.mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_unlistable_folder_is_reported(tmp_path: Path) -> None:
    write_vault(tmp_path, {"locked/Note.md": "n\n", "Open.md": "o\n"})
    (tmp_path / "locked").chmod(0)
    try:
        if os.geteuid() == 0:  # root lists anything; scan in a child without the override
            code = (
                "import json, sys; from pathlib import Path; from vaultlens.vault.scan import scan_vault\n"
                "r = scan_vault(Path(sys.argv[1]), 10**7)\n"
                "print(json.dumps([[f.path for f in r.files], {s.path: s.reason for s in r.skipped}]))"
            )
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", code, str(tmp_path)],
                    preexec_fn=without_root_file_access,
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
            except subprocess.SubprocessError as exc:
                pytest.skip(f"running as root and cannot drop CAP_DAC_OVERRIDE here ({exc})")
            assert proc.returncode == 0, proc.stderr
            files, skipped = json.loads(proc.stdout)
        else:
            files, skipped = _scan(tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert files == ["Open.md"]
    assert skipped == {"locked/": "cannot read folder: Permission denied"}


def test_missing_or_non_folder_vault_is_a_vault_error(tmp_path: Path) -> None:
    with pytest.raises(VaultError, match="does not exist"):
        check_vault(tmp_path / "nope")
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(VaultError, match="is not a folder"):
        check_vault(tmp_path / "file.md")
