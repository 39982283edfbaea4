"""Readers and the writer at the same time: every search sees one complete generation, and a long
reader neither blocks the writer nor sees its commits.

Every edit round rewrites all notes with one round marker and indexes them in one batch, so each
committed generation holds exactly one marker in every note, and every chunk gets a new row. A
search asks for all notes while only half contain the query word: the other half can only come
from the dense matrix. A search that mixed generations loses them (the matrix names rows of
another generation than the chunk rows it reads) or shows two markers; with the snapshot
disabled in the search verb (``App.reading``) this test fails.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import vaultlens
from scripted_server import ScriptedEmbeddingServer
from space_support import DIMS, scripted_env, scripted_overrides
from vaultlens.index.store import FileRecord, NoteUpdate, Store
from vl_support import REPO, cli_env, open_app, opened_store, write_vault

N_NOTES = 100
BIRDS = ("pelican", "heron")  # the query word is in half the notes: the rest only come from dense rows
MARK = re.compile(r"\bround(\d+)mark\b")
SEARCHES = 300  # searches the generation test checks
HANG_S = 900.0  # a test that has not got its samples by then hangs (a busy 2-core machine needs far less)

SEARCHER = """
import json, sys, time
from pathlib import Path
import vaultlens

vault, stop, n, backend = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
app = vaultlens.App.open(vault, {"index.backend": backend})
while not stop.exists():
    try:
        hits = vaultlens.search(app, "pelican", limit=n, sections=1)
        print(json.dumps({"notes": [h.path for h in hits], "text": [h.sections[0].snippet for h in hits]}))
    except Exception as exc:  # every error is a failure the test reports
        print(json.dumps({"error": repr(exc)}))
    sys.stdout.flush()
