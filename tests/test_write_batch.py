"""`vaultlens write batch`: notes chosen by folder / tag / date / glob, an estimate before start, one
planned change per note, resume after a kill without sending a finished note again, review.

The scripted LLM server on loopback counts every call; the vault is real files; the kill is a
real SIGKILL of a real `vaultlens` process.
"""

from __future__ import annotations

import hashlib
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import vaultlens
from scripted_chat_server import ChatStep, ScriptedChatServer
from vaultlens.config import paths
from vaultlens.errors import Cancelled, ConsentRequired, WriteConflict
from vaultlens.services.app import App
from vaultlens.services.changing import writes
from vl_support import check_shape, cli_env, run_cli, snapshot, write_vault
from write_support import ToolModel, cli_args, llm_settings

REPLY = json.dumps({"replacement": "A short summary."})
NOTES = {
    f"Notes/n{i}.md": f"# Note {i}\n\nBody of note {i}, long enough to summarise.\n" for i in range(1, 7)
}
NOTES |= {
    "Notes/fm-only.md": "---\ntags: [x]\n---\n",
    "Other/tagged.md": "---\ntags: [draft/one]\n---\n# Tagged\n\nText with #idea inline.\n",
    "Other/plain.md": "# Plain\n\nNothing to see.\n",
}


def model(server: ScriptedChatServer, **extra: str) -> list[str]:
    s = {"embedding.provider": "fake", "llm.provider": "openai-compatible", "llm.model": "batch-test",
         "llm.endpoint": server.url + "/v1", "llm.max_retries": "0", "llm.read_timeout_s": "20", **extra}  # fmt: skip
    return [a for k, v in s.items() for a in ("--set", f"{k}={v}")]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", NOTES)


def sent_paths(server: ScriptedChatServer) -> list[str]:
    """Which note each call carried (the prompt names it)."""
    out = []
    for body in server.chats():
        text = body["messages"][1]["content"]
        out.append(next(p for p in sorted(NOTES, key=len, reverse=True) if f"of {p}" in text))
    return out


def test_batch_plans_each_note_once_and_yes_writes_each_as_its_own_undoable_change(vault: Path) -> None:
    with ScriptedChatServer(reply=REPLY) as server:
        done = run_cli(["write", "batch", "--folder", "Notes", "--preset", "summarize", "--concurrency", "3",
                        "--yes", "--json", "--vault", str(vault), *model(server)])  # fmt: skip
        calls = sent_paths(server)
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    check_shape("write_batch", data)
    assert sorted(calls) == [f"Notes/n{i}.md" for i in range(1, 7)], "one call per note with a body"
    assert data["counts"] == {"pending": 0, "planned": 6, "unchanged": 0, "skipped": 1, "failed": 0}
    assert data["estimate"]["cost"] is None and data["estimate"]["prompt_tokens"] > 0
    assert [a["state"] for a in data["applied"]] == ["applied"] * 6
    assert (vault / "Notes/n3.md").read_text() == "A short summary.\n"
    assert (vault / "Notes/fm-only.md").read_text() == NOTES["Notes/fm-only.md"]
    first = data["applied"][0]
    undone = run_cli(["undo", first["op_id"], "--yes", "--vault", str(vault)])
    assert undone.exit_code == 0, undone.output
    assert (vault / first["path"]).read_text() == NOTES[first["path"]]


def test_the_estimate_comes_from_the_exact_prompts_and_without_a_yes_nothing_is_written(vault: Path) -> None:
    with ScriptedChatServer(reply=REPLY) as server:
        shown = run_cli(["write", "batch", "--tag", "draft", "--prompt", "make it formal", "--vault", str(vault),
                         *model(server, **{"llm.price_in_per_mtok": "2", "llm.price_out_per_mtok": "8"})])  # fmt: skip
        [sent] = server.chats()  # only the tagged note (#draft/one) is picked
    chars = sum(len(m["content"]) for m in sent["messages"][:2])
    said = " ".join(shown.stderr.split())
    assert f"1 notes: about {chars // 4:,} prompt tokens" in said, said
    assert "cost about 0.0" in said and "unknown" not in said
    assert "+A short summary." in shown.stdout, "the exact diff is shown"
    assert shown.exit_code == 9 and "nothing was written" in said, "no terminal and no --yes: nothing written"
    assert (vault / "Other/tagged.md").read_text() == NOTES["Other/tagged.md"]


