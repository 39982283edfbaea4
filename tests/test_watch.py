"""`vaultlens watch`: coalescing rules on synthetic events, then the real watchdog observer on real
files with the real model, a second writer refused, a cleared index refused, Ctrl-C, and SIGKILL
at seeded random points while notes are being edited."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileClosedNoWriteEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
)

import vaultlens
from pdf_support import pdf_bytes
from scripted_server import ScriptedEmbeddingServer
from server_support import CHILD
from vaultlens.errors import StoreError, VaultError
from vaultlens.index import watcher
from vaultlens.index.indexing import tier_fill
from vaultlens.index.indexing.indexer import Indexer
from vaultlens.index.watcher import Batch, Coalescer, FlushReport
from vaultlens.server import runtime
from vaultlens.services.app import App
from vl_support import (
    VAULTLENS_BIN,
    RecordingProvider,
    backend_args,
    chunk_keys,
    cli_env,
    file_records,
    open_app,
    opened_store,
    run_cli,
    run_index,
    snapshot,
    write_vault,
)

DEBOUNCE_MS = 200

# ---- the coalescing rules, on synthetic events -------------------------------------------------------


@pytest.fixture
def co(tmp_path: Path) -> Coalescer:
    return Coalescer(tmp_path)


def feed(co: Coalescer, root: Path, *events: tuple[type, str] | tuple[type, str, str]) -> Batch:
    for cls, *paths in events:
        co.add(cls(*(str(root / p) for p in paths)))
    return co.drain()


def test_modifies_of_one_note_become_one_upsert(co: Coalescer, tmp_path: Path) -> None:
    batch = feed(co, tmp_path, *[(FileModifiedEvent, "a.md")] * 5, (FileClosedEvent, "a.md"))
    assert batch == Batch(upserts=frozenset({"a.md"}))


def test_upsert_then_delete_is_a_delete(co: Coalescer, tmp_path: Path) -> None:
    batch = feed(
        co, tmp_path, (FileCreatedEvent, "a.md"), (FileModifiedEvent, "a.md"), (FileDeletedEvent, "a.md")
    )
    assert batch == Batch(deletes=frozenset({"a.md"}))


def test_delete_then_create_is_an_upsert(co: Coalescer, tmp_path: Path) -> None:
    batch = feed(co, tmp_path, (FileDeletedEvent, "a.md"), (FileCreatedEvent, "a.md"))
    assert batch == Batch(upserts=frozenset({"a.md"}))


def test_a_file_move_deletes_the_old_path_and_upserts_the_new(co: Coalescer, tmp_path: Path) -> None:
    batch = feed(co, tmp_path, (FileCreatedEvent, "a.md"), (FileMovedEvent, "a.md", "sub/b.md"))
    assert batch == Batch(upserts=frozenset({"sub/b.md"}), deletes=frozenset({"a.md"}))


def test_each_end_of_a_move_is_filtered_on_its_own(co: Coalescer, tmp_path: Path) -> None:
    # an editor's atomic save (temp file renamed over the note), a rename away from .md, a move to the trash
    batch = feed(
        co,
        tmp_path,
        (FileMovedEvent, ".a.md.swp", "a.md"),
        (FileMovedEvent, "b.md", "b.txt"),
        (FileMovedEvent, "c.md", ".trash/c.md"),
    )
    assert batch == Batch(upserts=frozenset({"a.md"}), deletes=frozenset({"b.md", "c.md"}))


def test_folder_events_list_the_folder_at_flush_time(co: Coalescer, tmp_path: Path) -> None:
    batch = feed(
        co,
        tmp_path,
        (DirMovedEvent, "old", "new"),
        (DirCreatedEvent, "made"),
        (DirCreatedEvent, "made/inner"),  # covered by listing "made"
        (DirDeletedEvent, "gone"),
        (DirMovedEvent, "kept", ".trash/kept"),  # the hidden end is dropped
        (DirModifiedEvent, "other"),  # says nothing about notes
    )
    assert batch == Batch(folders=frozenset({"old", "new", "made", "gone", "kept"}))


def test_dot_folders_non_notes_reads_and_outside_paths_are_ignored(co: Coalescer, tmp_path: Path) -> None:
    batch = feed(
        co,
        tmp_path,
        (FileModifiedEvent, ".obsidian/workspace.md"),
        (FileCreatedEvent, ".trash/x.md"),
        (FileCreatedEvent, "image.png"),
        (FileOpenedEvent, "a.md"),
        (FileClosedNoWriteEvent, "a.md"),
        (DirCreatedEvent, ".git/objects"),
        (FileModifiedEvent, "../elsewhere.md"),
    )
    assert not batch
    assert feed(co, tmp_path, (FileCreatedEvent, "Upper.MD")) == Batch(upserts=frozenset({"Upper.MD"}))


@pytest.mark.parametrize("rules", [".vaultlensignore", ".obsidian/app.json"])
def test_a_change_to_the_ignore_rules_asks_for_a_full_reconcile(
    co: Coalescer, tmp_path: Path, rules: str
) -> None:
    batch = feed(co, tmp_path, (FileModifiedEvent, rules), (FileModifiedEvent, "a.md"))
    assert batch.full and "a.md" in batch.upserts
    co.request_full("overflow")
    assert co.drain().full == "overflow"
    assert not co.drain()  # drained means empty


def test_wait_flushes_only_after_the_quiet_period(co: Coalescer, tmp_path: Path) -> None:
    stop = threading.Event()
    assert co.wait(0.05, stop, timeout=0.05) is None  # nothing pending
    co.add(FileModifiedEvent(str(tmp_path / "a.md")))
    started = time.monotonic()
    batch = co.wait(0.15, stop, timeout=5)
    assert batch == Batch(upserts=frozenset({"a.md"}))
    assert time.monotonic() - started >= 0.14
    co.add(FileModifiedEvent(str(tmp_path / "a.md")))
    stop.set()
    assert co.wait(10, stop) is None  # stop wins over a pending batch; it is not lost
    assert co.drain() == Batch(upserts=frozenset({"a.md"}))


# ---- the real observer on real files -------------------------------------------------------------------


def note(title: str, body: str) -> str:
    return f"# {title}\n\n{body}\n"


class Running:
    """`watch` in a thread of this process, with a recording provider; reports arrive on a queue."""

    def __init__(
        self,
        vault: Path,
        rec: RecordingProvider,
        backend: str,
        debounce_ms: int = DEBOUNCE_MS,
        max_wait_ms: int = 10_000,
        overrides: dict[str, str] | None = None,
    ) -> None:
        timing = {"watch.debounce_ms": str(debounce_ms), "watch.max_wait_ms": str(max_wait_ms)}
        self.app = open_app(vault, backend, {**timing, **(overrides or {})}, provider=rec)
        self.rec = rec
        self.reports: queue.Queue[FlushReport | BaseException] = queue.Queue()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            vaultlens.watch(self.app, self.reports.put, self.stop)
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            self.reports.put(exc)

    def next(self, timeout: float = 15) -> FlushReport:
        item = self.reports.get(timeout=timeout)
        if isinstance(item, BaseException):
            raise item
        return item

    def quiet(self, seconds: float = DEBOUNCE_MS / 1000 * 3) -> None:
        """No further flush happens for a while (the previous one took every event)."""
        with pytest.raises(queue.Empty):
            self.reports.get(timeout=seconds)

    def __enter__(self) -> Running:
        self.thread.start()
        self.startup = self.next(timeout=60)
        assert self.startup.kind == "startup"
        self.rec.reset()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=15)
        assert not self.thread.is_alive()
        self.app.close()


def indexed(app: App) -> dict[str, int]:
    """Indexed notes -> their chunk count (skipped files and folders have records too)."""
    return {p: r.n_chunks for p, r in file_records(app).items() if r.status == "indexed"}


def generation(app: App) -> int:
    with app.reading() as store:
        return store.generation


def chunk_texts(app: App, path: str) -> list[str]:
    """The texts of a note's chunks in the live index, in note order."""
    with app.reading() as store:
        chunks = store.chunks(store.note_chunk_keys([path]).get(path, [])).values()
        return [c.text for c in sorted(chunks, key=lambda c: c.ordinal)]