"""


def write_round(vault: Path, k: int) -> None:
    """Round ``k``: every note gets marker k; the extra notes have text in odd rounds and are empty
    (skipped, no chunks) in even ones, so the count of searchable notes tells the generations apart."""
    files = {f"notes/n{i:02d}.md": _note(i, BIRDS[i % 2], k) for i in range(N_NOTES)}
    files.update({f"extra/e{i:02d}.md": _note(i, "heron", k) if k % 2 else "" for i in range(N_NOTES)})
    write_vault(vault, files)


def expected_notes(k: int) -> int:
    return 2 * N_NOTES if k % 2 else N_NOTES


def _note(i: int, bird: str, k: int) -> str:
    return f"# Note {i}\n\nThe {bird} flies over lake {i}. round{k}mark is the edit.\n"


@pytest.mark.slow
def test_searches_see_one_complete_generation_while_another_process_writes(
    tmp_path: Path, isolated_env: Path, backend: str
) -> None:
    vault = tmp_path / "vault"
    write_round(vault, 0)
    with ScriptedEmbeddingServer(dims=DIMS) as server:
        app = open_app(vault, backend, {**scripted_overrides(server), "index.batch_files": "1000"})
        vaultlens.index(app)
        stop = tmp_path / "stop"
        searcher = subprocess.Popen(
            [sys.executable, "-c", SEARCHER, str(vault), str(stop), str(3 * N_NOTES), backend],
            env=cli_env(isolated_env, **scripted_env(server)),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        lines: list[str] = []
        pump = threading.Thread(target=lambda: lines.extend(searcher.stdout or []), daemon=True)
        pump.start()
        rounds = 0
        deadline = time.monotonic() + HANG_S  # only against a hang: the rounds go on until the samples are in
        try:
            while not enough(lines, rounds):
                assert searcher.poll() is None, "the searcher died"
                assert time.monotonic() < deadline, f"{len(lines)} searches and {rounds} rounds in {HANG_S} s"
                rounds += 1
                write_round(vault, rounds)
                vaultlens.index(app)
        finally:
            stop.touch()
            searcher.wait(timeout=60)
            pump.join(10)
    results = [json.loads(line) for line in lines]
    errors = [r["error"] for r in results if "error" in r]
    assert searcher.returncode == 0, searcher.stderr.read() if searcher.stderr else ""
    assert not errors, errors[:3]
    for r in results:
        markers = {int(m) for text in r["text"] for m in MARK.findall(text)}
        assert len(markers) == 1, f"one result set mixes generations {sorted(markers)}"
        k = markers.pop()
        assert len(r["notes"]) == expected_notes(k), f"generation {k} but {len(r['notes'])} notes"
    print(f"{len(results)} searches, {rounds} rounds, {len(generations(results))} generations seen")


def generations(results: list[dict[str, Any]]) -> set[int]:
    """The round markers the searches saw (a mixed set counts each of its markers)."""
    return {int(m) for r in results if "text" in r for text in r["text"] for m in MARK.findall(text)}


def enough(lines: list[str], rounds: int) -> bool:
    """The samples the generation test needs: SEARCHES searches over at least 5 rounds, seeing at least
    3 generations (fewer would not mean anything); an error line ends the rounds, to be reported."""
    results = [json.loads(line) for line in list(lines)]
    if any("error" in r for r in results):
        return True
    return len(results) >= SEARCHES and rounds >= 5 and len(generations(results)) >= 3


def _update(store: Store, path: str) -> None:
    store.apply(updates=[NoteUpdate(FileRecord(path, "note", 1, 1, "h", "skipped", "test"))])


def test_a_long_reader_does_not_block_the_writer_and_keeps_its_snapshot(tmp_path: Path, backend: str) -> None:
    with (
        opened_store(tmp_path / "ix", backend, create=True) as reader,
        opened_store(tmp_path / "ix", backend) as writer,
    ):
        _update(writer, "a.md")
        with reader.snapshot() as gen:
            before = reader.file_records()
            # another connection, as another process would be; a writer that waits for the reader
            # would wait here for ever (the reader ends its snapshot only after it)
            done = threading.Thread(target=_update, args=(writer, "b.md"), daemon=True)
            done.start()
            done.join(60)  # generous: it takes milliseconds
            assert not done.is_alive(), "the writer waited for the reader"
            assert writer.generation == gen + 1
            assert reader.generation == gen and reader.file_records() == before
        assert reader.generation == gen + 1 and "b.md" in reader.file_records()


def test_threads_of_one_store_get_their_own_snapshots(tmp_path: Path, backend: str) -> None:
    holding, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def long_reader() -> None:
        with store.snapshot() as gen:
            seen.append(gen)
            holding.set()
            release.wait(10)
            seen.append(store.generation)

    with opened_store(tmp_path / "ix", backend, create=True) as store:
        t = threading.Thread(target=long_reader)
        t.start()
        assert holding.wait(10)
        _update(store, "c.md")  # the same store object, from another thread, while the reader holds
        assert store.generation == seen[0] + 1
        release.set()
        t.join(10)
        assert seen == [seen[0], seen[0]], "the reader saw a commit made during its snapshot"


@pytest.mark.slow
@pytest.mark.parametrize("n_threads", [4])
def test_concurrent_searches_in_one_process(tmp_path: Path, backend: str, n_threads: int) -> None:
    vault = tmp_path / "vault"
    write_round(vault, 0)
    with ScriptedEmbeddingServer(dims=DIMS) as server:
        app = open_app(vault, backend, scripted_overrides(server))
        vaultlens.index(app)
        errors: list[str] = []
        counts: list[int] = []

        def search_loop() -> None:
            for _ in range(15):
                try:
                    counts.append(len(vaultlens.search(app, "pelican", limit=N_NOTES)))
                except Exception as exc:  # noqa: BLE001 - collected and asserted by the test thread
                    errors.append(repr(exc))

        threads = [threading.Thread(target=search_loop) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for k in range(1, 4):
            write_round(vault, k)
            vaultlens.index(open_app(vault, backend, scripted_overrides(server)))
        for t in threads:
            t.join(60)
    assert not errors, errors[:3]
    assert counts and set(counts) == {N_NOTES}
