"""safewrite operation groups and new notes: one combined diff, applied together or not at all,
undone together, one item in history; a kill -9 in the middle is settled from what the notes show.

Real files, real journals under the test's VAULTLENS_HOME, a real child process killed with
SIGKILL (the kill point is reached the way tests/test_safewrite.py reaches its own).
"""

from __future__ import annotations

import base64
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.chunking.source import RawNote, note_from_bytes
from vaultlens.errors import InvalidInput, UndoRefused, VaultlensError, WriteConflict, WriteRefused
from vaultlens.fsutil import sha256_hex
from vaultlens.safewrite import Group, writer
from vaultlens.safewrite.operation import Operation
from vaultlens.services.changing import writes
from vaultlens.services.restructuring import split
from vl_support import cli_env, run_cli, snapshot, write_vault

A, B = b"# A\n\nfirst line\nsecond line\n", b"# B\r\n\r\nbody\r\n"


def vault_ab(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "v", {"a.md": A, "b.md": B, "other.md": "untouched\n"})


def split_like(vault: Path) -> writes.Planned:
    """What a split plans: the original changed, two new notes (one in a new folder)."""
    return writes.plan_group(
        vault,
        [
            writes.Change("a.md", b"# A\n\n- [[A one]]\n", "index", based_on=A),
            writes.Change("A one.md", b"first line\n\nFrom [[a]].\n", "new note", based_on=None),
            writes.Change("b.md", B.replace(b"body", b"body [[A one]]"), "link", based_on=B),
        ],
        "split a.md",
    )


def states(vault: Path) -> dict[str, str]:
    return {r.op_id: r.state for r in writes.history(vault)}


def test_a_group_is_one_combined_diff_applied_together_and_undone_byte_for_byte(tmp_path: Path) -> None:
    vault = vault_ab(tmp_path)
    original = snapshot(vault)
    planned = split_like(vault)
    assert snapshot(vault) == original, "planning writes nothing"
    group = planned.entry
    assert isinstance(group, Group) and len(group.members) == 3
    assert planned.diff.count("--- ") == 3 and "--- /dev/null\n+++ b/A one.md\n" in planned.diff
    assert planned.diff.index("a/a.md") < planned.diff.index("b/A one.md") < planned.diff.index("a/b.md")
    assert planned.proposal.token == sha256_hex(planned.diff) == group.diff_sha
    with pytest.raises(WriteRefused, match="part of operation group"):  # a member alone: never
        writes.apply(vault, group.members[0], sha256_hex(planned.diff))
    with pytest.raises(WriteRefused, match="not operation group"):  # another diff's token
        writes.apply(vault, group.op_id, sha256_hex("something else"))
    done = writes.apply(vault, group.op_id, planned.proposal)
    assert isinstance(done, Group) and done.state == "applied"
    assert (vault / "a.md").read_bytes() == b"# A\n\n- [[A one]]\n"
    assert (vault / "A one.md").read_bytes() == b"first line\n\nFrom [[a]].\n"
    assert (vault / "b.md").read_bytes() == B.replace(b"body", b"body [[A one]]")
    assert (vault / "other.md").read_bytes() == b"untouched\n"
    listed = writes.history(vault)
    assert [(r.op_id, r.state) for r in listed] == [(group.op_id, "applied")], "one item, members inside"
    with pytest.raises(WriteRefused, match="only with it"):
        writes.plan_undo(vault, group.members[1])
    undo = writes.plan_undo(vault, group.op_id)
    assert undo.diff.count("--- ") == 3 and "+++ /dev/null" in undo.diff
    assert writes.plan_undo(vault, group.op_id).entry.op_id == undo.entry.op_id, "asked twice, planned once"
    writes.apply(vault, undo.entry.op_id, undo.proposal)
    assert snapshot(vault) == original, "every byte back, the new note removed, nothing else"
    assert states(vault) == {group.op_id: "undone", undo.entry.op_id: "applied"}