@pytest.fixture
def rec(use_provider) -> RecordingProvider:
    return RecordingProvider(use_provider)


@pytest.fixture
def vault(tmp_path: Path, rec: RecordingProvider, backend: str) -> Path:
    """A small vault, indexed once."""
    root = write_vault(
        tmp_path / "vault",
        {
            "Garden.md": note("Garden", "Tomatoes need sun, water and a stake against the wind."),
            "Bread.md": note("Bread", "Rye sourdough rises slowly in a cool kitchen overnight."),
            **{
                f"Projects/Note {i:02d}.md": note(f"Note {i:02d}", f"Project step {i}: review the plan.")
                for i in range(20)
            },
        },
    )
    app = open_app(root, backend, provider=rec)
    try:
        vaultlens.index(app)
    finally:
        app.close()
    return root


def test_five_modifies_of_one_note_give_one_embedding_batch(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    with Running(vault, rec, backend) as w:
        for i in range(5):
            (vault / "Garden.md").write_text(note("Garden", f"Tomatoes, version {i}."), encoding="utf-8")
            time.sleep(0.02)
        report = w.next()
        w.quiet()
        assert report.kind == "changes" and report.stats is not None
        assert (report.stats.files_changed, report.stats.chunks_embedded) == (1, 1)
        assert len(rec.calls) == 1 and "version 4" in rec.calls[0][0]  # the last saved text only
        assert chunk_texts(w.app, "Garden.md") == [note("Garden", "Tomatoes, version 4.").strip()]


def test_modify_then_delete_embeds_nothing_and_the_note_is_gone(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    with Running(vault, rec, backend) as w:
        (vault / "Bread.md").write_text(note("Bread", "A changed loaf."), encoding="utf-8")
        (vault / "Bread.md").unlink()
        report = w.next()
        assert report.stats is not None and report.stats.files_deleted == 1
        assert rec.calls == []
        assert "Bread.md" not in indexed(w.app)


def test_create_then_rename_upserts_only_the_new_path(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    with Running(vault, rec, backend) as w:
        (vault / "Draft.md").write_text(note("Plums", "Plum jam needs less sugar than you think."))
        (vault / "Draft.md").rename(vault / "Plum jam.md")
        report = w.next()
        w.quiet()
        assert report.stats is not None
        assert (report.stats.files_changed, report.stats.files_deleted) == (1, 0)
        assert len(rec.calls) == 1 and len(rec.texts) == 1
        paths = indexed(w.app)
        assert "Plum jam.md" in paths and "Draft.md" not in paths


def test_moving_a_folder_of_20_notes_moves_every_note_without_embedding(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    with Running(vault, rec, backend) as w:
        before = generation(w.app)
        (vault / "Projects").rename(vault / "Archive")
        report = w.next()
        w.quiet()
        assert report.stats is not None
        assert (report.stats.files_changed, report.stats.files_deleted) == (20, 20)
        assert rec.calls == []  # the chunk texts did not change: every vector is reused
        assert generation(w.app) == before + 1  # one committed batch: no reader saw notes missing
        paths = indexed(w.app)
        assert sorted(p for p in paths if p.startswith("Archive/")) == [
            f"Archive/Note {i:02d}.md" for i in range(20)
        ]
        assert not any(p.startswith("Projects/") for p in paths)


def test_an_edit_made_while_not_watching_is_picked_up_at_start(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    (vault / "Garden.md").write_text(note("Garden", "Edited while vaultlens was off."), encoding="utf-8")
    (vault / "Bread.md").unlink()
    with Running(vault, rec, backend) as w:
        stats = w.startup.stats
        assert stats is not None
        assert (stats.files_changed, stats.files_deleted, stats.chunks_embedded) == (1, 1, 1)
        assert "Edited while vaultlens was off." in chunk_texts(w.app, "Garden.md")[0]


def test_a_note_created_inside_a_new_folder_is_found(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    with Running(vault, rec, backend) as w:
        folder = vault / "Trips" / "2024"
        folder.mkdir(parents=True)  # the note lands before the observer watches the new folder
        (folder / "Lisbon.md").write_text(note("Lisbon", "Trams, tiles and custard tarts."))
        report = w.next()
        assert report.stats is not None and report.stats.files_changed == 1
        assert "Trips/2024/Lisbon.md" in indexed(w.app)


def test_hidden_and_ignored_paths_stay_out_and_a_note_moved_to_the_trash_is_removed(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    (vault / ".trash").mkdir()
    with Running(vault, rec, backend) as w:
        (vault / "Garden.md").rename(vault / ".trash" / "Garden.md")
        (vault / ".obsidian").mkdir()
        (vault / ".obsidian" / "Config.md").write_text("# not a note\n")
        report = w.next()
        assert report.stats is not None and report.stats.files_deleted == 1
        paths = indexed(w.app)
        assert "Garden.md" not in paths and not any(p.startswith(".") for p in paths)
        (vault / ".vaultlensignore").write_text("Projects/\n")  # new rules: a full reconcile applies them
        report = w.next()
        assert report.kind == "reconcile"
        paths = indexed(w.app)
        assert not any(p.startswith("Projects/Note") for p in paths)
        assert rec.calls == []


def test_a_pdf_and_a_canvas_saved_while_watching_are_indexed_and_a_deleted_pdf_leaves(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    with Running(vault, rec, backend) as w:
        (vault / "paper.pdf").write_bytes(pdf_bytes([["First page."], ["The zephyr on page two."]]))
        (vault / "board.canvas").write_text(
            json.dumps({"nodes": [{"id": "c1", "type": "text", "text": "A card of text"}]}), encoding="utf-8"
        )
        deadline = time.monotonic() + 30
        while {"paper.pdf", "board.canvas"} - set(indexed(w.app)) and time.monotonic() < deadline:
            w.next()
        assert indexed(w.app)["paper.pdf"] == 2 and indexed(w.app)["board.canvas"] == 1
        with w.app.reading() as store:
            keys = store.note_chunk_keys(["paper.pdf"])["paper.pdf"]
            assert sorted(c.page or 0 for c in store.chunks(keys).values()) == [1, 2]
        (vault / "paper.pdf").unlink()
        report = w.next()
        assert report.stats is not None and report.stats.files_deleted == 1
        assert "paper.pdf" not in indexed(w.app)


def test_lost_events_fall_back_to_a_full_reconcile(vault: Path, rec: RecordingProvider, backend: str) -> None:
    with Running(vault, rec, backend) as w:
        # what watchdog logs (and otherwise swallows) when the kernel queue overflows
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        report = w.next()
        assert report.kind == "reconcile" and "overflowed" in report.reason


@pytest.mark.slow
def test_a_failed_flush_is_retried_as_a_full_reconcile(
    vault: Path, rec: RecordingProvider, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watcher, "MAX_RETRY_S", 0.05)
    real_sync = Indexer.sync
    failures = iter([StoreError("database is locked")])

    def flaky_sync(self: Indexer, *args: object) -> object:
        for exc in failures:
            raise exc
        return real_sync(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Indexer, "sync", flaky_sync)
    with Running(vault, rec, backend) as w:
        (vault / "Garden.md").write_text(note("Garden", "Saved while the store was busy."), encoding="utf-8")
        assert w.next().kind == "error"
        report = w.next()
        assert report.kind == "reconcile" and report.stats is not None
        assert report.stats.files_changed == 1  # the change lost with the failed flush is found again
        assert "store was busy" in chunk_texts(w.app, "Garden.md")[0]


@pytest.mark.slow
def test_a_second_watcher_or_indexer_in_another_process_is_refused(
    vault: Path, rec: RecordingProvider, backend: str, isolated_env: Path
) -> None:
    with Running(vault, rec, backend):
        for command in ("watch", "index"):
            proc = subprocess.run(
                [str(VAULTLENS_BIN), command, "--vault", str(vault), *backend_args(backend)],
                env=cli_env(isolated_env),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert proc.returncode == 6, proc.stderr
            assert f"PID {os.getpid()}" in proc.stderr


def test_watch_refuses_a_cleared_index_until_it_is_indexed_again(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    app = open_app(vault, backend, provider=rec)
    try:
        vaultlens.clear(app)
        with pytest.raises(StoreError, match="was cleared") as caught:
            vaultlens.watch(app, lambda r: None, threading.Event())
        assert caught.value.hint and "vaultlens index" in caught.value.hint
        assert indexed(app) == {}  # nothing was rebuilt behind the user's back
        vaultlens.index(app)
    finally:
        app.close()
    with Running(vault, rec, backend) as w:
        assert "Garden.md" in indexed(w.app)


@pytest.mark.slow
def test_ctrl_c_stops_watch_cleanly(vault: Path, backend: str, isolated_env: Path, tmp_path: Path) -> None:
    log = tmp_path / "watch.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(VAULTLENS_BIN), "watch", "--vault", str(vault), *backend_args(backend)],
            env=cli_env(isolated_env),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_text(log, "Watching", proc)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text(encoding="utf-8")
    assert "Stopped watching" in text and "Traceback" not in text
    app = open_app(vault, backend)
    try:
        vaultlens.index(app)  # the lock was released
    finally:
        app.close()


def wait_for_text(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(encoding="utf-8", errors="replace"):
            return
        assert proc.poll() is None, log.read_text(encoding="utf-8", errors="replace")
        time.sleep(0.02)
    raise AssertionError(f"{text!r} not printed within {timeout}s")


# ---- SIGKILL at random points while notes are edited ----------------------------------------------------

SEED = 20240917
KILLS = 12
WORDS = ["cache", "river", "bread", "ticket", "garden", "budget", "хлеб", "река", "поезд", "сад"]


class Editor:
    """Seeded random edits of a vault, mirrored in ``expected`` (path -> bytes) to check nothing else changed."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.expected = {
            p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
        }
        self.counter = 0

    def _text(self) -> bytes:
        self.counter += 1
        words = " ".join(self.rng.choice(WORDS) for _ in range(12))
        return f"# Edit {self.counter}\n\n{words} ({self.counter}).\n".encode()

    def _write(self, rel: str, data: bytes) -> None:
        (self.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (self.root / rel).write_bytes(data)
        self.expected[rel] = data

    def step(self) -> None:
        notes = sorted(self.expected)
        op = self.rng.choice(["modify", "modify", "create", "delete", "rename", "folder"])
        rel = self.rng.choice(notes) if notes else None
        if op == "modify" and rel:
            self._write(rel, self.expected[rel] + self._text())
        elif op == "delete" and rel and len(notes) > 5:
            (self.root / rel).unlink()
            del self.expected[rel]
        elif op == "rename" and rel:
            new = f"{rel.rpartition('/')[0] or 'top'}/renamed {self.counter}.md"
            self.counter += 1
            (self.root / new).parent.mkdir(parents=True, exist_ok=True)
            (self.root / rel).rename(self.root / new)
            self.expected[new] = self.expected.pop(rel)
        elif op == "folder":
            folders = sorted({p.rpartition("/")[0] for p in notes if "/" in p})
            if folders:
                old = self.rng.choice(folders)
                new = f"moved {self.counter}"
                self.counter += 1
                (self.root / old).rename(self.root / new)
                for p in [p for p in self.expected if p.startswith(old + "/")]:
                    self.expected[new + p[len(old) :]] = self.expected.pop(p)
        else:
            self._write(f"area {self.rng.randrange(3)}/new {self.counter}.md", self._text())

    def check_untouched(self) -> None:
        files = {k: v for k, v in snapshot(self.root).items() if v != "dir"}
        assert files == {k: hashlib.sha256(v).hexdigest() for k, v in self.expected.items()}


def clean_index_keys(vault: Path, where: Path, provider, backend: str) -> set[tuple[str, str]]:
    shutil.rmtree(where, ignore_errors=True)
    run_index(vault, where, provider, backend=backend)
    return chunk_keys(where, backend)


@pytest.mark.slow
def test_watch_killed_at_random_points_leaves_a_healthy_index_that_converges(
    tmp_path: Path, isolated_env: Path, use_provider, backend: str
) -> None:
    rng = random.Random(SEED)
    vault = write_vault(
        tmp_path / "vault",
        {
            f"area {i % 3}/Note {i:02d}.md": note(f"Note {i:02d}", f"{WORDS[i % 10]} number {i}.")
            for i in range(24)
        },
    )
    editor = Editor(vault, rng)
    store_dir = open_app(vault, backend).index_dir
    run_index(vault, store_dir, use_provider, backend=backend)
    followed = 0
    for round_ in range(KILLS):
        log = tmp_path / f"watch-{round_}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(VAULTLENS_BIN), "watch", "--vault", str(vault), "--set", "watch.debounce_ms=100"]
                + backend_args(backend),
                env=cli_env(isolated_env),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            if round_ % 3 == 0:  # kill during startup: imports, model load, reconcile of earlier edits
                for _ in range(rng.randrange(1, 6)):
                    editor.step()
                time.sleep(rng.uniform(0.5, 2.5))
            else:  # kill while following edits, often inside a flush
                wait_for_text(log, "Watching", proc)
                deadline = time.monotonic() + rng.uniform(0.2, 1.5)
                while time.monotonic() < deadline:
                    editor.step()
                    time.sleep(rng.choice([0.01, 0.05, 0.12, 0.15]))
            alive = proc.poll() is None
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert alive, log.read_text(encoding="utf-8", errors="replace")
        after_start = log.read_text(encoding="utf-8", errors="replace").partition("Watching")[2]
        followed += "updated" in after_start

        with opened_store(store_dir, backend) as store:
            assert store.problems() == []
        editor.check_untouched()  # vaultlens wrote nothing into the vault
        run_index(vault, store_dir, use_provider, backend=backend)  # what `vaultlens index` does next
        clean = clean_index_keys(vault, tmp_path / f"clean-{round_}", use_provider, backend)
        assert chunk_keys(store_dir, backend) == clean
    assert followed >= 2  # some kills did land while the watcher was following edits


# ---- a maximum wait: continuous saves still reach the index ----------------------------------------------


def test_events_that_keep_coming_are_due_at_the_latest_max_wait_after_the_first(tmp_path: Path) -> None:
    now = [0.0]
    co = Coalescer(tmp_path, clock=lambda: now[0])
    assert co.due(0.5, 1.5) is None  # nothing pending
    for step in range(15):  # a save every 100 ms: each one alone would push the flush back
        now[0] = step / 10
        co.add(FileModifiedEvent(str(tmp_path / "a.md")))
    assert co.due(0.5) == pytest.approx(1.9)  # without a maximum: 500 ms after the last save
    assert co.due(0.5, 1.5) == pytest.approx(1.5)  # with one: 1.5 s after the first
    now[0] = 1.5
    assert co.wait(0.5, threading.Event(), timeout=0, max_wait_s=1.5) == Batch(upserts=frozenset({"a.md"}))
    now[0] = 2.0
    co.add(FileModifiedEvent(str(tmp_path / "a.md")))  # the next batch counts from its own first event
    assert co.due(0.5, 1.5) == pytest.approx(2.5)


@pytest.mark.slow
def test_a_note_saved_every_100_ms_is_flushed_before_the_saves_stop(
    vault: Path, rec: RecordingProvider, backend: str
) -> None:
    saving, gave_up = threading.Event(), threading.Event()
    saving.set()

    def save_until_told() -> None:  # until the first flush; a guard ends the saves if none comes
        end = time.monotonic() + 120
        n = 0
        while saving.is_set():
            if time.monotonic() > end:
                gave_up.set()
                return
            n += 1
            (vault / "Garden.md").write_text(note("Garden", f"Autosave number {n}."), encoding="utf-8")
            time.sleep(0.1)

    with Running(vault, rec, backend, debounce_ms=500, max_wait_ms=1500) as w:
        saver = threading.Thread(target=save_until_told, daemon=True)
        saver.start()
        first = w.next(timeout=180)
        saving.clear()
        saver.join(timeout=30)
        assert first.kind == "changes"
        assert not gave_up.is_set(), "no flush before the saves stopped: each save restarted the debounce"
        # and the saves end with a flush of the last version (polled: flushes take their own time)
        final = (vault / "Garden.md").read_text(encoding="utf-8").strip()
        deadline = time.monotonic() + 30
        texts: list[str] = []
        while time.monotonic() < deadline:
            texts = chunk_texts(w.app, "Garden.md")
            if texts == [final]:
                break
            time.sleep(0.05)
        assert texts == [final], "the last save never reached the index"


# ---- the vault folder moved, deleted or replaced while watching -------------------------------------------


@pytest.mark.parametrize("how", ["moved", "moved and recreated", "deleted"])
def test_watch_stops_with_a_clear_error_when_the_vault_folder_goes_away(
    vault: Path, rec: RecordingProvider, backend: str, how: str
) -> None:
    with Running(vault, rec, backend) as w:
        if how == "deleted":
            shutil.rmtree(vault)
        else:
            vault.rename(vault.with_name("vault-moved"))
            (vault.with_name("vault-moved") / "Garden.md").write_text(
                note("Garden", "Edited after the move.")
            )
        if how == "moved and recreated":  # edits there would be silently ignored
            write_vault(vault, {"Fresh.md": note("Fresh", "A note in the new folder.")})
        with pytest.raises(VaultError, match="moved or deleted") as caught:
            w.next(timeout=30)
        assert caught.value.hint and "Restart `vaultlens watch`" in caught.value.hint
        paths = indexed(w.app)
        assert "Garden.md" in paths and "Fresh.md" not in paths  # nothing applied from either folder
        assert rec.calls == []


# ---- symlinked folders are not followed --------------------------------------------------------------------


def test_the_observer_does_not_follow_folder_symlinks(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "vault", {"a.md": "# A\n", "real/r.md": "# R\n", "loopd/keep.md": "# K\n"})
    (root / "lnk").symlink_to("real", target_is_directory=True)
    (root / "loopd" / "up").symlink_to("..", target_is_directory=True)  # a link to the vault root
    co = Coalescer(root)
    with watcher.VaultObserver(root, co):
        time.sleep(0.2)  # the watches are added when the emitter thread starts
        for rel in ("a.md", "real/r.md", "loopd/keep.md"):
            with (root / rel).open("a", encoding="utf-8") as f:
                f.write("edited\n")
        seen: set[str] = set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not {"a.md", "real/r.md", "loopd/keep.md"} <= seen:
            seen |= co.drain().upserts
            time.sleep(0.05)
        time.sleep(0.3)  # anything reported twice comes with the first report
        seen |= co.drain().upserts
    # each file under its own path only, never again through lnk/ or loopd/up/
    assert seen == {"a.md", "real/r.md", "loopd/keep.md"}


class WatchProcess:
    """`vaultlens watch --json` as a real process (real model); stdout objects arrive on a queue."""

    def __init__(self, vault: Path, home: Path, log: Path, backend: str, *args: str) -> None:
        self.log = log
        with log.open("wb") as err:
            self.proc = subprocess.Popen(
                [str(VAULTLENS_BIN), "watch", "--json", "--vault", str(vault), *backend_args(backend), *args],
                env=cli_env(home),
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        self.objects: queue.Queue[dict[str, object]] = queue.Queue()
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self.objects.put(json.loads(line))  # every line on stdout is one JSON object

    def next(self, timeout: float = 60) -> dict[str, object]:
        try:
            return self.objects.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(self.log.read_text(encoding="utf-8", errors="replace")) from None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.mark.slow
def test_watch_json_prints_one_object_per_flush_and_a_moved_vault_as_a_json_error(
    vault: Path, backend: str, isolated_env: Path, tmp_path: Path
) -> None:
    w = WatchProcess(vault, isolated_env, tmp_path / "watch.err", backend, "--set", "watch.debounce_ms=100")
    try:
        startup = w.next()
        assert startup["kind"] == "startup" and isinstance(startup["time"], float)
        assert isinstance(startup["stats"], dict) and startup["stats"]["files_changed"] == 0
        (vault / "Garden.md").write_text(note("Garden", "Peppers now."), encoding="utf-8")
        change = w.next()
        assert change["kind"] == "changes" and change["reason"] == "" and change["retry_s"] == 0
        assert isinstance(change["stats"], dict) and change["stats"]["files_changed"] == 1
        vault.rename(tmp_path / "elsewhere")
        fatal = w.next()
        assert fatal["kind"] == "fatal"
        assert isinstance(fatal["error"], dict) and fatal["error"]["code"] == "vault"
        assert "moved or deleted" in str(fatal["error"]["message"])
        assert w.proc.wait(timeout=30) == 2
    finally:
        w.stop()
    assert len(w.lines) == 3  # nothing but the objects on stdout
    assert "Traceback" not in (tmp_path / "watch.err").read_text(encoding="utf-8", errors="replace")


def test_watch_json_reports_an_error_at_start_as_json(vault: Path, backend: str) -> None:
    app = open_app(vault, backend)
    try:
        vaultlens.clear(app)
    finally:
        app.close()
    sigterm = signal.getsignal(signal.SIGTERM)  # the command installs its own handler
    try:
        result = run_cli(["watch", "--json", "--vault", str(vault), *backend_args(backend)])
    finally:
        signal.signal(signal.SIGTERM, sigterm)
    assert result.exit_code == 4, result.output
    (line,) = result.stdout.splitlines()  # one object, on one line
    error = json.loads(line)
    assert error["kind"] == "fatal" and error["error"]["code"] == "store"
    assert "cleared" in error["error"]["message"] and "vaultlens index" in error["error"]["hint"]


def indexed_now(vault: Path, backend: str) -> dict[str, int]:
    app = open_app(vault, backend)
    try:
        return indexed(app)
    finally:
        app.close()


@pytest.mark.slow
def test_a_symlink_to_the_vault_root_inside_the_vault_adds_no_notes(
    vault: Path, backend: str, isolated_env: Path, tmp_path: Path
) -> None:
    """Issue 9 #4, end to end. The watcher half: the observer does not follow the link (see
    test_the_observer_does_not_follow_folder_symlinks); the vault half: listing the new folder
    `loopd` at flush time (VaultRules.scan) must not walk into `loopd/up`."""
    before = indexed_now(vault, backend)
    w = WatchProcess(vault, isolated_env, tmp_path / "watch.err", backend, "--set", "watch.debounce_ms=100")
    try:
        assert w.next()["kind"] == "startup"
        (vault / "loopd").mkdir()
        (vault / "loopd" / "up").symlink_to("..", target_is_directory=True)
        first = w.next()  # the new folder is listed
        assert first["kind"] == "changes"
        (vault / "Garden.md").write_text(note("Garden", "Edited after the link appeared."), encoding="utf-8")
        second = w.next()
        assert second["kind"] == "changes" and isinstance(second["stats"], dict)
        assert second["stats"]["files_changed"] == 1  # the edit, once: not again through loopd/up/
    finally:
        assert w.stop() == 0
    after = indexed_now(vault, backend)
    assert sorted(after) == sorted(before)
    assert not [p for p in after if p.startswith("loopd/")]


# ---- a long quality-tier fill: edits get in between its batches, and shutdown stops it ----------------------

PASSAGE = "search_document: "  # nomic-embed-text's passage prefix: what the tier's fill sends


class GatedTier(ScriptedEmbeddingServer):
    """The tier's server (Ollama protocol, loopback): a search's query is answered at once, each of a
    fill's requests only when the test lets one through (``gate``), so the test decides when the fill
    can go on and knows it has not finished."""

    def __init__(self) -> None:
        super().__init__(dims=8)
        self.gate = threading.Semaphore(0)
        self.fill_requests = 0

    def _respond(self, handler: Any, body: Any, step: Any) -> None:
        texts = body.get("input", []) if isinstance(body, dict) else []
        if texts and all(t.startswith(PASSAGE) for t in texts):
            with self._lock:
                self.fill_requests += 1
            assert self.gate.acquire(timeout=300), "the test never let the fill go on"
        super()._respond(handler, body, step)

    def wait_for_request(self, n: int, timeout: float = 120) -> None:
        """Until the fill sent its ``n``-th request (it waits at the gate)."""
        deadline = time.monotonic() + timeout
        while self.fill_requests < n:
            assert time.monotonic() < deadline, f"the fill sent {self.fill_requests} requests, not {n}"
            time.sleep(0.02)


def found(app: App, query: str) -> list[str]:
    return [h.path for h in vaultlens.search(app, query, limit=3)]


@pytest.mark.slow
def test_an_edit_and_a_deletion_reach_search_between_two_batches_of_a_tier_fill(
    vault: Path, rec: RecordingProvider, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vault was indexed without the tier; `watch` starts with one, so its startup run fills a
    tier vector for every chunk, one text per batch here (one request each), each let through by the
    test. While the fill waits, a note is deleted and another written: both reach search after the
    fill's next batch, before the fill has finished (the edit's flush is reported before the startup
    run's). Before, the flush waited for the whole fill."""
    monkeypatch.setattr(tier_fill, "COMMIT_TEXTS", 1)
    total = len(indexed_now(vault, backend))  # one chunk a note: one fill request a note
    with GatedTier() as tier:
        sets = {
            "embedding.tier": "ollama:nomic-embed-text",
            "embedding.tier_endpoint": tier.url,
            "embedding.tier_timeout_s": "600",
        }
        w = Running(vault, rec, backend, overrides=sets)
        w.thread.start()
        try:
            tier.gate.release()
            tier.wait_for_request(2)  # the first batch is committed, the second waits: the fill is on
            assert "Bread.md" in found(w.app, "rye sourdough in a cool kitchen")
            (vault / "Bread.md").unlink()
            (vault / "Otters.md").write_text(note("Otters", "Otters juggle pebbles in kelp forests."))
            time.sleep(5 * DEBOUNCE_MS / 1000)  # the changes are due by the next batch (else the one after)
            for sent in range(2, total):  # one more batch of the fill at a time
                tier.gate.release()
                tier.wait_for_request(sent + 1)  # the batch is committed and the next one was asked for
                if "Otters.md" in found(w.app, "otters juggle pebbles") and "Bread.md" not in found(
                    w.app, "rye sourdough in a cool kitchen"
                ):
                    break
            else:
                raise AssertionError("the edits reached search only after the fill")
            with w.app.reading() as store:
                have, all_texts = store.tier_coverage()
            assert have < all_texts  # the fill waits at the gate: it has not finished
            for _ in range(total + 10):
                tier.gate.release()  # the rest of the fill, the new note's text included
            reports = [w.next(timeout=120)]
            while reports[-1].kind != "startup":
                reports.append(w.next(timeout=120))
            # the edits' flush was reported before the fill's run ended
            flushes = [r.stats for r in reports[:-1] if r.kind == "changes" and r.stats is not None]
            assert len(flushes) == len(reports) - 1 >= 1, reports
            assert (sum(f.files_changed for f in flushes), sum(f.files_deleted for f in flushes)) == (1, 1)
            startup = reports[-1].stats
            assert startup is not None and startup.tier_error == ""
            with w.app.reading() as store:
                have, all_texts = store.tier_coverage()
            assert have == all_texts == total  # one note gone, one new, every text filled
        finally:
            for _ in range(total + 10):
                tier.gate.release()
            w.__exit__()


class SlowTier(ScriptedEmbeddingServer):
    """The tier's server (OpenAI-compatible, loopback): each of a fill's requests takes ``delay``
    seconds (a search's query none). Each process sends its own key, so requests tell who sent them."""

    def __init__(self, delay: float) -> None:
        super().__init__(dims=8)
        self.delay = delay
        self.fill: list[tuple[float, str]] = []  # (time.monotonic() it arrived, its Authorization)

    def _respond(self, handler: Any, body: Any, step: Any) -> None:
        texts = body.get("input", []) if isinstance(body, dict) else []
        if texts and all(t.startswith(PASSAGE) for t in texts):
            with self._lock:
                self.fill.append((time.monotonic(), handler.headers.get("Authorization", "")))
            time.sleep(self.delay)
        super()._respond(handler, body, step)

    def sent_by(self, key: str, after: float = 0.0) -> int:
        return sum(1 for at, auth in self.fill if auth == f"Bearer {key}" and at > after)


def serve_process(vault: Path, home: Path, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", CHILD, "serve", "--vault", str(vault), "--port", "0"],
            env=cli_env(home, **env),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_until(check: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def announced(app: App, proc: subprocess.Popen[bytes]) -> str:
    """The base URL of ``proc``'s server, once it announced itself (its runtime record)."""
    info: list[runtime.ServerInfo] = []

    def ready() -> bool:
        assert proc.poll() is None, "the server exited"
        found = runtime.record(app, proc.pid)
        if found is not None:
            info.append(found)
        return bool(info)

    wait_until(ready, f"server {proc.pid} to listen")
    return info[0].base_url


def sigterm(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)  # only guards against the old behaviour: a fill runs to its end first
    except subprocess.TimeoutExpired:
        raise AssertionError("serve did not stop within 10 s of SIGTERM during a tier fill") from None


@pytest.mark.slow
def test_a_restarted_server_takes_the_writer_lock_over_and_sigterm_stops_a_tier_fill(
    tmp_path: Path, isolated_env: Path
) -> None:
    """Issue 43 #7: serve A fills a slow tier; serve B on the same vault finds the writer lock taken,
    says A holds it and keeps trying; SIGTERM makes A stop its fill at the next model call and exit,
    B takes the lock over, resumes the fill, and a note written after that is found through B."""
    vault = write_vault(
        tmp_path / "vault",
        {f"Notes/Note {i:03d}.md": note(f"Note {i:03d}", f"Step {i} of the long plan.") for i in range(300)},
    )
    app = App.open(vault)  # only to read the runtime records, under the children's home
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    with SlowTier(delay=1.0) as tier:
        env = {
            "VAULTLENS_EMBEDDING__PROVIDER": "fake",
            "VAULTLENS_EMBEDDING__TIER": "openai-compatible:nomic-embed-text",
            "VAULTLENS_EMBEDDING__TIER_ENDPOINT": tier.url,
            "VAULTLENS_EMBEDDING__TIER_API_KEY_ENV": "TIER_KEY",
            "VAULTLENS_WATCH__DEBOUNCE_MS": "100",
        }
        a = serve_process(vault, isolated_env, logs[0], {**env, "TIER_KEY": "key-a"})
        b: subprocess.Popen[bytes] | None = None
        try:
            announced(app, a)
            wait_until(lambda: tier.sent_by("key-a") >= 2, "A's tier fill")
            b = serve_process(vault, isolated_env, logs[1], {**env, "TIER_KEY": "key-b"})
            b_url = announced(app, b)

            def b_watcher() -> dict[str, Any]:
                return dict(httpx.get(b_url + "/v1/status", timeout=60).json()["watcher"])

            wait_until(lambda: b_watcher()["state"] == "elsewhere", "B to find the lock taken")
            waiting = b_watcher()
            assert waiting["holder"]["pid"] == a.pid and str(a.pid) in waiting["reason"]
            assert "takes over" in waiting["reason"]

            stopped_at = time.monotonic()
            sigterm(a)
            # A's fill stopped at its next model call: nothing more was sent but what was on its way
            assert tier.sent_by("key-a", after=stopped_at) <= 1
            wait_until(lambda: b_watcher()["state"] == "watching", "B to take the lock over")
            assert "holder" not in b_watcher()
            wait_until(lambda: tier.sent_by("key-b") >= 2, "B to resume the fill")
            (vault / "Otters.md").write_text(note("Otters", "Otters juggle pebbles in kelp forests."))

            def otters() -> bool:
                hits = httpx.get(
                    b_url + "/v1/search", params={"q": "otters juggle pebbles", "limit": 1}, timeout=60
                )
                return hits.status_code == 200 and [h["path"] for h in hits.json()] == ["Otters.md"]

            wait_until(otters, "the new note in B's search")
            stopped_at = time.monotonic()
            sigterm(b)  # B is still filling (300 texts, 16 to a request of a second): it stops too
            assert tier.sent_by("key-b", after=stopped_at) <= 1
        finally:
            for proc in (a, b):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
    for log in logs:
        text = log.read_text(encoding="utf-8", errors="replace")
        assert "Traceback" not in text, text
    assert f"PID {a.pid}" in logs[1].read_text(encoding="utf-8")  # B said who held the lock


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_watch_during_a_tier_fill_like_any_other_time(
    tmp_path: Path, isolated_env: Path, sig: signal.Signals
) -> None:
    """Ctrl-C (or SIGTERM) while `watch --json` fills a slow tier after its first reconcile: the fill
    stops at once, and watch says it stopped as it does when idle (exit 0, ``stopped``); it was a
    ``fatal`` ``cancelled`` error with exit 130."""
    vault = write_vault(tmp_path / "vault", {f"N{i:03d}.md": note(f"N{i}", f"Step {i}.") for i in range(300)})
    with SlowTier(delay=1.0) as tier:
        env = {
            "VAULTLENS_EMBEDDING__PROVIDER": "fake",
            "VAULTLENS_EMBEDDING__TIER": "ollama:nomic-embed-text",
            "VAULTLENS_EMBEDDING__TIER_ENDPOINT": tier.url,
        }
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, "watch", "--json", "--vault", str(vault)],
            env=cli_env(isolated_env, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until(lambda: len(tier.fill) >= 2, "the tier fill")
            stopped_at = time.monotonic()
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert sum(1 for at, _ in tier.fill if at > stopped_at) <= 1  # nothing sent after the signal
    assert proc.returncode == 0, err
    assert [json.loads(line)["kind"] for line in out.splitlines()] == ["stopped"]
    assert "Stopped watching" in err and "Traceback" not in err
