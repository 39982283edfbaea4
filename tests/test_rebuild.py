"""Embedding-space changes: the estimate before any work, and `rebuild --background` next to the live
index (searchable meanwhile, atomic switch, old folder freed, SIGKILL-safe and resumable).

The two spaces are the real local model (the live index) and the scripted loopback server (the
new space), which answers after a fixed delay so a rebuild lasts long enough to search and kill.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

import vaultlens as services
from scripted_server import ScriptedEmbeddingServer
from space_support import DIMS, scripted_env, scripted_overrides, set_args, slow_server
from vaultlens.config.paths import index_dir
from vaultlens.errors import SpaceMismatch
from vaultlens.index.backends import get_backend
from vaultlens.index.lifecycle import POINTER, IndexHome
from vaultlens.index.sqlite.schema import DB_NAME
from vaultlens.services.app import App
from vl_support import (
    VAULTLENS_BIN,
    bilingual_vault,
    chunk_keys,
    cli_env,
    default_backend,
    opened_store,
    run_cli,
    run_index,
    write_vault,
)

SEED = 20240612

pytestmark = pytest.mark.usefixtures("store_under_test")  # VAULTLENS_TEST_STORE=postgres: both stores


def read_pointer(root: Path) -> str | None:
    """The live folder's name as the pointer file says, None before any background rebuild."""
    pointer = root / POINTER
    return pointer.read_text(encoding="utf-8").strip() if pointer.exists() else None


def staging_dir(root: Path) -> Path:
    return IndexHome(root, get_backend(default_backend())).staging_dir()


N_NOTES = 60
BUILD_ENV = {"VAULTLENS_INDEX__BATCH_FILES": "5"}


def rebuild_vault(root: Path) -> Path:
    rng = random.Random(SEED)
    words = [
        "river",
        "mountain",
        "bread",
        "starter",
        "cache",
        "latency",
        "garden",
        "budget",
        "train",
        "ticket",
    ]
    return write_vault(
        root,
        {
            f"topic{i % 6}/note{i:03d}.md": f"# Note {i}\n\n"
            + " ".join(rng.choice(words) for _ in range(60))
            + f"\n\n## Part two\n\nunique{i} "
            + " ".join(rng.choice(words) for _ in range(40))
            + "\n"
            for i in range(N_NOTES)
        },
    )


def problems(directory: Path) -> list[str]:
    with opened_store(directory) as store:
        return store.problems()


def committed_chunks(directory: Path) -> int:
    """SQLite-specific: chunks committed so far, read from the SQLite file while a child writes."""
    if not (directory / DB_NAME).exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{directory / DB_NAME}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0  # not created yet


def start_rebuild(vault: Path, home: Path, server: ScriptedEmbeddingServer) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(VAULTLENS_BIN), "rebuild", "--background", "--json", "--vault", str(vault)],
        env=cli_env(home, **scripted_env(server, batch_size=4), **BUILD_ENV),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_space_mismatch_states_the_estimate_and_offers_rebuild(tmp_path: Path, use_provider) -> None:
    vault = bilingual_vault(tmp_path / "vault")
    assert run_cli(["index", "--vault", str(vault)]).exit_code == 0
    other = {
        "embedding.provider": "ollama",
        "embedding.endpoint": "http://127.0.0.1:9",
        "embedding.model": "other",
        "embedding.dimensions": str(DIMS),
    }
    result = run_cli(["search", "хлеб", "--vault", str(vault), *set_args(other)])
    assert result.exit_code == SpaceMismatch.exit_code, result.output
    text = " ".join(result.output.split())
    with opened_store(App.open(vault).index_dir) as store:
        n = store.rebuild_estimate(App.open(vault, other).provider().space).chunks
    assert n > 0 and f"Re-embedding means {n:,} chunks" in text
    assert "chunks/s measured" in text  # the index run above measured a local rate
    assert "approximately" in text and "tokens" in text and "characters/4" in text
    assert "vaultlens rebuild" in text and "--background" in text

    status = run_cli(["status", "--json", "--vault", str(vault), *set_args(other)])
    info = json.loads(status.stdout)
    assert info["configured_space_matches"] is False
    change = info["space_change"]
    assert change["chunks"] == n and change["approx_tokens"] > 0 and change["seconds"] > 0
    plain = run_cli(["status", "--vault", str(vault), *set_args(other)])
    assert "vaultlens rebuild" in plain.stdout and f"{n:,} chunks" in " ".join(plain.stdout.split())