def test_undo_removes_the_folders_the_group_created_only_where_they_are_empty(tmp_path: Path) -> None:
    """Notes created in new folders: their undo leaves the tree as before (no empty folder); a folder
    holding a file added since stays with it, and a folder that existed before is never removed."""
    vault = vault_ab(tmp_path)
    (vault / "old").mkdir()
    original = snapshot(vault)
    for added in (None, "new/mine.txt"):
        planned = writes.plan_group(
            vault,
            [
                writes.Change("new/deep/N.md", b"n\n", "new note", based_on=None),
                writes.Change("new/M.md", b"m\n", "new note", based_on=None),
                writes.Change("old/O.md", b"o\n", "new note", based_on=None),
            ],
            "three new notes",
        )
        done = writes.apply(vault, planned.entry.op_id, planned.proposal)
        assert isinstance(done, Group) and done.created_folders == ["new", "new/deep"]
        if added:
            (vault / added).write_text("mine\n")
        undo = writes.plan_undo(vault, planned.entry.op_id)
        writes.apply(vault, undo.entry.op_id, undo.proposal)
        if not added:
            assert snapshot(vault) == original, "the new folders are gone, old/ stays"
    assert sorted(p.relative_to(vault).as_posix() for p in (vault / "new").rglob("*")) == ["new/mine.txt"]
    assert (vault / "old").is_dir()


def test_a_note_changed_before_apply_refuses_the_whole_group_and_names_it(tmp_path: Path) -> None:
    vault = vault_ab(tmp_path)
    planned = split_like(vault)
    (vault / "b.md").write_bytes(B + b"my edit\r\n")
    changed = snapshot(vault)
    with pytest.raises(WriteConflict, match=r"b\.md — it changed since the diff was shown") as caught:
        writes.apply(vault, planned.entry.op_id, planned.proposal)
    assert "None of the group's 3 notes was changed" in caught.value.message
    assert caught.value.to_dict()["op_id"] == planned.entry.op_id
    assert snapshot(vault) == changed
    assert states(vault) == {planned.entry.op_id: "conflict"}
    with pytest.raises(WriteRefused, match="only a planned group"):
        writes.apply(vault, planned.entry.op_id, planned.proposal)


def test_a_new_note_whose_path_appeared_meanwhile_refuses_the_group(tmp_path: Path) -> None:
    vault = vault_ab(tmp_path)
    planned = split_like(vault)
    (vault / "A one.md").write_bytes(b"the user's own note\n")
    with pytest.raises(WriteConflict, match="a file by that name exists now"):
        writes.to_confirm(vault, planned.entry.op_id)  # refused before the diff is shown again
    with pytest.raises(WriteConflict, match=r"A one\.md"):
        writes.apply(vault, planned.entry.op_id, planned.proposal)
    assert (vault / "a.md").read_bytes() == A and (
        vault / "A one.md"
    ).read_bytes() == b"the user's own note\n"


def test_planning_refuses_a_note_twice_and_notes_that_moved_on(tmp_path: Path) -> None:
    vault = vault_ab(tmp_path)
    with pytest.raises(InvalidInput, match="twice"):
        writes.plan_group(
            vault, [writes.Change("a.md", b"x\n", "one"), writes.Change("A.md", b"y\n", "two")], "s"
        )
    with pytest.raises(WriteConflict, match="exists now"):
        writes.plan_group(vault, [writes.Change("b.md", b"new\n", "new", based_on=None)], "s")
    with pytest.raises(WriteConflict, match="changed after its text was read"):
        writes.plan_group(vault, [writes.Change("a.md", b"x\n", "edit", based_on=b"older\n")], "s")
    assert writes.history(vault) == [], "nothing recorded for a refused group"


def test_undo_refuses_while_a_created_note_holds_other_bytes_and_changes_nothing(tmp_path: Path) -> None:
    vault = vault_ab(tmp_path)
    planned = split_like(vault)
    writes.apply(vault, planned.entry.op_id, planned.proposal)
    (vault / "A one.md").write_bytes(b"first line\n\nFrom [[a]].\nmy addition\n")
    before = snapshot(vault)
    with pytest.raises(UndoRefused, match=r"A one\.md has changed since operation group"):
        writes.plan_undo(vault, planned.entry.op_id)
    assert snapshot(vault) == before
    (vault / "A one.md").write_bytes(b"first line\n\nFrom [[a]].\n")  # back to what the group wrote
    undo = writes.plan_undo(vault, planned.entry.op_id)
    (vault / "A one.md").write_bytes(b"edited after the undo was shown\n")
    with pytest.raises(WriteConflict, match=r"A one\.md"):
        writes.apply(vault, undo.entry.op_id, undo.proposal)
    assert (vault / "A one.md").read_bytes() == b"edited after the undo was shown\n", "never deleted"
    assert (vault / "a.md").read_bytes() == b"# A\n\n- [[A one]]\n", "the undo group left every note as found"


