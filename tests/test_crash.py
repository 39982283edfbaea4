"""Crash safety: `vaultlens index` killed with SIGKILL (and interrupted with SIGINT) in the middle of a run.

After every kill the index passes `vaultlens doctor`, the next run embeds exactly what was missing
(strictly less than a full run), and the final index equals a clean full index of the same vault.
Kill points are chosen from what the store has committed, observed from outside through the
store's backend (the one the child is told to use), plus a seeded delay.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vaultlens.config.paths import index_dir
from vaultlens.errors import IndexNotFound
from vaultlens.index.indexing.indexer import COMMIT_CHUNKS
from vl_support import (
    VAULTLENS_BIN,
    backend_args,
    chunk_keys,
    cli_env,
    opened_store,
    run_index,
    settings,
    write_vault,
)

pytestmark = pytest.mark.slow

SEED = 20240611
N_NOTES = 1200
BATCH = 30  # notes per committed batch (index.batch_files): forty commits, kills within the first ten
KILL_WITHIN = 10  # commits: thirty more follow, so a kill lands mid-run however fast the embedding
BATCH_ENV = {"VAULTLENS_INDEX__BATCH_FILES": str(BATCH)}
WORDS = [
    "cache",
    "latency",
    "request",
    "server",
    "token",
    "policy",
    "header",
    "stale",
    "fresh",
    "browser",
    "garden",
    "tomato",
    "bread",
    "starter",
    "flour",
    "water",
    "river",
    "mountain",
    "train",
    "ticket",
    "budget",
    "invoice",
    "backup",
    "restore",
    "index",
    "query",
    "кэш",
    "задержка",
    "запрос",
    "сервер",
    "ключ",
    "политика",
    "свежий",
    "браузер",
    "сад",
    "хлеб",
    "мука",
    "вода",
    "река",
    "гора",
    "поезд",
    "бюджет",
]


def crash_vault(root: Path) -> Path:
    rng = random.Random(SEED)

    def para(i: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(14)).capitalize() + f" (note {i})."

    files = {f"area {i % 7}/Note {i:03d}.md": f"# Note {i:03d}\n\n{para(i)}\n" for i in range(N_NOTES)}
    return write_vault(root, files)


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return crash_vault(tmp_path_factory.mktemp("crash") / "vault")


@pytest.fixture(scope="module")
def reference(
    vault: Path, tmp_path_factory: pytest.TempPathFactory, use_provider, backend: str
) -> tuple[set, int]:
    """A clean full index of the same vault in its own home: its chunk keys and distinct texts."""
    store_dir = tmp_path_factory.mktemp("reference-home") / "index"
    s = settings(vault, **{"index.batch_files": str(BATCH)})
    stats = run_index(vault, store_dir, use_provider, s, backend)
    keys = chunk_keys(store_dir, backend)
    total = stats.chunks_embedded
    assert len(keys) == total == N_NOTES  # one chunk a note, every text distinct
    assert COMMIT_CHUNKS > BATCH  # so batches are cut by note count, every BATCH chunks
    return keys, total


def vectors_committed(store_dir: Path, backend: str) -> int:
    """Vectors a new reader sees right now (0 while the store does not exist yet)."""
    try:
        with opened_store(store_dir, backend) as store:
            return store.counts().vectors
    except IndexNotFound:
        return 0


_SPAWNED: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _no_leftover_indexer() -> Iterator[None]:
    """A failing test must not leave an indexer running."""
    yield
    while _SPAWNED:
        proc = _SPAWNED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def start_index(vault: Path, home: Path, log: Path, backend: str, *command: str) -> subprocess.Popen[bytes]:
    """``vaultlens index`` (or ``command``) on ``vault`` in the background, stderr to ``log``."""
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [str(VAULTLENS_BIN), *(command or ("index",)), "--vault", str(vault), *backend_args(backend)],
            env=cli_env(home, **BATCH_ENV),
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    _SPAWNED.append(proc)
    return proc


def wait_for_vectors(
    proc: subprocess.Popen[bytes], store_dir: Path, backend: str, at_least: int, timeout: float = 300
) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = vectors_committed(store_dir, backend)
        if n >= at_least:
            return n
        assert proc.poll() is None, (
            f"indexer exited ({proc.returncode}) before {at_least} vectors were committed"
        )
        time.sleep(0.03)
    raise AssertionError(f"no {at_least} committed vectors within {timeout}s")


def cli(args: list[str], home: Path, backend: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(VAULTLENS_BIN), *args, *backend_args(backend)],
        env=cli_env(home, **BATCH_ENV),
        capture_output=True,
        text=True,
        timeout=600,
    )


def store_problems(store_dir: Path, backend: str) -> list[str]:
    with opened_store(store_dir, backend) as store:
        return store.problems()


def _kill_points() -> list:
    """Five different commits to kill after (seeded), the first right away and the others a
    moment into the next batch. Points are counted in committed batches, not seconds, and sit in
    the first quarter of the run, so they stay mid-run on a fast machine and a slow one alike."""
    rng = random.Random(SEED)
    first, *later = sorted(rng.sample(range(1, KILL_WITHIN), 5))
    points = [pytest.param(first * BATCH, 0.0, id=f"right-after-commit-{first}")]
    for k in later:
        delay = round(rng.uniform(0.01, 0.05), 3)
        points.append(pytest.param(k * BATCH, delay, id=f"{delay}s-after-commit-{k}"))
    return points


KILL_POINTS = _kill_points()


@pytest.mark.parametrize(("wait_vectors", "delay"), KILL_POINTS)
def test_kill_9_mid_run_then_resume(
    vault: Path, reference: tuple[set, int], tmp_path: Path, backend: str, wait_vectors: int, delay: float
) -> None:
    ref_keys, total = reference
    home = tmp_path / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(home))
        store_dir = index_dir(vault)

    proc = start_index(vault, home, tmp_path / "run1.log", backend)
    wait_for_vectors(proc, store_dir, backend, wait_vectors)
    time.sleep(delay)
    assert proc.poll() is None, "the run finished before the kill; the kill point is too late"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL

    # the killed run left a consistent index: doctor passes, nothing half-written
    assert store_problems(store_dir, backend) == []
    doctor = cli(["doctor", "--vault", str(vault)], home, backend)
    assert doctor.returncode == 0, doctor.stderr
    present = vectors_committed(store_dir, backend)
    assert 0 < present < total
    assert present % BATCH == 0  # only whole batches were kept

    resumed = cli(["index", "--vault", str(vault), "--json"], home, backend)
    assert resumed.returncode == 0, resumed.stderr
    stats = json.loads(resumed.stdout)
    assert stats["chunks_embedded"] + present == total  # only what was missing
    assert stats["chunks_embedded"] < total
    assert stats["files_changed"] == N_NOTES - present

    assert chunk_keys(store_dir, backend) == ref_keys  # the same index a clean full run builds
    assert vectors_committed(store_dir, backend) == total
    assert store_problems(store_dir, backend) == []
    assert cli(["doctor", "--vault", str(vault)], home, backend).returncode == 0
    again = json.loads(cli(["index", "--vault", str(vault), "--json"], home, backend).stdout)
    assert (again["chunks_embedded"], again["files_changed"]) == (0, 0)


def test_ctrl_c_keeps_finished_batches_and_says_so(
    vault: Path, reference: tuple[set, int], tmp_path: Path, backend: str
) -> None:
    _, total = reference
    home = tmp_path / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(home))
        store_dir = index_dir(vault)
    log = tmp_path / "run.log"
    proc = start_index(vault, home, log, backend)
    wait_for_vectors(proc, store_dir, backend, 1)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    err = log.read_text(encoding="utf-8", errors="replace")
    assert "Indexing stopped" in err and "chunks embedded so far are saved" in err
    assert "vaultlens index" in err  # the hint says how to finish
    assert "Traceback" not in err and "error ignored" not in err  # nor a driver's warning
    assert store_problems(store_dir, backend) == []
    with opened_store(store_dir, backend) as store:
        run = store.last_run()
        assert run is not None and run.status == "cancelled"
        assert 0 < store.counts().vectors < total
    partial = cli(
        ["search", "note", "--vault", str(vault)], home, backend
    )  # results, and a word on what is missing
    assert partial.returncode == 0
    assert "was cancelled before it reached every note" in " ".join(partial.stderr.split())
    assert cli(["index", "--vault", str(vault)], home, backend).returncode == 0
    whole = cli(["search", "note", "--vault", str(vault)], home, backend)
    assert whole.returncode == 0 and "reached every note" not in whole.stderr


def test_ctrl_c_in_a_background_rebuild_says_how_to_resume_it(
    vault: Path, tmp_path: Path, backend: str
) -> None:
    """`index` updates the live index and never resumes a staged build, so the hint must name
    `rebuild --background`; the live index keeps answering meanwhile."""
    home = tmp_path / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(home))
        root = index_dir(vault)
    assert cli(["index", "--vault", str(vault)], home, backend).returncode == 0
    log = tmp_path / "rebuild.log"
    proc = start_index(vault, home, log, backend, "rebuild", "--background")
    wait_for_vectors(proc, root / "r1", backend, 1)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=120)
    err = " ".join(log.read_text(encoding="utf-8", errors="replace").split())
    assert code == 130, err
    assert "live index is untouched" in err and "vaultlens rebuild --background" in err
    assert "Traceback" not in err
    assert cli(["search", "note", "--vault", str(vault)], home, backend).returncode == 0
    resumed = json.loads(
        cli(["rebuild", "--background", "--vault", str(vault), "--json"], home, backend).stdout
    )
    assert resumed["resumed"] is True


@pytest.mark.parametrize("left_open", ["after BEGIN", "before COMMIT"])
def test_a_transaction_ctrl_c_left_open_between_statements_does_not_break_the_next_write(
    tmp_path: Path, left_open: str
) -> None:
    """Ctrl-C is raised between two statements: right after BEGIN returned (the block not entered) or
    after the block, before COMMIT, no handler sees the open transaction. The run's "cancelled" record
    must still land (it failed with "cannot start a transaction within a transaction", exit 4), and
    nothing of the open transaction is committed."""
    from vaultlens.index.sqlite.store import SQLiteStore

    store = SQLiteStore(tmp_path / "s", create=True)
    try:
        run_id = store.start_run()
        conn = store._conn  # the writer's connection, as the interrupted transaction() left it
        conn.execute("BEGIN IMMEDIATE")
        if left_open == "before COMMIT":
            conn.execute("INSERT INTO meta (key, value) VALUES ('half', 'written')")
        store.finish_run(run_id, "cancelled", {"chunks_embedded": 3})
        record = store.last_run()
        assert record is not None and record.status == "cancelled"
        assert store.get_meta("half") is None
    finally:
        store.close()
