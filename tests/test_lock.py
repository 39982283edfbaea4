"""The writer lock: one writer per index folder, in this process and across processes, released
by the OS when its holder dies, and no POSIX-only call on vaultlens' import path."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from vaultlens.errors import IndexLocked
from vaultlens.index.lock import WriterLock

SRC = Path(__file__).resolve().parents[1] / "src" / "vaultlens"

HOLD = (
    "import sys, time; from pathlib import Path; from vaultlens.index.lock import WriterLock\n"
    "lock = WriterLock(Path(sys.argv[1])); lock.acquire(); print('locked', flush=True); time.sleep(60)\n"
)


def holder_pid(directory: Path) -> str:
    """The PID line of the lock file (the holder's command line follows it)."""
    return (directory / "writer.lock").read_text().split("\n")[0]


def _holder(directory: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_lock_in_the_same_process_is_refused(tmp_path: Path) -> None:
    first = WriterLock(tmp_path)
    first.acquire()
    try:
        assert first.held
        assert holder_pid(tmp_path) == str(os.getpid())
        with pytest.raises(IndexLocked) as info:
            WriterLock(tmp_path).acquire()
        assert f"PID {os.getpid()}" in info.value.message
        assert info.value.http_status == 423 and info.value.exit_code == 6
        with pytest.raises(IndexLocked):
            first.acquire()  # the same object twice is no re-entrant lock either
    finally:
        first.release()
    assert not first.held
    assert (tmp_path / "writer.lock").read_text() == ""  # the PID goes with the lock
    with WriterLock(tmp_path) as again:
        assert again.held
    first.release()  # releasing twice is harmless


def test_locks_on_different_folders_are_independent(tmp_path: Path) -> None:
    with WriterLock(tmp_path / "a"), WriterLock(tmp_path / "b"):
        pass


def test_the_context_manager_releases_on_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), WriterLock(tmp_path):
        raise RuntimeError("boom")
    with WriterLock(tmp_path):
        pass


def test_another_process_holding_it_is_named_and_a_kill_9_frees_it(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with pytest.raises(IndexLocked) as info:
            WriterLock(tmp_path).acquire()
        assert f"PID {proc.pid}" in info.value.message
        assert "searches keep working" in (info.value.hint or "")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert holder_pid(tmp_path) == str(proc.pid)  # the dead holder's PID stays...
    with WriterLock(tmp_path):  # ...but the OS released its lock: nothing stale to clean up
        assert holder_pid(tmp_path) == str(os.getpid())


def test_a_child_process_does_not_keep_the_lock(tmp_path: Path) -> None:
    lock = WriterLock(tmp_path)
    lock.acquire()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], close_fds=False)
    try:
        lock.release()
        with WriterLock(tmp_path):  # the child, still running, did not inherit the locked descriptor
            pass
    finally:
        child.kill()
        child.wait(timeout=10)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in {"ImportError", "ModuleNotFoundError"} for k in kinds)


def test_no_posix_only_module_or_call_on_the_import_path() -> None:
    """fcntl, os.pread/pwrite and friends do not exist on Windows: none may be used in vaultlens
    (the lock goes through portalocker, which picks the platform's own call). An import inside a
    ``try`` whose ``except ImportError`` takes the other platforms' way is allowed."""
    banned_modules = {"fcntl", "termios", "resource", "pwd", "grp"}
    banned_os = {"pread", "pwrite", "fork", "getuid", "geteuid", "setsid", "killpg", "O_DIRECTORY"}
    offenders: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = {  # an import in a try whose except ImportError is the other platforms' way
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers)
            for stmt in node.body
            for inner in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            names: list[str] = []
            if id(node) in guarded:
                continue
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module.split(".")[0]]
            offenders += [f"{path.relative_to(SRC)}: import {n}" for n in names if n in banned_modules]
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
                and node.attr in banned_os
            ):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}: os.{node.attr}")
    assert not offenders, offenders