# ---- a note that changes during the group's apply; kill -9 in the middle ------------------------------

CHILD = textwrap.dedent(
    """
    import json, os, signal, sys, time
    from pathlib import Path
    from vaultlens.errors import VaultlensError
    from vaultlens.safewrite import writer
    from vaultlens.services.changing import writes

    vault, op_id, token, moment, ready = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], Path(sys.argv[5])
    moment, _, at = moment.rpartition("-before-")  # e.g. kill-before-3: at the third write
    real_swap, calls = writer._swap, []

    def swap(target, op, *rest):
        calls.append(op.path)
        if len(calls) == int(at) and moment == "kill":
            ready.write_text("ready")
            time.sleep(60)
        if len(calls) == int(at) and moment == "ctrl-c":
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # KeyboardInterrupt lands here
        if len(calls) == int(at) and moment == "edit":  # the user saves the note just now
            target.write_bytes(target.read_bytes() + b"typed meanwhile\\r\\n")
        real_swap(target, op, *rest)

    writer._swap = swap
    try:
        writes.apply(vault, op_id, token)
    except VaultlensError as exc:
        print(json.dumps(exc.to_dict()))
    """
)


def run_child(
    tmp_path: Path, home: Path, vault: Path, planned: writes.Planned, moment: str
) -> subprocess.Popen[str]:
    argv = [sys.executable, "-c", CHILD, str(vault), planned.entry.op_id, planned.proposal.token, moment]
    return subprocess.Popen(
        [*argv, str(tmp_path / "ready")], env=cli_env(home), stdout=subprocess.PIPE, text=True
    )


def kill_9_when_ready(child: subprocess.Popen[str], tmp_path: Path) -> None:
    """SIGKILL the child once it says it stands at its kill point (in the middle of the writes)."""
    deadline = time.monotonic() + 60
    while not (tmp_path / "ready").exists():
        assert child.poll() is None, "the child ended before reaching the kill point"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()


def test_a_note_changed_in_the_middle_of_the_apply_rolls_back_what_the_group_wrote(
    tmp_path: Path, isolated_env: Path
) -> None:
    vault = vault_ab(tmp_path)
    planned = split_like(vault)
    out, _ = run_child(tmp_path, isolated_env, vault, planned, "edit-before-3").communicate(timeout=120)
    error = json.loads(out)  # written in the order that never removes text first: a.md, cut, comes last
    assert error["code"] == "write_conflict" and error["path"] == "a.md", error
    assert "were put back" in error["message"], error
    assert (vault / "b.md").read_bytes() == B, "the note the group had written is back"
    assert not (vault / "A one.md").exists(), "the created note is removed"
    assert (vault / "a.md").read_bytes() == A + b"typed meanwhile\r\n", "the user's save is kept"
    listed = {r.op_id: r for r in writes.history(vault)}
    assert listed[planned.entry.op_id].state == "conflict"
    [rollback] = [r for r in listed.values() if r.undo_of == planned.entry.op_id]
    assert rollback.state == "applied" and rollback.summary == f"rollback of {planned.entry.op_id}"


