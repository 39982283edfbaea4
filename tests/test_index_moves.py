"""A folder renamed between two `index` runs: every note is moved in one step (its old path is
deleted in the transaction that writes its new one), so a search during the run finds each note
under one of its two paths, never under neither; nothing is embedded again, and a run stopped
between batches leaves every note findable."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import vaultlens
from vaultlens.errors import Cancelled
from vaultlens.services.app import App
from vaultlens.testing import HashingEmbeddingProvider
from vl_support import file_records, write_vault

pytestmark = pytest.mark.usefixtures("store_under_test")  # VAULTLENS_TEST_STORE=postgres: both stores

N = 12  # notes in the renamed folder; two per batch, so the move spans six commits


def note(i: int) -> str:
    return f"# Project note {i}\n\nThe pelican migration, step {i}: count the birds at lake {i}.\n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(
        tmp_path / "vault",
        {
            **{f"Projects/Note {i:02d}.md": note(i) for i in range(N)},
            "Garden.md": "# Garden\n\nTomatoes need sun.\n",
        },
    )


@pytest.fixture
def app(vault: Path) -> Iterator[App]:
    app = App.open(vault, {"index.batch_files": "2"}, provider=HashingEmbeddingProvider())
    vaultlens.index(app)
    yield app
    app.close()


def where(paths: set[str], i: int) -> set[str]:
    """Under which of its two paths note ``i`` is found."""
    return {p for p in (f"Projects/Note {i:02d}.md", f"Archive/Note {i:02d}.md") if p in paths}


def indexed_paths(app: App) -> set[str]:
    return {path for path, record in file_records(app).items() if record.status == "indexed"}


def store_class(app: App) -> Any:
    """The class of the App's store (whichever backend it runs on), whose ``apply`` a test wraps."""
    with app.reading() as store:
        return type(store)


def test_a_renamed_folder_stays_searchable_while_index_runs(
    app: App, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (vault / "Projects").rename(vault / "Archive")

    # After every commit of the run, the writer waits until a search that started after that
    # commit has finished, so every state a reader can see is searched at least once.
    cond = threading.Condition()
    commits = [0]
    searched = [0]  # the highest commit count a finished search started after
    done = threading.Event()
    results: list[set[str]] = []
    errors: list[BaseException] = []

    def searcher() -> None:
        while not done.is_set():
            with cond:
                started = commits[0]
            try:
                hits = vaultlens.search(app, "pelican migration", limit=100)
            except BaseException as exc:  # noqa: BLE001 - reported by the test thread
                errors.append(exc)
                return
            results.append({h.path for h in hits})
            with cond:
                searched[0] = max(searched[0], started)
                cond.notify_all()

    cls = store_class(app)
    real_apply = cls.apply

    def apply_then_let_a_search_see_it(self: object, *args: object, **kw: object) -> None:
        real_apply(self, *args, **kw)
        with cond:
            commits[0] += 1
            target = commits[0]
            assert cond.wait_for(lambda: searched[0] >= target or bool(errors), timeout=60)

    monkeypatch.setattr(cls, "apply", apply_then_let_a_search_see_it)
    thread = threading.Thread(target=searcher, daemon=True)
    thread.start()
    try:
        stats = vaultlens.index(app)
    finally:
        done.set()
        thread.join(timeout=60)
    assert not errors, errors
    assert commits[0] >= 6  # the move really was spread over several batches
    assert (stats.files_changed, stats.files_deleted) == (N, N)
    assert (stats.chunks_embedded, stats.chunks_reused) == (0, N)  # the vectors are reused
    assert len(results) >= commits[0]
    for paths in results:
        for i in range(N):
            assert len(where(paths, i)) >= 1, (
                f"note {i} missing from a search during the run: {sorted(paths)}"
            )
    final = indexed_paths(app)
    assert all(where(final, i) == {f"Archive/Note {i:02d}.md"} for i in range(N))


def test_a_run_stopped_between_batches_of_a_move_loses_no_note(
    app: App, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (vault / "Projects").rename(vault / "Archive")
    cls = store_class(app)
    real_apply = cls.apply
    calls = [0]

    def stop_at_the_third_commit(self: object, *args: object, **kw: object) -> None:
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt  # Ctrl-C (or a kill) with two batches of the move committed
        real_apply(self, *args, **kw)

    monkeypatch.setattr(cls, "apply", stop_at_the_third_commit)
    with pytest.raises(Cancelled):
        vaultlens.index(app)
    monkeypatch.undo()

    paths = indexed_paths(app)
    placed = [where(paths, i) for i in range(N)]
    assert all(placed), "a moved note is in the index under neither path"
    assert any(p == {f"Archive/Note {i:02d}.md"} for i, p in enumerate(placed))  # some moves landed
    assert any(p == {f"Projects/Note {i:02d}.md"} for i, p in enumerate(placed))  # others not yet
    assert vaultlens.doctor(app).healthy

    vaultlens.index(app)  # the next run finishes the move
    paths = indexed_paths(app)
    assert all(where(paths, i) == {f"Archive/Note {i:02d}.md"} for i in range(N))
    assert "Garden.md" in paths
