"""safewrite: plan, exact diff, journal first, compare-and-swap, read back, undo, recovery.

Real files on disk, real journals under the test's VAULTLENS_HOME, real kill -9 of a child
process at the two moments a crash can split a write from its record.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import vaultlens
from vaultlens.config import paths
from vaultlens.errors import (
    NoteOpenInObsidian,
    UndoRefused,
    VaultError,
    WriteConflict,
    WriteRefused,
)
from vaultlens.fsutil import sha256_hex
from vaultlens.safewrite import Journal, writer
from vaultlens.services.changing import writes
from vaultlens.testing import HashingEmbeddingProvider
from vl_support import cli_env, run_cli, snapshot, write_vault


def app_for(vault: Path) -> vaultlens.App:
    return vaultlens.App.open(vault, provider=HashingEmbeddingProvider())


def twenty(root: Path) -> Path:
    return write_vault(root, {f"f{i % 3}/n{i:02d}.md": f"# Note {i}\n\nText {i}.\n" for i in range(20)})


def state_of(app: vaultlens.App, op_id: str) -> str:
    """An operation's state as `vaultlens history` lists it."""
    return next(e.state for e in writes.history(app.vault) if e.op_id == op_id)


def apply_confirmed(
    app: vaultlens.App, planned: writes.Planned, allow_open: bool = False
) -> writes.Entry | writes.Group:
    return writes.apply(app.vault, planned.entry.op_id, sha256_hex(planned.diff), allow_open=allow_open)


def test_apply_changes_only_the_target_and_undo_restores_every_byte(tmp_path: Path) -> None:
    vault = twenty(tmp_path / "v")
    app = app_for(vault)
    original = snapshot(vault)
    target = vault / "f1/n04.md"
    planned = writes.plan_write(
        app.vault, "f1/n04.md", target.read_bytes() + b"\nSee [[n05]].\n", "add a link"
    )
    assert snapshot(vault) == original, "planning wrote nothing"
    assert "+See [[n05]]." in planned.diff
    done = apply_confirmed(app, planned)
    assert done.state == "applied"
    after = snapshot(vault)
    assert {k for k in original if original[k] != after[k]} == {"f1/n04.md"}
    assert set(after) == set(original), "no temporary file is left behind"
    undo = writes.plan_undo(app.vault, done.op_id)
    assert apply_confirmed(app, undo).state == "applied"
    assert snapshot(vault) == original
    states = {e.op_id: e.state for e in writes.history(app.vault)}
    assert states == {done.op_id: "undone", undo.entry.op_id: "applied"}