@pytest.mark.parametrize("failure", ["disk full", "note changed"])
def test_a_failed_group_rolled_back_leaves_no_folder_it_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """A merge-like group (OTHER copied to a new ``.trash/``) and a split-like one (a new note in a new
    sub-folder) fail at their last write: the rollback puts every note back and, as an undo does,
    removes the folders the apply created, empty again, but never one that was there before."""
    vault = write_vault(tmp_path / "v", {"a.md": A, "b.md": B, "old/keep.md": "k\n"})
    planned = writes.plan_group(
        vault,
        [
            writes.Change(".trash/b.md", B, "copied to the trash", based_on=None),
            writes.Change("Topics/Deep/A one.md", b"first line\n", "new note", based_on=None),
            writes.Change("old/N.md", b"n\n", "new note", based_on=None),
            writes.Change("a.md", A + B, "merged", based_on=A),
            writes.Change("b.md", None, "removed", based_on=B),  # written last: it removes a note
        ],
        "merge b.md into a.md",
    )
    real_swap, calls = writer._swap, []

    def swap(target: Path, op: Operation, root: Path) -> None:
        calls.append(op.path)
        if op.path == "b.md" and op.after is None:
            if failure == "disk full":
                raise OSError(errno.ENOSPC, "No space left on device")
            target.write_bytes(B + b"typed meanwhile\r\n")  # the user saves it just now
        real_swap(target, op, root)

    monkeypatch.setattr(writer, "_swap", swap)
    before = snapshot(vault)
    with pytest.raises(VaultlensError) as caught:
        writes.apply(vault, planned.entry.op_id, planned.proposal)
    assert calls[:5] == [".trash/b.md", "Topics/Deep/A one.md", "old/N.md", "a.md", "b.md"], calls
    assert "put back" in caught.value.message or failure == "disk full", caught.value.message
    if failure == "note changed":
        assert (vault / "b.md").read_bytes() == B + b"typed meanwhile\r\n", "the user's save is kept"
        (vault / "b.md").write_bytes(B)
    assert snapshot(vault) == before, "every byte back, and no .trash/, Topics/ or Topics/Deep/ left"
    assert (vault / "old").is_dir(), "a folder that was there before stays"
    rollback = [r for r in writes.history(vault) if r.undo_of == planned.entry.op_id]
    assert [r.state for r in rollback] == ["applied"]


