"""Scanner: what Obsidian would show is listed; everything left out is reported with its reason."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

import pytest

from vaultlens.errors import VaultError
from vaultlens.vault.scan import (
    Skipped,
    VaultFile,
    VaultRules,
    check_vault,
    paths_sharing_a_file,
    printable_path,
    scan_vault,
)
from vl_support import run_without_file_access, write_vault

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


@pytest.mark.parametrize("broken", ["{not json", "[" * 200_000])  # the second nests past the recursion limit
def test_broken_app_json_is_not_fatal_and_is_reported(tmp_path: Path, broken: str) -> None:
    write_vault(tmp_path, {".obsidian/app.json": broken, "A.md": "a\n"})
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
            ".obsidian/app.json userIgnoreFilters is not a list; no excluded files are applied",
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
    files, skipped = _scan(vault)
    assert files == ["In.md"]
    assert skipped == {
        "leak.md": "symlink points outside the vault",
        "leakdir": "symlink points outside the vault",
    }


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
            proc = run_without_file_access([sys.executable, "-c", code, str(tmp_path)])
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


# ---- hostile vaults (issue 9): odd names, folders that cannot be entered, links into the vault ----------


def _touch(path: bytes, data: bytes = b"# note\n\ntext\n") -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _scan_without_root_access(code: str, vault: Path) -> object:
    """Run ``code`` (which prints JSON; ``vault`` is ``sys.argv[1]``) where permission bits apply:
    here when not root, else in a child without CAP_DAC_OVERRIDE / CAP_DAC_READ_SEARCH."""
    if os.geteuid() != 0:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, {"__name__": "__scan__", "argv": ["", str(vault)]})
        return json.loads(out.getvalue())
    proc = run_without_file_access([sys.executable, "-c", "import sys; argv = sys.argv\n" + code, str(vault)])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_names_that_are_not_utf8_or_hold_control_characters_are_skipped_printably(tmp_path: Path) -> None:
    write_vault(tmp_path, {"Good.md": "# good\n", "sub/Fine.md": "# fine\n"})
    root = os.fsencode(tmp_path)
    _touch(root + b"/bad\xffname.md")
    _touch(root + b"/sub/ctl\nname.md")
    _touch(root + b"/sub/evil\xe2\x80\xaegpj.md")  # U+202E RIGHT-TO-LEFT OVERRIDE
    _touch(root + b"/pic\xfe.png")  # an attachment is never read: left out silently
    os.mkdir(root + b"/dir\xfe")
    _touch(root + b"/dir\xfe/inside.md")
    expected = {
        "bad\\xffname.md": "file name is not valid UTF-8 (rename it)",
        "dir\\xfe/": "folder name is not valid UTF-8 (rename it)",
        "sub/ctl\\x0aname.md": "file name contains the control character U+000A (rename it)",
        "sub/evil\\u202egpj.md": "file name contains the bidirectional control character U+202E (rename it)",
    }
    files, skipped = _scan(tmp_path)
    assert files == ["Good.md", "sub/Fine.md"]
    assert skipped == expected
    json.dumps(skipped, ensure_ascii=False).encode("utf-8")  # storable and printable as it is

    # the watcher's path-level answers agree, for the raw names the OS reports
    rules = VaultRules(tmp_path, 10 * MB)
    assert rules.classify(os.fsdecode(b"bad\xffname.md")) == Skipped(
        "bad\\xffname.md", expected["bad\\xffname.md"]
    )
    assert rules.classify(os.fsdecode(b"dir\xfe/inside.md")) is None  # the scan never enters it
    assert rules.classify(os.fsdecode(b"pic\xfe.png")) is None
    assert rules.classify(os.fsdecode(b"gone\xff.md")) is None  # deleted: nothing to report
    sub = rules.scan("sub")
    assert [f.path for f in sub.files] == ["sub/Fine.md"]
    assert {s.path: s.reason for s in sub.skipped} == {
        k: v for k, v in expected.items() if k.startswith("sub/")
    }
    top = rules.scan(os.fsdecode(b"dir\xfe"))
    assert (top.files, top.skipped) == ([], [Skipped("dir\\xfe/", expected["dir\\xfe/"])])


def test_printable_path_escapes_only_what_no_note_path_may_hold() -> None:
    assert printable_path("Привет мир/🚀 plan.md") == "Привет мир/🚀 plan.md"
    assert printable_path(os.fsdecode(b"a\xff\x01b\xe2\x80\x8f.md")) == "a\\xff\\x01b\\u200f.md"
    assert printable_path("lone \ud800 surrogate") == "lone \\ud800 surrogate"


def test_a_folder_that_can_be_listed_but_not_entered_is_skipped(tmp_path: Path) -> None:
    write_vault(tmp_path, {"locked/Note.md": "n\n", "locked/deeper/More.md": "m\n", "Open.md": "o\n"})
    (tmp_path / "locked").chmod(0o644)  # r without x: its names can be listed, nothing in it opened
    code = (
        "import json; from pathlib import Path; from vaultlens.vault.scan import VaultRules\n"
        "rules = VaultRules(Path(argv[1]), 10**7)\n"
        "full, part = rules.scan(), rules.scan('locked')\n"
        "print(json.dumps({\n"
        "    'files': [f.path for f in full.files],\n"
        "    'skipped': {s.path: s.reason for s in full.skipped},\n"
        "    'part': [[f.path for f in part.files], {s.path: s.reason for s in part.skipped}],\n"
        "    'classify': [repr(rules.classify(p)) for p in ('locked/Note.md', 'locked/deeper/More.md')],\n"
        "}))"
    )
    try:
        found = _scan_without_root_access(code, tmp_path)
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert found == {
        "files": ["Open.md"],
        "skipped": {"locked/": "cannot read folder: Permission denied"},
        "part": [[], {"locked/": "cannot read folder: Permission denied"}],
        "classify": ["None", "None"],
    }


def test_any_os_error_while_walking_is_a_skip_never_a_crash(tmp_path: Path) -> None:
    write_vault(tmp_path, {"Top.md": "top\n"})
    fd = os.open(tmp_path, os.O_RDONLY)  # folders nested past PATH_MAX: lstat says ENAMETOOLONG
    try:
        for i in range(20):
            name = f"{i:02d}" + "d" * 250
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        note = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.close(note)
    finally:
        os.close(fd)
    chain = tmp_path / "chain0.md"  # more links in a row than the kernel follows: ELOOP
    for i in range(50):
        (tmp_path / f"chain{i}.md").symlink_to(f"chain{i + 1}.md")
    (tmp_path / "chain50.md").write_text("end\n")
    files, skipped = _scan(tmp_path)
    assert files == ["Top.md", "chain50.md"]
    assert skipped[chain.name] == "symlink loop"
    too_long = [p for p, why in skipped.items() if why == "cannot read: File name too long"]
    assert len(too_long) == 1 and len(os.fsencode(tmp_path / too_long[0])) > 4096
    rules = VaultRules(tmp_path, 10 * MB)
    assert rules.classify(too_long[0] + "/deep.md") is None


def test_symlinks_into_the_vault_are_skipped_with_the_path_they_duplicate(tmp_path: Path) -> None:
    write_vault(
        tmp_path,
        {
            "Real/Note.md": "n\n",
            "Projects/2024/Plan.md": "p\n",
            "assets/pic.png": b"\x89PNG",
            "Private/D.md": "d\n",
        },
    )
    write_vault(tmp_path, {".vaultlensignore": "Private/\n"})
    (tmp_path / "A projects").symlink_to("Projects/2024")  # sorts before its target
    (tmp_path / "Note alias.md").symlink_to("Real/Note.md")
    (tmp_path / "pic.png").symlink_to("assets/pic.png")  # an attachment: left out silently
    (tmp_path / "Public").symlink_to("Private")  # would show what .vaultlensignore hides
    (tmp_path / "loopd").mkdir()
    (tmp_path / "loopd" / "up").symlink_to("..")
    (tmp_path / "Projects" / "2024" / "back").symlink_to("../..")
    files, skipped = _scan(tmp_path)
    assert files == ["Projects/2024/Plan.md", "Real/Note.md", "assets/pic.png"]
    assert skipped == {
        "A projects/": "symlink into the vault: same files as Projects/2024/",
        "Note alias.md": "symlink into the vault: same file as Real/Note.md",
        "Public/": "symlink into the vault: same files as Private/",
        "Private/": "ignored by .vaultlensignore",
        "loopd/up/": "symlink loop (folder already visited)",
        "Projects/2024/back/": "symlink loop (folder already visited)",
    }


def test_a_folder_link_to_the_vault_root_never_lists_the_vault_again(tmp_path: Path) -> None:
    # issue 9 #4: `mkdir loopd && ln -s .. loopd/up` under `watch` indexed every note twice
    write_vault(tmp_path, {"A.md": "a\n", "Projects/B.md": "b\n", "Projects/Sub/C.md": "c\n"})
    (tmp_path / "loopd").mkdir()
    (tmp_path / "loopd" / "up").symlink_to("..")
    (tmp_path / "loopd" / "side").symlink_to("../Projects")
    rules = VaultRules(tmp_path, 10 * MB)
    part = rules.scan("loopd")
    assert part.files == []
    assert {s.path: s.reason for s in part.skipped} == {
        "loopd/side/": "symlink into the vault: same files as Projects/",
        "loopd/up/": "symlink loop (folder already visited)",
    }
    for under in ("loopd/up", "loopd/side"):
        assert [s.path for s in rules.scan(under).skipped] == [under + "/"]
        assert rules.scan(under).files == []
    for rel in ("loopd/up/A.md", "loopd/up/Projects/B.md", "loopd/side/Sub/C.md", "loopd/up/loopd/up/A.md"):
        assert rules.classify(rel) is None
        assert rules.scan(rel.rpartition("/")[0]).files == []
    assert rules.classify("loopd/up") == Skipped("loopd/up/", "symlink loop (folder already visited)")
    assert [f.path for f in rules.scan().files] == ["A.md", "Projects/B.md", "Projects/Sub/C.md"]


def test_path_level_answers_equal_the_full_scan_everywhere(tmp_path: Path) -> None:
    """Every file ``classify`` is asked about and every folder ``scan(folder)`` lists gets exactly
    the answer of the full scan, so a watched index stays equal to a freshly scanned one."""
    write_vault(
        tmp_path,
        {
            ".obsidian/app.json": json.dumps({"userIgnoreFilters": ["Archive/"]}),
            ".vaultlensignore": "*.tmp.md\n",
            "A.md": "a\n",
            "x.tmp.md": "t\n",
            "Archive/Old.md": "o\n",
            "Projects/B.md": "b\n",
            "Projects/Sub/C.md": "c\n",
            "Projects/Sub/pic.png": b"\x89PNG",
            "Projects/.hidden/H.md": "h\n",
            "Big.md": "x" * 3000,
        },
    )
    (tmp_path / "loopd").mkdir()
    (tmp_path / "loopd" / "up").symlink_to("..")
    (tmp_path / "Projects" / "Sub" / "again").symlink_to("..")
    (tmp_path / "alias.md").symlink_to("Projects/B.md")
    (tmp_path / "dangling.md").symlink_to("missing.md")
    _touch(os.fsencode(tmp_path) + b"/Projects/bad\xff.md")
    os.mkfifo(tmp_path / "Projects" / "pipe.md")
    rules = VaultRules(tmp_path, 2000)
    full = rules.scan()
    answers: dict[str, VaultFile | Skipped] = {f.path: f for f in full.files}
    answers.update({s.path: s for s in full.skipped})
    asked = 0
    for dirpath, dirnames, filenames in os.walk(tmp_path):  # symlinks are not followed
        for name in dirnames + filenames:
            rel = (Path(dirpath) / name).relative_to(tmp_path).as_posix()
            is_dir = name in dirnames
            key = printable_path(rel) + ("/" if is_dir else "")
            assert rules.classify(rel) == answers.get(key), rel
            asked += 1
            if is_dir and not (tmp_path / rel).is_symlink():
                prefix = key
                part = rules.scan(rel)
                expected_files = [f for f in full.files if f.path.startswith(prefix)]
                expected_skips = [s for s in full.skipped if s.path.startswith(prefix)]
                if isinstance(answers.get(key), Skipped):  # the folder itself is skipped
                    expected_files, expected_skips = [], [s for s in [answers[key]] if isinstance(s, Skipped)]
                assert part.files == expected_files, rel
                assert sorted(part.skipped, key=lambda s: s.path) == sorted(
                    expected_skips, key=lambda s: s.path
                )
    assert asked > 20


def test_paths_sharing_a_file_finds_a_note_indexed_under_two_paths(tmp_path: Path) -> None:
    write_vault(tmp_path, {"Real/Note.md": "n\n", "Other.md": "o\n"})
    (tmp_path / "loopd").mkdir()
    (tmp_path / "loopd" / "up").symlink_to("..")
    (tmp_path / "alias.md").symlink_to("Real/Note.md")
    rels = ["Real/Note.md", "Other.md", "loopd/up/Real/Note.md", "alias.md", "loopd/up/Other.md", "gone.md"]
    assert paths_sharing_a_file(tmp_path, rels) == {
        "Other.md": ["Other.md", "loopd/up/Other.md"],
        "Real/Note.md": ["Real/Note.md", "alias.md", "loopd/up/Real/Note.md"],
    }
    assert paths_sharing_a_file(tmp_path, ["Real/Note.md", "Other.md"]) == {}