def test_a_note_changed_between_preview_and_apply_is_not_written(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    app = app_for(vault)
    planned = writes.plan_write(app.vault, "a.md", b"one\ntwo\n", "append")
    (vault / "a.md").write_bytes(b"one\nmine\n")  # the user's edit after the diff was shown
    with pytest.raises(WriteConflict, match="changed since the diff was shown") as caught:
        apply_confirmed(app, planned)
    assert caught.value.exit_code == 9 and caught.value.to_dict()["op_id"] == planned.entry.op_id
    assert (vault / "a.md").read_bytes() == b"one\nmine\n"
    assert state_of(app, planned.entry.op_id) == "conflict"


def test_whitespace_alone_is_a_change_compare_and_swap_does_not_normalise(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": b"one\r\ntwo\r\n"})
    app = app_for(vault)
    planned = writes.plan_write(app.vault, "a.md", b"one\r\ntwo\r\nthree\r\n", "append")
    (vault / "a.md").write_bytes(b"one\ntwo\n")  # same text once normalised, other bytes
    with pytest.raises(WriteConflict):
        apply_confirmed(app, planned)
    assert (vault / "a.md").read_bytes() == b"one\ntwo\n"


@pytest.mark.parametrize(
    "original",
    [b"\xef\xbb\xbf# BOM note\r\n\r\nBody line\r\n", b"# CR note\r\nno final newline", b"# plain\n\ntext\n"],
    ids=["bom-crlf", "crlf-no-final-newline", "lf"],
)
def test_crlf_and_bom_round_trip_byte_for_byte(tmp_path: Path, original: bytes) -> None:
    vault = write_vault(tmp_path / "v", {"n.md": original})
    app = app_for(vault)
    eol = b"\r\n" if b"\r\n" in original else b"\n"
    changed = original.replace(b"# ", b"# Edited ", 1)
    planned = writes.plan_write(app.vault, "n.md", changed, "rename heading")
    if original.startswith(b"\xef\xbb\xbf"):
        assert "<BOM>" in planned.diff
    if eol == b"\r\n":
        assert "<CR>" in planned.diff
    done = apply_confirmed(app, planned)
    assert (vault / "n.md").read_bytes() == changed
    apply_confirmed(app, writes.plan_undo(app.vault, done.op_id))
    assert (vault / "n.md").read_bytes() == original


def test_undo_after_a_later_edit_is_refused_and_keeps_the_edit(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    app = app_for(vault)
    done = apply_confirmed(app, writes.plan_write(app.vault, "a.md", b"one\ntwo\n", "append"))
    (vault / "a.md").write_bytes(b"one\ntwo\nthree (mine)\n")
    with pytest.raises(UndoRefused, match="has changed since") as caught:
        writes.plan_undo(app.vault, done.op_id)
    assert "later edits" in caught.value.message
    assert (vault / "a.md").read_bytes() == b"one\ntwo\nthree (mine)\n"
    assert state_of(app, done.op_id) == "applied"


def test_a_new_note_is_created_once_and_its_undo_removes_it(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    app = app_for(vault)
    planned = writes.plan_write(app.vault, "Maps/New MOC.md", b"# MOC\n", "new note")
    assert planned.diff.startswith("--- /dev/null\n+++ b/Maps/New MOC.md\n")
    done = apply_confirmed(app, planned)
    assert (vault / "Maps/New MOC.md").read_bytes() == b"# MOC\n"
    apply_confirmed(app, writes.plan_undo(app.vault, done.op_id))
    assert not (vault / "Maps/New MOC.md").exists()


def test_a_new_note_whose_path_appeared_meanwhile_is_refused(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    app = app_for(vault)
    planned = writes.plan_write(app.vault, "b.md", b"# mine\n", "new note")
    (vault / "b.md").write_bytes(b"the user's own b\n")
    with pytest.raises(WriteConflict, match="a file by that name exists now"):
        apply_confirmed(app, planned)
    assert (vault / "b.md").read_bytes() == b"the user's own b\n"


def test_permissions_are_kept(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    os.chmod(vault / "a.md", 0o640)
    app = app_for(vault)
    apply_confirmed(app, writes.plan_write(app.vault, "a.md", b"two\n", "edit"))
    assert (vault / "a.md").stat().st_mode & 0o7777 == 0o640


def test_a_read_only_note_is_refused_at_plan_and_at_apply(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n", "b.md": "one\n"})
    app = app_for(vault)
    os.chmod(vault / "a.md", 0o444)
    with pytest.raises(WriteRefused, match="a.md is read-only"):
        writes.plan_write(app.vault, "a.md", b"two\n", "edit")
    planned = writes.plan_write(app.vault, "b.md", b"two\n", "edit")
    os.chmod(vault / "b.md", 0o444)  # made read-only while the diff was on screen
    with pytest.raises(WriteRefused, match="b.md is read-only"):
        apply_confirmed(app, planned)
    assert (vault / "a.md").read_bytes() == (vault / "b.md").read_bytes() == b"one\n"
    # it used to stay `writing`: the next command reported an interrupted write that never was
    entry = writes.journal(app.vault).entry(planned.entry.op_id)
    assert entry.state == "not_applied" and "read-only" in entry.events[-1]["detail"]
    assert writes.recover(app.vault) == [], "nothing to settle: the refusal was settled when it happened"


@pytest.mark.parametrize("kind", ["new", "edit"])
def test_a_folder_swapped_for_a_symlink_after_the_check_never_leads_the_write_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Between the path check and the write a folder becomes a link out of the vault: the write
    used to follow it (the note's folder is now opened once, each component without following)."""
    vault = write_vault(tmp_path / "v", {"Sub/n.md": "one\n", "a.md": "a\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    if kind == "edit":
        (outside / "n.md").write_bytes(b"one\n")  # the same bytes: every comparison passes through the link
    app = app_for(vault)
    path = "Sub/new.md" if kind == "new" else "Sub/n.md"
    planned = writes.plan_write(app.vault, path, b"written\n", "write", None if kind == "new" else ...)
    real_swap = writer._swap

    def swap_the_folder(*args: object) -> None:  # after state_of checked the path, before the write
        os.rename(vault / "Sub", tmp_path / "Sub-moved")
        os.symlink(outside, vault / "Sub")
        real_swap(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "_swap", swap_the_folder)
    outside_before = snapshot(outside)
    with pytest.raises(VaultError, match="replaced by a symbolic link"):
        apply_confirmed(app, planned)
    assert snapshot(outside) == outside_before, "nothing written outside the vault"
    assert writes.journal(app.vault).entry(planned.entry.op_id).state == "not_applied"


def test_only_the_confirmed_diff_is_written(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    app = app_for(vault)
    planned = writes.plan_write(app.vault, "a.md", b"two\n", "edit")
    with pytest.raises(WriteRefused, match="not operation"):
        writes.apply(app.vault, planned.entry.op_id, sha256_hex("some other diff"))
    assert (vault / "a.md").read_bytes() == b"one\n"
    apply_confirmed(app, planned)
    with pytest.raises(WriteRefused, match="is applied"):
        apply_confirmed(app, planned)  # never twice


def obsidian_open(vault: Path, *files: str) -> None:
    leaves = [
        {"id": str(i), "type": "leaf", "state": {"type": "markdown", "state": {"file": f, "mode": "source"}}}
        for i, f in enumerate(files)
    ]
    workspace = {
        "main": {"id": "m", "type": "split", "children": [{"id": "t", "type": "tabs", "children": leaves}]},
        "lastOpenFiles": ["closed.md"],
    }
    (vault / ".obsidian").mkdir(exist_ok=True)
    (vault / ".obsidian/workspace.json").write_text(json.dumps(workspace))


def test_a_note_open_in_obsidian_is_refused_unless_overridden(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n", "closed.md": "x\n"})
    obsidian_open(vault, "a.md")
    app = app_for(vault)
    planned = writes.plan_write(app.vault, "a.md", b"two\n", "edit")
    with pytest.raises(NoteOpenInObsidian, match="open in Obsidian"):
        apply_confirmed(app, planned)
    assert (vault / "a.md").read_bytes() == b"one\n"
    apply_confirmed(app, writes.plan_write(app.vault, "closed.md", b"y\n", "edit"))  # recently closed: fine
    apply_confirmed(app, planned, allow_open=True)
    assert (vault / "a.md").read_bytes() == b"two\n"


def test_an_unreadable_workspace_is_not_taken_as_nothing_open(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n", ".obsidian/workspace.json": "{ half written"})
    app = app_for(vault)
    with pytest.raises(NoteOpenInObsidian, match="Cannot tell"):
        apply_confirmed(app, writes.plan_write(app.vault, "a.md", b"two\n", "edit"))
    assert (vault / "a.md").read_bytes() == b"one\n"


@pytest.mark.parametrize(
    "path", ["../outside.md", "/etc/passwd", "a/../../x.md", ".obsidian/app.json", "a\\b.md", "x\x00.md"]
)
def test_paths_outside_the_vault_are_refused(tmp_path: Path, path: str) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    with pytest.raises(VaultError, match="Refusing note path"):
        writes.plan_write(vault, path, b"x\n", "escape")
    assert not (tmp_path / "outside.md").exists()


def test_a_workspace_nested_past_any_limit_refuses_the_write_without_a_traceback(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n", ".obsidian/workspace.json": "[" * 200_000})
    app = app_for(vault)
    planned = writes.plan_write(app.vault, "a.md", b"one\ntwo\n", "append")
    with pytest.raises(NoteOpenInObsidian, match="cannot parse"):
        apply_confirmed(app, planned)
    assert (vault / "a.md").read_bytes() == b"one\n"


def test_a_damaged_journal_entry_is_a_clear_error(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    app = app_for(vault)
    planned = writes.plan_write(app.vault, "a.md", b"one\ntwo\n", "append")
    entry = writes.journal(app.vault).root / planned.entry.op_id / "entry.json"
    entry.write_bytes(b'{"op_id": "\xff\xfe"}')
    result = run_cli(["history", "--vault", str(vault)])
    assert result.exit_code == 4 and "Traceback" not in result.output
    said = " ".join(result.stderr.split())
    assert "journal entry" in said and "is damaged" in said and planned.entry.op_id in said


def test_a_plan_based_on_bytes_the_note_no_longer_holds_is_refused(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\nmine\n", "taken.md": "someone's\n"})
    app = app_for(vault)
    with pytest.raises(WriteConflict, match="a.md changed after its text was read"):
        writes.plan_write(app.vault, "a.md", b"one\nlink\n", "link", based_on=b"one\n")
    with pytest.raises(WriteConflict, match="taken.md exists now"):  # to be new, e.g. a MOC
        writes.plan_write(app.vault, "taken.md", b"# Map\n", "map", based_on=None)
    assert writes.history(app.vault) == []
    assert writes.plan_write(app.vault, "a.md", b"one\nmine\nlink\n", "link", based_on=b"one\nmine\n")


def test_a_link_on_the_path_is_never_written_through(tmp_path: Path) -> None:
    """A diff names one path; a symbolic link there (to another note, or a linked folder) would put
    the change into a file of another name, or delete it on the undo of a creation."""
    vault = write_vault(tmp_path / "v", {"tech/Caching.md": "# Caching\n\nKeep this.\n", "a.md": "one\n"})
    app = app_for(vault)
    (vault / "Audits").mkdir()
    os.symlink("../tech/Caching.md", vault / "Audits/report.md")  # a note that is a link
    os.symlink("tech", vault / "linked")  # a folder that is a link
    before = snapshot(vault)
    for path in ("Audits/report.md", "linked/Caching.md", "linked/new.md"):
        with pytest.raises(VaultError, match="symbolic link on its path"):
            writes.plan_write(app.vault, path, b"# Report\n", "write the report")
    assert snapshot(vault) == before
    # planned on a real note, which is then swapped for a link to another note with the same bytes
    planned = writes.plan_write(app.vault, "a.md", b"one\ntwo\n", "append")
    (vault / "b.md").write_bytes(b"one\n")
    (vault / "a.md").unlink()
    os.symlink("b.md", vault / "a.md")
    with pytest.raises(VaultError, match="symbolic link on its path"):
        apply_confirmed(app, planned)
    assert (vault / "b.md").read_bytes() == b"one\n"


def test_a_symlinked_folder_out_of_the_vault_is_refused_for_new_notes(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    (tmp_path / "elsewhere").mkdir()
    (vault / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(VaultError, match="leads outside the vault|not a folder inside the vault"):
        writes.plan_write(vault, "link/new.md", b"x\n", "escape")
    assert list((tmp_path / "elsewhere").iterdir()) == []


# ---- kill -9 between the journal and the write, and between the write and its mark -----------------

CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    import vaultlens
    from vaultlens.safewrite import writer, journal
    from vaultlens.services.changing import writes
    from vaultlens.testing import HashingEmbeddingProvider

    vault, op_id, diff_sha, moment = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    ready = Path(sys.argv[5])

    def stop_here():
        ready.write_text("ready")
        time.sleep(60)

    if moment == "before-write":
        real_swap = writer._swap
        def swap(target, op, *rest):
            stop_here()
            real_swap(target, op, *rest)
        writer._swap = swap
    elif moment == "before-rename":  # the temporary file is written and fsynced, the note not replaced
        real_replace = os.replace
        def replace(src, dst, **at):
            if at.get("dst_dir_fd") is not None:  # a note (relative to its folder), not the journal
                stop_here()
            real_replace(src, dst, **at)
        os.replace = replace
    else:
        real_set = journal.Journal.set_state
        def set_state(self, entry, state, *a, **k):
            if state == "applied":
                stop_here()
            return real_set(self, entry, state, *a, **k)
        journal.Journal.set_state = set_state

    app = vaultlens.App.open(vault, provider=HashingEmbeddingProvider())
    writes.apply(app.vault, op_id, diff_sha)
    """
)


@pytest.mark.parametrize(
    ("moment", "found", "content"),
    [
        ("before-write", "not_applied", b"one\n"),
        ("before-rename", "not_applied", b"one\n"),
        ("before-mark", "applied", b"one\ntwo\n"),
    ],
)
def test_kill_9_mid_apply_is_recovered_as_what_really_happened(
    tmp_path: Path, isolated_env: Path, moment: str, found: str, content: bytes
) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n", "b.md": "other\n"})
    app = app_for(vault)
    planned = writes.plan_write(app.vault, "a.md", b"one\ntwo\n", "append")
    ready = tmp_path / "ready"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(vault),
            planned.entry.op_id,
            sha256_hex(planned.diff),
            moment,
            str(ready),
        ],
        env=cli_env(isolated_env),
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert child.poll() is None, "the child ended before reaching the kill point"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert writes.journal(app.vault).entry(planned.entry.op_id).state == "writing"
    before_recovery = snapshot(vault)
    assert (vault / "a.md").read_bytes() == content
    litter = [k for k in before_recovery if k.endswith(".tmp")]
    assert len(litter) == (1 if moment == "before-rename" else 0)
    recovered = writes.recover(app.vault)
    assert [(r.op_id, r.state) for r in recovered] == [(planned.entry.op_id, found)]
    after_recovery = snapshot(vault)
    assert after_recovery == {k: v for k, v in before_recovery.items() if k not in litter}, (
        "recovery writes no note; it only removes the killed writer's temporary file"
    )
    assert state_of(app, planned.entry.op_id) == found
    assert writes.recover(app.vault) == [], "settled once"


# ---- Ctrl-C during `vaultlens apply`: said, settled, no litter ---------------------------------------

INTERRUPTED_CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from vaultlens.cli.main import main

    vault, moment, ready = Path(sys.argv[1]).resolve(), sys.argv[2], Path(sys.argv[3])
    real_replace = os.replace

    def replace(src, dst, **at):
        into_vault = at.get("dst_dir_fd") is not None  # a note (relative to its folder), not the journal
        if into_vault and moment == "after-rename":
            real_replace(src, dst, **at)
        if into_vault:
            ready.write_text("ready")
            time.sleep(60)  # Ctrl-C lands here
        real_replace(src, dst, **at)

    os.replace = replace
    sys.argv = ["vaultlens", *sys.argv[4:]]
    main()
    """
)


@pytest.mark.parametrize(
    ("moment", "state", "content", "said"),
    [
        ("after-rename", "applied", b"one\ntwo\n", "after the write: a.md was written"),
        ("before-rename", "not_applied", b"one\n", "before the write: a.md is unchanged"),
    ],
)
def test_ctrl_c_during_apply_says_whether_the_note_was_written_and_settles_the_entry(
    tmp_path: Path, isolated_env: Path, moment: str, state: str, content: bytes, said: str
) -> None:
    """It used to exit 130 in silence with the entry left `writing` (and `history` showing that)."""
    vault = write_vault(tmp_path / "v", {"a.md": "one\n", "b.md": "other\n"})
    planned = writes.plan_write(app_for(vault).vault, "a.md", b"one\ntwo\n", "append")
    op_id = planned.entry.op_id
    ready = tmp_path / "ready"
    child = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_CHILD, str(vault), moment, str(ready),
         "apply", op_id, "--yes", "--vault", str(vault)],
        env=cli_env(isolated_env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130
    said_text = " ".join(err.split())
    assert said in said_text and f"operation {op_id} is {state.replace('_', ' ')}" in said_text, err
    assert ("vaultlens undo " + op_id in said_text) == (state == "applied")
    assert "Traceback" not in err
    assert (vault / "a.md").read_bytes() == content
    assert not [k for k in snapshot(vault) if k.endswith(".tmp")], "no temporary file left"
    assert writes.journal(vault).entry(op_id).state == state, "settled by apply itself, not later"
    listed = json.loads(run_cli(["history", "--json", "--vault", str(vault)]).stdout)
    assert [(e["op_id"], e["state"]) for e in listed] == [(op_id, state)]
    if state == "applied":
        undone = run_cli(["undo", op_id, "--yes", "--vault", str(vault)])
        assert undone.exit_code == 0, undone.output
        assert (vault / "a.md").read_bytes() == b"one\n"


def test_ctrl_c_at_the_question_says_nothing_was_written(tmp_path: Path, isolated_env: Path) -> None:
    """A real terminal (a pty): Ctrl-C at "Write this change?" used to print only "Aborted." (exit 1)."""
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    op_id = writes.plan_write(vault, "a.md", b"one\ntwo\n", "append").entry.op_id
    pid, fd = pty.fork()
    if pid == 0:  # the child: vaultlens on the pty
        os.execve(sys.executable, [sys.executable, "-m", "vaultlens", "apply", op_id, "--vault", str(vault)],
                  cli_env(isolated_env))  # fmt: skip
    seen, deadline = b"", time.monotonic() + 60
    while b"[y/N]" not in seen:
        assert time.monotonic() < deadline, seen
        seen += os.read(fd, 4096)
    status = None
    while status is None:  # Ctrl-C, again each second: one typed while the prompt set up the line may be lost
        assert time.monotonic() < deadline, seen
        os.write(fd, b"\x03")
        with contextlib.suppress(OSError):  # EIO once the child has closed the pty
            while select.select([fd], [], [], 1.0)[0] and (chunk := os.read(fd, 4096)):
                seen += chunk
        done, code = os.waitpid(pid, os.WNOHANG)
        status = code if done else None
    assert os.waitstatus_to_exitcode(status) == 130
    assert "nothing was written" in " ".join(seen.decode(errors="replace").split())
    assert (vault / "a.md").read_bytes() == b"one\n"
    assert listed(vault) == [(op_id, "planned")]


def left_writing(tmp_path: Path) -> tuple[Path, Journal, str]:
    """A vault whose one planned append is marked `writing`: what a crash right after the mark leaves."""
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    planned = writes.plan_write(app_for(vault).vault, "a.md", b"one\ntwo\n", "append")
    j = writes.journal(vault)
    j.set_state(j.entry(planned.entry.op_id), "writing")
    return vault, j, planned.entry.op_id


def test_history_settles_a_write_a_crash_left_writing(tmp_path: Path) -> None:
    """After kill -9 (or a second Ctrl-C) `history` itself tells the truth; the note is only read."""
    vault, j, op_id = left_writing(tmp_path)
    (vault / "a.md").write_bytes(b"one\ntwo\n")  # ... after the rename
    before = snapshot(vault)
    assert [e.state for e in writes.history(vault)] == ["applied"]
    assert snapshot(vault) == before
    with j.locked():  # a live writer: its `writing` is the truth, and history only reads
        j.set_state(j.entry(op_id), "writing")
        assert [e.state for e in writes.history(vault)] == ["writing"]


def test_recovery_reports_a_note_edited_after_the_crash_as_diverged(tmp_path: Path) -> None:
    vault, _, _ = left_writing(tmp_path)
    (vault / "a.md").write_bytes(b"something else\n")
    [finding] = writes.recover(vault)
    assert finding.state == "diverged"
    assert (vault / "a.md").read_bytes() == b"something else\n"


def test_an_undo_asked_for_again_reuses_its_pending_plan(tmp_path: Path) -> None:
    """Every declined or unconfirmed `undo` used to record one more `planned` entry."""
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    op_id = applied_in(vault)
    for _ in range(3):
        declined = run_cli(["undo", op_id, "--vault", str(vault)])  # no terminal to answer: not confirmed
        assert declined.exit_code == 9, declined.output
    [(undo_id, state)] = [e for e in listed(vault) if e[0] != op_id]
    assert state == "planned"
    assert run_cli(["undo", op_id, "--yes", "--vault", str(vault)]).exit_code == 0
    assert sorted(listed(vault)) == sorted([(op_id, "undone"), (undo_id, "applied")])
    again = writes.plan_write(vault, "a.md", b"one\ntwo\n", "append")  # the same change planned twice
    assert writes.plan_write(vault, "a.md", b"one\ntwo\n", "append").entry.op_id == again.entry.op_id


# ---- the journal follows the vault: moved, renamed, opened through a symlink ---------------------------


def applied_in(vault: Path) -> str:
    """Plan and apply one change to ``a.md`` through the CLI; its operation id."""
    planned = writes.plan_write(vault, "a.md", b"one\ntwo\n", "append")
    done = run_cli(["apply", planned.entry.op_id, "--yes", "--vault", str(vault)])
    assert done.exit_code == 0, done.output
    return planned.entry.op_id


def listed(vault: Path) -> list[tuple[str, str]]:
    out = run_cli(["history", "--json", "--vault", str(vault)])
    assert out.exit_code == 0, out.output
    return [(e["op_id"], e["state"]) for e in json.loads(out.stdout)]


@pytest.mark.parametrize("how", ["rename", "copy-then-delete"])
def test_history_and_undo_follow_a_vault_folder_that_moved(tmp_path: Path, how: str) -> None:
    """Keyed by the absolute path, the journal was lost after `mv`: history empty, undo "no operation".
    A rename keeps the folder's inode; a move to another file system is a copy and a delete, found
    by the notes still holding what the journal wrote."""
    vault = write_vault(tmp_path / "old place" / "v", {"a.md": "one\n", "b.md": "other\n"})
    op_id = applied_in(vault)
    moved = tmp_path / "new place" / "renamed"
    moved.parent.mkdir()
    if how == "rename":
        vault.rename(moved)
    else:
        shutil.copytree(vault, moved)
        shutil.rmtree(vault)
    assert listed(moved) == [(op_id, "applied")]
    undone = run_cli(["undo", op_id, "--yes", "--vault", str(moved)])
    assert undone.exit_code == 0, undone.output
    assert (moved / "a.md").read_bytes() == b"one\n"
    assert [state for _, state in listed(moved)] == ["undone", "applied"]
    assert not (tmp_path / "old place" / "v").exists(), "nothing was written at the old path"


def test_a_new_vault_at_a_moved_vaults_old_path_gets_a_journal_of_its_own(tmp_path: Path) -> None:
    """The id beside the old path's index names the moved vault's journal: a new folder there must
    not take it over (and leave the moved vault without its history)."""
    vault = write_vault(tmp_path / "x", {"a.md": "one\n"})
    op_id = applied_in(vault)
    moved = tmp_path / "y"
    vault.rename(moved)
    stranger = write_vault(tmp_path / "x", {"c.md": "someone else\n"})
    assert listed(stranger) == [], "another folder at the old path"
    assert listed(moved) == [(op_id, "applied")], "the moved vault keeps its history"
    planned = writes.plan_write(stranger, "c.md", b"changed\n", "edit").entry.op_id
    assert listed(stranger) == [(planned, "planned")]
    assert listed(moved) == [(op_id, "applied")]


RACING_PLANNER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from vaultlens.services.changing import writes

    vault, note, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    (go.parent / f"ready-{note}").touch()
    while not go.exists():
        time.sleep(0.001)
    writes.plan_write(vault, note, b"changed\\n", "change")
    """
)


def test_processes_planning_a_vaults_first_changes_at_once_share_one_journal(
    tmp_path: Path, isolated_env: Path
) -> None:
    """Each would otherwise make an id of its own, and history would show only the last one's."""
    notes = [f"n{i}.md" for i in range(6)]
    vault = write_vault(tmp_path / "v", dict.fromkeys(notes, "one\n"))
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", RACING_PLANNER, str(vault), note, str(go)], env=cli_env(isolated_env)
        )
        for note in notes
    ]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{note}").exists() for note in notes):  # every child imported, waiting
        assert time.monotonic() < deadline, "the children did not start"
        time.sleep(0.01)
    go.write_text("go")
    assert [child.wait(timeout=60) for child in children] == [0] * len(notes)
    assert sorted(e.path for e in writes.history(vault)) == notes


def test_a_symlinked_path_and_the_real_one_share_one_journal(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    link = tmp_path / "link-to-v"
    link.symlink_to(vault, target_is_directory=True)
    op_id = applied_in(link)
    assert listed(vault) == listed(link) == [(op_id, "applied")]
    assert run_cli(["undo", op_id, "--yes", "--vault", str(vault)]).exit_code == 0
    assert (vault / "a.md").read_bytes() == b"one\n"


def test_a_copy_beside_the_original_keeps_a_journal_of_its_own(tmp_path: Path) -> None:
    """Only a vault that is gone from its recorded path passes its journal on to where it went."""
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    op_id = applied_in(vault)
    copy = tmp_path / "copy"
    shutil.copytree(vault, copy)
    assert listed(copy) == []
    assert listed(vault) == [(op_id, "applied")]


def test_a_journal_kept_under_the_vault_path_is_adopted(tmp_path: Path, isolated_env: Path) -> None:
    """Journals written before ids were keyed by the path: the first command after the upgrade finds
    that one and records an id for it, so a later move is followed too."""
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    op_id = applied_in(vault)
    [journal] = [p for p in (isolated_env / "journals").iterdir() if p.is_dir()]
    (journal / "vault.json").unlink()
    for id_file in (isolated_env / "indexes").glob("*/vault-id"):
        id_file.unlink()
    journal.rename(paths.legacy_journal_dir(vault))  # the older layout
    assert listed(vault) == [(op_id, "applied")]
    vault.rename(tmp_path / "moved")
    assert listed(tmp_path / "moved") == [(op_id, "applied")]


# ---- the CLI ------------------------------------------------------------------------------------------


def test_cli_apply_shows_the_diff_and_refuses_without_confirmation(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    planned = writes.plan_write(vault, "a.md", b"one\ntwo\n", "append a line")
    result = run_cli(["apply", planned.entry.op_id, "--vault", str(vault)])
    assert result.exit_code == 9, result.output
    assert planned.diff in result.stdout
    assert "confirm the diff" in result.stderr
    assert (vault / "a.md").read_bytes() == b"one\n"
    result = run_cli(["apply", planned.entry.op_id, "--vault", str(vault), "--yes", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["state"] == "applied" and data["diff"] == planned.diff
    assert (vault / "a.md").read_bytes() == b"one\ntwo\n"


def test_cli_apply_of_a_diff_that_can_no_longer_apply_is_refused_before_it_is_shown(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    planned = writes.plan_write(vault, "a.md", b"one\ntwo\n", "append a line")
    (vault / "a.md").write_bytes(b"one\nmine\n")  # the user edited the note since
    result = run_cli(["apply", planned.entry.op_id, "--vault", str(vault), "--yes"])
    assert result.exit_code == 9, result.output
    assert "it changed since the diff was shown" in " ".join(result.stderr.split())
    assert planned.diff not in result.stdout  # nobody is asked to confirm a diff that cannot apply
    assert (vault / "a.md").read_bytes() == b"one\nmine\n"


def test_cli_undo_of_a_created_note_says_it_deleted_it(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    app = app_for(vault)
    done = apply_confirmed(app, writes.plan_write(app.vault, "new/b.md", b"fresh\n", "create"))
    assert (vault / "new" / "b.md").read_bytes() == b"fresh\n"
    result = run_cli(["undo", done.op_id, "--vault", str(vault), "--yes"])
    assert result.exit_code == 0, result.output
    assert not (vault / "new" / "b.md").exists()
    assert "Deleted new/b.md" in " ".join(result.stdout.split()) and "Written" not in result.stdout


def test_cli_undo_and_history(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "one\n"})
    app = app_for(vault)
    done = apply_confirmed(app, writes.plan_write(app.vault, "a.md", b"one\ntwo\n", "append"))
    result = run_cli(["undo", done.op_id, "--vault", str(vault), "--yes"])
    assert result.exit_code == 0, result.output
    assert "-two" in result.stdout
    assert (vault / "a.md").read_bytes() == b"one\n"
    items = json.loads(run_cli(["history", "--vault", str(vault), "--json"]).stdout)
    assert [(i["state"], i["undo_of"]) for i in items] == [("undone", None), ("applied", done.op_id)]
    again = run_cli(["undo", done.op_id, "--vault", str(vault), "--yes", "--json"])
    assert again.exit_code == 9
    assert json.loads(again.stdout)["error"]["code"] == "undo_refused"
    bad = run_cli(["undo", "../../etc", "--vault", str(vault), "--yes"])
    assert bad.exit_code == 9 and "not an operation id" in bad.output


def test_show_before_on_a_terminal_makes_control_characters_visible(
    tmp_path: Path, isolated_env: Path
) -> None:
    """The exact bytes go to a pipe; a terminal would act on ESC sequences instead of showing them."""
    hostile = b"kept\x1b[2K\rfake line\r\nbidi \xe2\x80\xae here\n"
    vault = write_vault(tmp_path / "v", {"a.md": hostile})
    planned = writes.plan_write(vault, "a.md", b"new\n", "edit")
    op_id = writes.apply(vault, planned.entry.op_id, planned.proposal).op_id
    argv = [sys.executable, "-m", "vaultlens", "history", op_id, "--show-before", "--vault", str(vault)]
    pid, fd = pty.fork()
    if pid == 0:  # the child: vaultlens on the pty
        os.execve(sys.executable, argv, cli_env(isolated_env))
    seen = b""
    with contextlib.suppress(OSError):  # EIO once the child has closed the pty
        while select.select([fd], [], [], 30.0)[0] and (chunk := os.read(fd, 4096)):
            seen += chunk
    os.waitpid(pid, 0)
    assert b"\x1b" not in seen and b"\xe2\x80\xae" not in seen, seen
    assert b"kept<ESC>[2K<CR>fake line\r" in seen and b"<U+202E>" in seen, seen
    piped = subprocess.run(argv, env=cli_env(isolated_env), capture_output=True, check=True)
    assert piped.stdout == hostile