def test_kill_9_in_the_middle_of_a_group_is_settled_as_partial_and_its_undo_restores_every_byte(
    tmp_path: Path, isolated_env: Path
) -> None:
    vault = vault_ab(tmp_path)
    original = snapshot(vault)
    planned = split_like(vault)
    group_id = planned.entry.op_id
    child = run_child(tmp_path, isolated_env, vault, planned, "kill-before-3")
    kill_9_when_ready(child, tmp_path)
    j = writes.journal(vault)
    assert j.group(group_id).state == "writing"
    killed = snapshot(vault)
    assert (  # the new note and the added link first; the original is cut last, so it is whole here
        (vault / "a.md").read_bytes() == A
        and (vault / "A one.md").exists()
        and (vault / "b.md").read_bytes() != B
    )
    recovered = writes.recover(vault)
    assert [(r.op_id, r.state) for r in recovered] == [
        (j.group(group_id).members[0], "not_applied"),
        (group_id, "partial"),
    ]
    assert snapshot(vault) == killed, "recovery writes no note"
    assert [j.entry(m).state for m in j.group(group_id).members] == ["not_applied", "applied", "applied"]
    shown = run_cli(["history", "--vault", str(vault)])
    assert (
        group_id in shown.stdout
        and "partial" in shown.stdout
        and "3 notes: a.md, A one.md, b.md" in shown.stdout
    )
    undone = run_cli(["undo", group_id, "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert "+++ /dev/null" in undone.stdout, "the exact diff is shown before the undo"
    assert snapshot(vault) == original, "every byte back; only the note the group created is gone"
    assert writes.history(vault)[0].state == "undone"


def test_ctrl_c_as_the_group_is_marked_writing_says_nothing_was_written_and_settles_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Ctrl-C lands while `writing` is made durable (the journal's fsyncs), before any note is
    written: it escaped as a bare KeyboardInterrupt ("Aborted.", exit 1) and left the group `writing`."""
    from vaultlens.errors import WriteInterrupted
    from vaultlens.safewrite.journal import Journal

    vault = vault_ab(tmp_path)
    original = snapshot(vault)
    planned = split_like(vault)
    real = Journal.set_group_state

    def marked_then_interrupted(
        self: Journal, group: Group, state: str, *args: object, **kwargs: object
    ) -> Group:
        done = real(self, group, state, *args, **kwargs)  # type: ignore[arg-type]
        if state == "writing":
            signal.raise_signal(signal.SIGINT)
        return done

    monkeypatch.setattr(Journal, "set_group_state", marked_then_interrupted)
    with pytest.raises(BaseException) as raised:  # a bare KeyboardInterrupt, before
        writes.apply(vault, planned.entry.op_id, planned.proposal)
    caught = raised.value
    assert isinstance(caught, WriteInterrupted), repr(caught)
    assert "none of the 3 notes changed" in caught.message, caught.message
    assert snapshot(vault) == original
    assert writes.journal(vault).group(planned.entry.op_id).state == caught.state != "writing"


def test_ctrl_c_in_the_middle_of_a_group_says_it_is_partial_and_how_to_undo(
    tmp_path: Path, isolated_env: Path
) -> None:
    vault = vault_ab(tmp_path)
    original = snapshot(vault)
    planned = split_like(vault)
    group_id = planned.entry.op_id
    out, _ = run_child(tmp_path, isolated_env, vault, planned, "ctrl-c-before-3").communicate(timeout=120)
    error = json.loads(out)
    assert error["code"] == "write_interrupted" and error["state"] == "partial", error
    assert (
        "only some of the 3 notes were written" in error["message"]
        and f"vaultlens undo {group_id}" in error["hint"]
    )
    j = writes.journal(vault)
    assert j.group(group_id).state == "partial", "settled by the apply itself, not left writing"
    assert [j.entry(m).state for m in j.group(group_id).members] == ["not_applied", "applied", "applied"]
    assert (vault / "a.md").read_bytes() == A
    undo = writes.plan_undo(vault, group_id)
    writes.apply(vault, undo.entry.op_id, undo.proposal)
    assert snapshot(vault) == original


# ---- a many-note split killed at each write: every line stays somewhere -----------------------------

PARTS = 12
LONG = "# Long\r\n\r\n" + "".join(
    f"## Topic {i}\r\n\r\nLine {i} about topic {i}, with an ümlaut and a tab\there.\r\n\r\n"
    for i in range(PARTS)
)


def many_note_split(vault: Path) -> writes.Planned:
    """A real split of ``Long.md`` into PARTS new notes, the original becoming their index."""
    raw = (vault / "Long.md").read_bytes()
    source = note_from_bytes(RawNote("Long.md", raw, sha256_hex(raw)), MarkdownChunker())
    answer = {"notes": [
        {"title": f"Topic {i}", "ranges": [{"first": 3 + 4 * i, "last": 5 + 4 * i}], "links": []}
        for i in range(PARTS)
    ]}  # fmt: skip
    proposed = split.propose(source, answer, ["Long", "b"], index=True)
    return writes.plan_group(vault, proposed.changes, "split Long.md")


def on_disk_lines(vault: Path) -> set[str]:
    return {line for note in vault.rglob("*.md") for line in note.read_text("utf-8").splitlines()}


@pytest.mark.parametrize("at", range(1, PARTS + 2))
def test_kill_9_at_each_write_of_a_many_note_split_never_takes_text_out_of_the_vault(
    tmp_path: Path, isolated_env: Path, at: int
) -> None:
    """It used to cut the original to its index first: a kill then left most new notes only in the journal."""
    vault = write_vault(tmp_path / "v", {"Long.md": LONG.encode(), "b.md": B})
    original = snapshot(vault)
    planned = many_note_split(vault)
    group_id = planned.entry.op_id
    child = run_child(tmp_path, isolated_env, vault, planned, f"kill-before-{at}")
    kill_9_when_ready(child, tmp_path)
    text = LONG.replace("\r\n", "\n").splitlines()
    assert set(text) <= on_disk_lines(vault), "every line of the original is in some note on disk"
    new = [vault / f"Topic {i}.md" for i in range(PARTS)]
    assert (vault / "Long.md").read_bytes() == LONG.encode() or all(p.exists() for p in new)
    assert (vault / "Long.md").read_bytes() == LONG.encode(), "the original is cut last, after every new note"
    assert sum(p.exists() for p in new) == at - 1
    writes.recover(vault)
    shown = run_cli(["history", group_id, "--show-before", "--json", "--vault", str(vault)])
    assert shown.exit_code == 0, shown.output
    [kept] = [b for b in json.loads(shown.stdout)["befores"] if b["existed"]]
    assert (kept["path"], base64.b64decode(kept["base64"])) == ("Long.md", LONG.encode()), "byte-exact"
    if at > 1:
        undone = run_cli(["undo", group_id, "--yes", "--vault", str(vault)])
        assert undone.exit_code == 0, undone.output
    assert snapshot(vault) == original, "every byte back, no new note left"


def test_history_show_before_gives_the_journaled_text_back_where_undo_is_refused(
    tmp_path: Path, isolated_env: Path
) -> None:
    """A changed note made undo refuse, and no command showed the journal's copy of the original."""
    vault = vault_ab(tmp_path)
    planned = split_like(vault)
    group_id = planned.entry.op_id
    writes.apply(vault, group_id, planned.proposal)
    (vault / "a.md").write_bytes(b"# A\n\n- [[A one]]\nedited later\n")
    refused = run_cli(["undo", group_id, "--yes", "--vault", str(vault)])
    assert refused.exit_code != 0 and f"vaultlens history {group_id} --show-before" in " ".join(
        refused.output.split()
    ), refused.output
    [a_op, new_op, b_op] = writes.journal(vault).group(group_id).members
    exact = subprocess.run(
        [sys.executable, "-m", "vaultlens", "history", a_op, "--show-before", "--vault", str(vault)],
        env=cli_env(isolated_env), capture_output=True, check=True,
    )  # fmt: skip
    assert exact.stdout == A, "one operation's before, printed to a pipe: the exact bytes"
    listed = subprocess.run(
        [sys.executable, "-m", "vaultlens", "history", group_id, "--show-before", "--vault", str(vault)],
        env=cli_env(isolated_env), capture_output=True, check=True,
    )  # fmt: skip
    assert listed.stdout == (
        f"==> a.md ({a_op}, applied) <==\n".encode() + A
        + f"==> A one.md ({new_op}, applied) <==\n(A one.md did not exist before {new_op}: it created the note.)\n".encode()
        + f"==> b.md ({b_op}, applied) <==\n".encode() + B
    )  # fmt: skip
    several = run_cli(
        ["history", group_id, "--show-before", "-o", str(tmp_path / "a.md"), "--vault", str(vault)]
    )
    assert several.exit_code == 2 and a_op in several.output and b_op in several.output, several.output
    inside = run_cli(
        ["history", a_op, "--show-before", "-o", str(vault / "restored.md"), "--vault", str(vault)]
    )
    assert (
        inside.exit_code != 0 and "inside the vault" in inside.output and not (vault / "restored.md").exists()
    )
    saved = run_cli(["history", a_op, "--show-before", "-o", str(tmp_path / "a.md"), "--vault", str(vault)])
    assert saved.exit_code == 0 and (tmp_path / "a.md").read_bytes() == A, saved.output


# ---- every member checked before the first write; names re-checked; doctor reads the journal ---------


@pytest.mark.parametrize("what", ["note", "folder"])
def test_a_group_checks_every_note_and_folder_is_writable_before_writing_any(
    tmp_path: Path, what: str
) -> None:
    """It used to find a read-only member only on reaching it, after earlier members were written
    (then rolled back: the notes changed twice, and a kill there would have left them changed)."""
    vault = write_vault(tmp_path / "v", {"a.md": A, "b.md": B, "Sub/keep.md": "k\n"})
    planned = writes.plan_group(
        vault,
        [
            writes.Change("a.md", A + b"- [[N]]\n", "link", based_on=A),
            writes.Change("Sub/N.md", b"new\n", "new note", based_on=None),
            writes.Change("b.md", b"# B\r\n", "cut", based_on=B),
        ],
        "three notes",
    )
    os.chmod(vault / ("b.md" if what == "note" else "Sub"), 0o444 if what == "note" else 0o555)
    try:
        before = snapshot(vault)
        with pytest.raises(WriteRefused, match="read-only") as caught:
            writes.apply(vault, planned.entry.op_id, planned.proposal)
        assert caught.value.to_dict()["path"] == ("b.md" if what == "note" else "Sub/N.md")
        assert snapshot(vault) == before
        listed = writes.history(vault)
        assert [(r.op_id, r.state) for r in listed] == [(planned.entry.op_id, "not_applied")], "no rollback"
        j = writes.journal(vault)
        assert {j.entry(m).state for m in j.group(planned.entry.op_id).members} == {"not_applied"}
    finally:
        os.chmod(vault / "Sub", 0o755)


def test_a_split_name_taken_anywhere_in_the_vault_after_planning_is_refused_at_apply(tmp_path: Path) -> None:
    """A same-named note made after the plan would have made the new [[links]] ambiguous."""
    vault = write_vault(tmp_path / "v", {"Long.md": LONG.encode(), "b.md": B})
    planned = many_note_split(vault)
    (vault / "Elsewhere").mkdir()
    (vault / "Elsewhere" / "topic 7.md").write_bytes(b"my own note\n")  # another case, another folder
    before = snapshot(vault)
    with pytest.raises(WriteRefused, match=r"Elsewhere/topic 7\.md appeared") as caught:
        writes.apply(vault, planned.entry.op_id, planned.proposal)
    assert "ambiguous" in caught.value.message and caught.value.to_dict()["path"] == "Topic 7.md"
    assert snapshot(vault) == before, "no note written"
    assert writes.history(vault)[0].state == "not_applied"


def test_doctor_reports_a_half_applied_group_until_it_is_settled_and_undone(
    tmp_path: Path, isolated_env: Path
) -> None:
    """doctor said the index was healthy while a group was half written (it never read the journal)."""
    vault = vault_ab(tmp_path)
    fake = ["--set", "embedding.provider=fake"]
    assert run_cli(["index", "--vault", str(vault), *fake]).exit_code == 0
    planned = split_like(vault)
    group_id = planned.entry.op_id
    child = run_child(tmp_path, isolated_env, vault, planned, "kill-before-3")
    deadline = time.monotonic() + 60
    while not (tmp_path / "ready").exists():
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    killed = run_cli(["doctor", "--vault", str(vault), *fake])
    said = " ".join(killed.output.split())
    assert killed.exit_code == 1 and f"Operation group {group_id}" in said and "interrupted" in said, said
    assert "`vaultlens history` settles it" in said and f"vaultlens undo {group_id}" in said
    assert writes.journal(vault).group(group_id).state == "writing", "doctor only reads the journal"
    run_cli(["history", "--vault", str(vault)])  # settles it: partial
    partial = run_cli(["doctor", "--json", "--vault", str(vault), *fake])
    report = json.loads(partial.stdout)
    assert partial.exit_code == 1 and not report["healthy"]
    [problem] = report["unfinished_writes"]
    assert "is partial" in problem and f"`vaultlens undo {group_id}` puts them back" in problem
    assert run_cli(["undo", group_id, "--yes", "--vault", str(vault)]).exit_code == 0
    healthy = run_cli(["doctor", "--vault", str(vault), *fake])
    assert healthy.exit_code == 0, healthy.output


def test_doctor_reports_a_half_applied_group_in_a_vault_with_no_index(
    tmp_path: Path, isolated_env: Path
) -> None:
    """The note tools need no index, but doctor only said "There is no index" and never read the journal;
    history listed the group as partial without naming the way back."""
    vault = vault_ab(tmp_path)
    planned = split_like(vault)
    group_id = planned.entry.op_id
    child = run_child(tmp_path, isolated_env, vault, planned, "kill-before-3")
    deadline = time.monotonic() + 60
    while not (tmp_path / "ready").exists():
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    killed = run_cli(["doctor", "--vault", str(vault)])
    said = " ".join(killed.output.split())
    assert killed.exit_code == 1 and f"Operation group {group_id}" in said, said
    assert f"vaultlens undo {group_id}" in said and f"vaultlens history {group_id} --show-before" in said
    listed = " ".join(run_cli(["history", "--vault", str(vault)]).output.split())
    assert "partial" in listed and f"`vaultlens undo {group_id}` puts them back" in listed, listed
    assert run_cli(["undo", group_id, "--yes", "--vault", str(vault)]).exit_code == 0
    settled = run_cli(["doctor", "--vault", str(vault)])
    assert settled.exit_code != 0 and "There is no index" in " ".join(settled.output.split())