def test_clear_is_durable_and_status_says_so(tmp_path: Path, use_provider) -> None:
    vault = bilingual_vault(tmp_path / "vault")
    assert run_cli(["index", "--vault", str(vault)]).exit_code == 0
    assert run_cli(["clear", "--vault", str(vault)]).exit_code == 0
    for _ in range(2):  # a fresh process (App) each time: reopening keeps it empty
        info = json.loads(run_cli(["status", "--json", "--vault", str(vault)]).stdout)
        assert info["cleared"] is True and info["chunks"] == 0 and info["notes"] == 0
    assert "Cleared" in run_cli(["status", "--vault", str(vault)]).stdout
    assert run_cli(["doctor", "--vault", str(vault)]).exit_code == 0


@pytest.mark.slow
@pytest.mark.sqlite_only("watches the SQLite file of each folder")
def test_background_rebuild_keeps_the_old_index_searchable_then_switches(
    tmp_path: Path, isolated_env: Path, use_provider
) -> None:
    vault = rebuild_vault(tmp_path / "vault")
    old_app = App.open(vault)
    services.index(old_app)
    root = index_dir(vault)
    assert read_pointer(root) is None and (root / DB_NAME).exists()
    ok = after_switch = 0
    errors: list[str] = []
    with slow_server(0.03) as server:
        proc = start_rebuild(vault, isolated_env, server)
        while proc.poll() is None:
            try:
                hits = services.search(old_app, "river bread unique7", limit=5)
                assert hits and hits[0].path == "topic1/note007.md"
                ok += 1
            except SpaceMismatch:
                after_switch += 1  # this searcher's settings are the old space: expected after the switch
                assert read_pointer(root) == "r1"
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(repr(exc))
        out, err = proc.communicate()
        assert proc.returncode == 0, err
        assert not errors, errors[:3]
        assert ok >= 5, f"only {ok} searches ran during the rebuild"
        result = json.loads(out)
        assert result["chunks_embedded"] > 0 and result["index_dir"].endswith("r1")

        assert read_pointer(root) == "r1"
        assert not (root / DB_NAME).exists() and not list(root.glob("matrix-*")), (
            "the old index was not freed"
        )
        new_app = App.open(vault, scripted_overrides(server))
        assert new_app.index_dir == root / "r1"
        with new_app.reading() as store:
            space = store.space
        assert space is not None and space.provider == "ollama"
        assert problems(root / "r1") == []
        assert services.search(new_app, "unique7", limit=3)
        assert (
            run_cli(["doctor", "--vault", str(vault), *set_args(scripted_overrides(server))]).exit_code == 0
        )
        info = json.loads(
            run_cli(["status", "--json", "--vault", str(vault), *set_args(scripted_overrides(server))]).stdout
        )
        assert info["configured_space_matches"] and info["index_dir"] == str(root / "r1")


@pytest.mark.slow
@pytest.mark.sqlite_only("counts the chunks committed in the SQLite file while a child writes")
def test_sigkill_during_background_rebuild_keeps_the_old_index_and_resumes(
    tmp_path: Path, isolated_env: Path, use_provider
) -> None:
    rng = random.Random(SEED)
    vault = rebuild_vault(tmp_path / "vault")
    old_app = App.open(vault)
    services.index(old_app)
    root = index_dir(vault)
    stage = staging_dir(root)
    kills = 0
    with slow_server(0.03) as server:
        total = 0
        for _ in range(3):
            proc = start_rebuild(vault, isolated_env, server)
            floor = committed_chunks(stage) + rng.randint(1, 20)  # kill after a few more commits...
            deadline = time.monotonic() + 30
            while committed_chunks(stage) < floor and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 0.15))  # ...at a random point inside the next batch
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            proc.communicate()
            assert read_pointer(root) is None, "a killed rebuild must not switch"
            assert problems(root) == [] and problems(stage) == []
            hits = services.search(old_app, "river bread unique7", limit=5)
            assert hits and hits[0].path == "topic1/note007.md"
            total = committed_chunks(stage)
        assert kills >= 3
        assert total > 0, "no batch was committed before the kills"
        before = len(server.requests)
        proc = start_rebuild(vault, isolated_env, server)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        result = json.loads(out)
        assert result["resumed"] is True
        resumed_requests = len(server.requests) - before

        clean = tmp_path / "clean"
        with ScriptedEmbeddingServer(dims=DIMS) as fresh:
            app = App.open(vault, scripted_overrides(fresh, batch_size=4))
            run_index(vault, clean, app.provider(), app.settings)
            full_requests = len(fresh.requests)
    assert resumed_requests < full_requests, "the resumed rebuild re-embedded finished batches"
    assert read_pointer(root) == "r1" and not (root / DB_NAME).exists()
    assert chunk_keys(root / "r1") == chunk_keys(clean)
    assert problems(root / "r1") == []