@pytest.mark.parametrize(
    ("how", "expected"),
    [(["--glob", "Other/*.md"], ["Other/plain.md", "Other/tagged.md"]), (["--tag", "#idea"], ["Other/tagged.md"]),
     (["--since", "2000-01-01", "--glob", "x"], None), (["--folder", "Nowhere"], None)],
    ids=["glob", "inline-tag", "two-selectors", "nothing-matches"],
)  # fmt: skip
def test_selection(vault: Path, how: list[str], expected: list[str] | None) -> None:
    with ScriptedChatServer(reply=REPLY) as server:
        done = run_cli(["write", "batch", *how, "--preset", "fix-grammar", "--json", "--vault", str(vault),
                        *model(server)])  # fmt: skip
        calls = sent_paths(server)
    if expected is None:
        assert done.exit_code == 2 and not calls, done.output
        return
    assert done.exit_code == 0, done.output
    assert sorted(calls) == expected
    assert [w["path"] for w in json.loads(done.stdout)["waiting"]] == expected, "planned, waiting for a yes"


def state_file() -> Path:
    [found] = list(paths.batches_dir().glob("*/state.json"))
    return found


def test_kill_9_during_a_batch_then_resume_sends_no_finished_note_again(
    vault: Path, isolated_env: Path
) -> None:
    original = snapshot(vault)
    script = [ChatStep(reply=REPLY), ChatStep(reply=REPLY), ChatStep(reply=REPLY, delay=8)]
    with ScriptedChatServer(reply=REPLY, script=script) as server:
        child = subprocess.Popen(
            [sys.executable, "-m", "vaultlens", "write", "batch", "--folder", "Notes", "--preset", "summarize",
             "--concurrency", "1", "--yes", "--vault", str(vault), *model(server)],
            env=cli_env(isolated_env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while len(server.chats()) < 3:  # the third note is in flight
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        first_run = sent_paths(server)
    assert first_run == ["Notes/n1.md", "Notes/n2.md", "Notes/n3.md"]
    assert snapshot(vault) == original, "a batch writes no note while it runs: none is half-written"
    state: dict[str, Any] = json.loads(state_file().read_text())
    status = {n["path"]: n["status"] for n in state["notes"]}
    assert [status[f"Notes/n{i}.md"] for i in range(1, 7)] == ["planned"] * 2 + ["pending"] * 4
    # a note whose plan reached the journal just before the kill (the state not yet saved) is done too
    late = writes.plan_write(vault, "Notes/n4.md", b"A short summary.\n", f"batch {state['batch_id']}: summarize",
                             based_on=(vault / "Notes/n4.md").read_bytes())  # fmt: skip
    with ScriptedChatServer(reply=REPLY) as server:
        resumed = run_cli(["write", "batch", "--resume", state["batch_id"], "--yes", "--json", "--vault", str(vault),
                           *model(server)])  # fmt: skip
        second_run = sent_paths(server)
    assert resumed.exit_code == 0, resumed.output
    assert second_run == ["Notes/n3.md", "Notes/n5.md", "Notes/n6.md"], "finished notes are never sent again"
    data = json.loads(resumed.stdout)
    assert data["counts"] == {"pending": 0, "planned": 6, "unchanged": 0, "skipped": 1, "failed": 0}
    assert late.entry.op_id in [a["op_id"] for a in data["applied"]]
    for i in range(1, 7):
        assert (vault / f"Notes/n{i}.md").read_text() == "A short summary.\n", "each note written whole"
    again = run_cli(["write", "batch", "--resume", state["batch_id"], "--json", "--vault", str(vault)])
    assert again.exit_code == 0 and json.loads(again.stdout)["waiting"] == [], (
        "nothing left to send or review"
    )


def test_a_remote_model_gets_nothing_before_consent(vault: Path) -> None:
    with ToolModel(json.loads(REPLY)) as server:
        remote = llm_settings(server, remote=True)
        app = App.open(vault, remote)
        started = vaultlens.write_batch(app, vaultlens.NoteSelector(glob="Other/*.md"), "summarize")
        assert server.chats() == [], "starting a batch (selection and estimate) sends nothing"
        with pytest.raises(ConsentRequired) as caught:
            vaultlens.write_batch_run(app, started.state.batch_id, consent=False)
        assert server.chats() == [] and "2 notes" in caught.value.proposal.what
        refused = run_cli(["write", "batch", "--resume", started.state.batch_id, *cli_args(vault, remote)])
        assert refused.exit_code == 7 and "Nothing was sent" in refused.stderr and server.chats() == []
        ran = vaultlens.write_batch_run(app, started.state.batch_id, consent=True)
        assert len(server.chats()) == 2 and len(ran.waiting) == 2
    assert (vault / "Other/plain.md").read_text() == NOTES["Other/plain.md"]


def test_ctrl_c_cuts_the_request_in_flight_keeps_finished_notes_and_resume_continues_with_the_rest(
    vault: Path, isolated_env: Path, tmp_path: Path
) -> None:
    hung = ChatStep(reply=REPLY, delay=600)  # the third note's model never answers while the test runs
    script = [ChatStep(reply=REPLY), ChatStep(reply=REPLY), hung]
    errors = tmp_path / "stderr.txt"
    with ScriptedChatServer(reply=REPLY, script=script) as server, errors.open("wb") as e:
        child = subprocess.Popen(
            [sys.executable, "-m", "vaultlens", "write", "batch", "--glob", "Notes/n*.md", "--preset", "summarize",
             "--concurrency", "1", "--vault", str(vault), *model(server, **{"llm.read_timeout_s": "300"})],
            env=cli_env(isolated_env), stdout=subprocess.DEVNULL, stderr=e,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while len(server.chats()) < 3:
            assert child.poll() is None, errors.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        child.send_signal(signal.SIGINT)
        while "are done and kept" not in errors.read_text() and child.poll() is None:
            assert time.monotonic() < deadline, "the first Ctrl-C waits for the model's answer"
            time.sleep(0.02)
        child.send_signal(signal.SIGINT)  # a second Ctrl-C while it leaves
        try:
            child.wait(timeout=60)  # the hung request is not waited for
        except subprocess.TimeoutExpired:
            child.kill()
            raise AssertionError(f"still waiting for the model after Ctrl-C: {errors.read_text()}") from None
        first_run = sent_paths(server)
    err = errors.read_text()
    said = " ".join(err.split())
    assert child.returncode == 130 and "notes of batch" in said and "are done and kept" in said, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    state: dict[str, Any] = json.loads(state_file().read_text())
    batch_id = state["batch_id"]
    assert f"vaultlens write batch --resume {batch_id}" in said
    assert first_run == ["Notes/n1.md", "Notes/n2.md", "Notes/n3.md"]
    status = {n["path"]: n["status"] for n in state["notes"]}
    assert [status[f"Notes/n{i}.md"] for i in range(1, 7)] == ["planned"] * 2 + ["pending"] * 4, (
        "the cut note stays pending, nothing after it was started"
    )
    with ScriptedChatServer(reply=REPLY) as server:
        resumed = run_cli(
            ["write", "batch", "--resume", batch_id, "--json", "--vault", str(vault), *model(server)]
        )
        second_run = sent_paths(server)
    assert resumed.exit_code == 0, resumed.output
    assert second_run == [f"Notes/n{i}.md" for i in range(3, 7)], (
        "a note finished before Ctrl-C is not sent again"
    )
    assert len(json.loads(resumed.stdout)["waiting"]) == 6


def test_a_note_finishing_as_ctrl_c_stops_the_run_draws_no_progress_after_the_stop(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI stops its bar once the run stopped; a note that finished just then used to report
    progress afterwards (a first one started a bar nothing stopped: redrawn over the stop message,
    the cursor left hidden)."""
    from vaultlens.services.restructuring import batch

    real = batch._plan_one

    def finished_as_the_ctrl_c_lands(*args: Any) -> Any:
        note = real(*args)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)  # Ctrl-C: the run stops
        args[-1].stopped.wait(30)  # this note is counted done only once the stop went through
        return note

    monkeypatch.setattr(batch, "_plan_one", finished_as_the_ctrl_c_lands)
    drawn: list[str] = []
    with ToolModel(json.loads(REPLY)) as server:
        app = App.open(vault, llm_settings(server))
        started = vaultlens.write_batch(
            app, vaultlens.NoteSelector(glob="Other/plain.md"), "summarize", None, 1
        )
        with pytest.raises(Cancelled, match="are done and kept"):
            vaultlens.write_batch_run(
                app, started.state.batch_id, True, progress=lambda n, *_: drawn.append(n.path)
            )
        for worker in threading.enumerate():
            if worker.name.startswith("vaultlens-batch-"):
                worker.join(30)
    assert len(server.chats()) == 1
    assert drawn == [], "no progress is drawn after the stop"


def in_terminal(args: list[str], env: dict[str, str], answers: list[tuple[str, bytes]]) -> tuple[int, str]:
    """Run vaultlens on a pseudo-terminal, typing each answer once its question is on the screen;
    (exit code, the screen without colours). A question that never comes fails within 60 s."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: vaultlens on a terminal
        os.execve(sys.executable, [sys.executable, "-m", "vaultlens", *args], env)
    seen, deadline = b"", time.monotonic() + 60

    def read() -> bytes:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"no answer from vaultlens: {seen.decode(errors='replace')}")
        try:
            return os.read(fd, 4096)
        except OSError:  # EIO once the child has closed the pty
            return b""

    for question, answer in answers:
        while question.encode() not in seen:
            chunk = read()
            if not chunk:
                raise AssertionError(f"never asked {question!r}: {seen.decode(errors='replace')}")
            seen += chunk
        os.write(fd, answer)
    while chunk := read():
        seen += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), " ".join(
        re.sub(r"\x1b\[[0-9;]*m", "", seen.decode(errors="replace")).split()
    )


def test_review_one_by_one_in_a_terminal_yes_no_all(vault: Path, isolated_env: Path) -> None:
    with ScriptedChatServer(reply=REPLY) as server:
        planned = run_cli(["write", "batch", "--glob", "Notes/n[1-3].md", "--preset", "summarize", "--json",
                           "--vault", str(vault), *model(server)])  # fmt: skip
    batch_id = json.loads(planned.stdout)["batch_id"]
    questions = [
        (f"[{n}/3] Write this change?", answer) for n, answer in ((1, b"y\n"), (2, b"n\n"), (3, b"a\n"))
    ]
    code, text = in_terminal(["write", "batch", "--resume", batch_id, "--vault", str(vault)], cli_env(isolated_env),
                             questions)  # fmt: skip
    assert code == 0, text
    assert text.count("+A short summary.") == 3, "each diff shown before its question"
    assert "Written 2 of 3 changes" in text and f"--resume {batch_id}" in text
    assert [(vault / f"Notes/n{i}.md").read_text() == "A short summary.\n" for i in (1, 2, 3)] == [
        True,
        False,
        True,
    ]
    left = run_cli(["write", "batch", "--resume", batch_id, "--json", "--vault", str(vault)])
    assert [w["path"] for w in json.loads(left.stdout)["waiting"]] == ["Notes/n2.md"], (
        "the declined one waits"
    )


def test_all_the_rest_writes_every_remaining_change(vault: Path, isolated_env: Path) -> None:
    with ScriptedChatServer(reply=REPLY) as server:
        planned = run_cli(["write", "batch", "--glob", "Notes/n[1-4].md", "--preset", "summarize", "--json",
                           "--vault", str(vault), *model(server)])  # fmt: skip
    batch_id = json.loads(planned.stdout)["batch_id"]
    questions = [("[1/4] Write this change?", b"n\n"), ("[2/4] Write this change?", b"a\n")]
    code, text = in_terminal(["write", "batch", "--resume", batch_id, "--vault", str(vault)], cli_env(isolated_env),
                             questions)  # fmt: skip
    assert code == 0, text
    assert "[3/4]" not in text and "[4/4]" not in text, "nothing asked after all the rest"
    assert "Written 3 of 4 changes" in text, text
    assert [(vault / f"Notes/n{i}.md").read_text() == "A short summary.\n" for i in (1, 2, 3, 4)] == [
        False, True, True, True
    ]  # fmt: skip


def test_ctrl_c_while_writing_stops_lists_what_was_written_and_exits_130(
    tmp_path: Path, isolated_env: Path
) -> None:
    many = {
        f"Notes/n{i:03}.md": f"# Note {i}\n\nBody of note {i}, long enough to summarise.\n"
        for i in range(200)
    }
    vault = write_vault(tmp_path / "many", many)
    with ScriptedChatServer(reply=REPLY) as server:
        planned = run_cli(["write", "batch", "--folder", "Notes", "--preset", "summarize", "--concurrency", "8",
                           "--json", "--vault", str(vault), *model(server)])  # fmt: skip
    data = json.loads(planned.stdout)
    assert len(data["waiting"]) == 200, planned.output
    diffs = {w["path"]: w for w in data["waiting"]}
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    with out.open("wb") as o, err.open("wb") as e:
        child = subprocess.Popen(
            [sys.executable, "-m", "vaultlens", "write", "batch", "--resume", data["batch_id"], "--yes",
             "--vault", str(vault)], env=cli_env(isolated_env), stdin=subprocess.DEVNULL, stdout=o, stderr=e,
        )  # fmt: skip
        first, deadline = vault / "Notes/n000.md", time.monotonic() + 60
        while first.read_bytes() == many["Notes/n000.md"].encode():  # the writes have begun
            assert child.poll() is None, err.read_text()
            assert time.monotonic() < deadline
        child.send_signal(signal.SIGSTOP)  # Ctrl-C lands in the middle of the writes
        child.send_signal(signal.SIGINT)
        child.send_signal(signal.SIGCONT)
        code = child.wait(timeout=60)
    said = " ".join(err.read_text().split())
    changed = sorted(p for p, text in many.items() if (vault / p).read_text() != text)
    assert code == 130, said
    assert "Traceback" not in said
    assert 0 < len(changed) < 200, "the writes stopped at the Ctrl-C"
    for p, text in many.items():  # each note holds exactly one side of its diff: none is half-written
        assert (vault / p).read_text() in (text, "A short summary.\n"), p
    listed = [line.split()[0] for line in out.read_text().splitlines() if line.startswith("  Notes/")]
    assert listed == changed, "the listing names exactly the notes written"
    assert f"Stopped: {len(changed)} of 200 changes were written" in said
    assert f"--resume {data['batch_id']}" in said
    history = {e["path"]: e for e in map(lambda x: x.as_dict(), writes.history(vault))}
    for p in changed:
        assert history[p]["state"] == "applied" and history[p]["op_id"] == diffs[p]["op_id"]
    left = run_cli(["write", "batch", "--resume", data["batch_id"], "--json", "--vault", str(vault)])
    assert len(json.loads(left.stdout)["waiting"]) == 200 - len(changed), "the others stay planned"


def test_a_second_run_of_a_running_batch_is_refused_naming_the_holder_and_sends_nothing(
    vault: Path, isolated_env: Path
) -> None:
    script = [ChatStep(reply=REPLY, delay=4)]
    with ScriptedChatServer(reply=REPLY, script=script) as server:
        child = subprocess.Popen(
            [sys.executable, "-m", "vaultlens", "write", "batch", "--folder", "Notes", "--preset", "summarize",
             "--concurrency", "1", "--json", "--vault", str(vault), *model(server)],
            env=cli_env(isolated_env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not server.chats():  # the first run is sending its first note
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        batch_id = json.loads(state_file().read_text())["batch_id"]
        second = run_cli(
            ["write", "batch", "--resume", batch_id, "--json", "--vault", str(vault), *model(server)]
        )
        sent_meanwhile = len(server.chats())
        out, err = child.communicate(timeout=60)
        calls = sent_paths(server)
    assert second.exit_code == 6, second.output
    error = json.loads(second.stdout)["error"]
    assert error["code"] == "index_locked" and f"PID {child.pid}" in error["message"], error
    assert f"batch {batch_id}" in error["message"]
    assert sent_meanwhile == 1, "the second run sent nothing"
    assert child.returncode == 0, err
    assert sorted(calls) == [f"Notes/n{i}.md" for i in range(1, 7)], "each note sent once"
    again = run_cli(["write", "batch", "--resume", batch_id, "--json", "--vault", str(vault), *model(server)])
    assert again.exit_code == 0 and len(json.loads(again.stdout)["waiting"]) == 6, (
        "the lock went with its holder"
    )


def test_a_change_that_could_not_be_written_or_went_stale_is_planned_again_on_resume(vault: Path) -> None:
    with ScriptedChatServer(reply=REPLY) as server:
        planned = run_cli(["write", "batch", "--glob", "Notes/n[1-3].md", "--preset", "summarize", "--json",
                           "--vault", str(vault), *model(server)])  # fmt: skip
    data = json.loads(planned.stdout)
    ops = {w["path"]: w for w in data["waiting"]}
    edited = {p: NOTES[p] + "\nA line added after planning.\n" for p in ("Notes/n1.md", "Notes/n2.md")}
    write_vault(vault, edited)
    token = hashlib.sha256(ops["Notes/n2.md"]["diff"].encode()).hexdigest()
    with pytest.raises(WriteConflict):  # the user confirmed n2's diff, but the note had changed: conflict
        writes.apply(vault, ops["Notes/n2.md"]["op_id"], token)
    assert writes.journal(vault).entry(ops["Notes/n2.md"]["op_id"]).state == "conflict"
    with ScriptedChatServer(reply=REPLY) as server:
        resumed = run_cli(["write", "batch", "--resume", data["batch_id"], "--json", "--vault", str(vault),
                           *model(server)])  # fmt: skip
        calls = sent_paths(server)
    assert resumed.exit_code == 0, resumed.output
    assert sorted(calls) == ["Notes/n1.md", "Notes/n2.md"], "the stale and the refused note are sent again"
    again = json.loads(resumed.stdout)
    assert again["stale"] == [], "nothing is left stale"
    waiting = {w["path"]: w for w in again["waiting"]}
    assert sorted(waiting) == ["Notes/n1.md", "Notes/n2.md", "Notes/n3.md"]
    assert waiting["Notes/n3.md"]["op_id"] == ops["Notes/n3.md"]["op_id"], "a change still valid is kept"
    for p in edited:
        assert waiting[p]["op_id"] != ops[p]["op_id"]
        assert "-A line added after planning." in waiting[p]["diff"], "planned against the current text"
    details = {n["path"]: n["detail"] for n in again["notes"]}
    assert details == dict.fromkeys(["Notes/n1.md", "Notes/n2.md", "Notes/n3.md"], "")
    wrote = run_cli(
        ["write", "batch", "--resume", data["batch_id"], "--yes", "--json", "--vault", str(vault)]
    )
    assert [a["state"] for a in json.loads(wrote.stdout)["applied"]] == ["applied"] * 3, wrote.output
    assert (vault / "Notes/n1.md").read_text() == "A short summary.\n"


def test_a_batch_follows_its_vault_folder_when_it_moves_but_not_to_a_copy(vault: Path) -> None:
    with ScriptedChatServer(reply=REPLY) as server:
        planned = run_cli(["write", "batch", "--glob", "Notes/n[1-3].md", "--preset", "summarize", "--json",
                           "--vault", str(vault), *model(server)])  # fmt: skip
    batch_id = json.loads(planned.stdout)["batch_id"]
    copy = shutil.copytree(vault, vault.with_name("copy"))
    refused = run_cli(["write", "batch", "--resume", batch_id, "--yes", "--json", "--vault", str(copy)])
    assert refused.exit_code == 2 and "belongs to the vault" in refused.stdout, refused.output
    moved = vault.rename(vault.with_name("renamed"))
    with ScriptedChatServer(reply=REPLY) as server:
        resumed = run_cli(["write", "batch", "--resume", batch_id, "--yes", "--json", "--vault", str(moved),
                           *model(server)])  # fmt: skip
        assert server.chats() == [], "the planned changes are found again: nothing is sent"
    assert resumed.exit_code == 0, resumed.output
    data = json.loads(resumed.stdout)
    assert data["vault"] == str(moved) and [a["state"] for a in data["applied"]] == ["applied"] * 3
    assert [(moved / f"Notes/n{i}.md").read_text() for i in (1, 2, 3)] == ["A short summary.\n"] * 3
    assert [(copy / f"Notes/n{i}.md").read_text() for i in (1, 2, 3)] == [
        NOTES[f"Notes/n{i}.md"] for i in (1, 2, 3)
    ], "the copy is untouched"
