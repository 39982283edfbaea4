"""The service facade that servers will share with the CLI: the public API, injected providers,
typed results, many readers beside one writer in one process, leases across a store switch,
and errors that carry what every interface needs.

Vectors come from the deterministic hashing provider (vaultlens.testing), injected or chosen
by settings through the registry, so these tests load no model.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from pathlib import Path

import pytest

import vaultlens
from vaultlens.errors import IndexNotFound, VaultlensError
from vaultlens.index.rebuild import rebuild_background
from vaultlens.testing import HashingEmbeddingProvider
from vl_support import run_cli, write_vault

TOPICS = ["sourdough bread", "night trains", "tomato garden", "river kayaks", "cache latency"]


def topic_vault(root: Path, n: int = 30) -> Path:
    return write_vault(
        root,
        {
            f"t{i % 5}/note{i:02d}.md": f"# Note {i}\n\nAll about {TOPICS[i % 5]} and more {TOPICS[i % 5]}.\n"
            f"\n## Details\n\nmarker{i} {TOPICS[i % 5]} notes for day {i}.\n"
            for i in range(n)
        },
    )


def fake_app(vault: Path) -> vaultlens.App:
    return vaultlens.App.open(vault, provider=HashingEmbeddingProvider())


def test_the_package_exports_the_facade() -> None:
    assert set(vaultlens.__all__) <= set(dir(vaultlens))
    assert vaultlens.__all__ == sorted(vaultlens.__all__)
    verbs = (
        "index", "rebuild", "rebuild_in_background", "clear", "watch", "status", "doctor",  # keep the index
        "search", "similar", "duplicates", "dismiss", "note", "list_notes",  # find
        "ask", "open_chat", "chat_turn",  # ask
        "review", "replan", "review_batch", "apply", "plan_undo", "history", "recover", "to_confirm",  # change notes
        "audit_structure", "audit_clusters_only", "audit_deep", "moc",  # audit
        "providers", "eval_beir", "eval_queries",  # inspect
    )  # fmt: skip
    for name in vaultlens.__all__:
        assert getattr(vaultlens, name) is not None, name
    assert set(vaultlens._WHERE) == set(vaultlens.__all__), "every export is found lazily, and only those"
    for verb in verbs:
        assert verb in vaultlens.__all__ and callable(getattr(vaultlens, verb)), verb
    importlib.import_module("vaultlens.index.store")  # the subpackage of the same name keeps the verb's name
    assert callable(vaultlens.index) and vaultlens.index.__module__ == "vaultlens"


def test_an_injected_provider_is_used_and_results_are_typed(tmp_path: Path) -> None:
    app = fake_app(topic_vault(tmp_path / "v"))
    stats = vaultlens.index(app)
    assert isinstance(stats, vaultlens.RunStats) and stats.chunks_embedded > 0
    hits = vaultlens.search(app, "marker7 tomato garden", limit=3)
    assert hits[0].path == "t2/note07.md"
    assert all(isinstance(s, vaultlens.Section) for s in hits[0].sections)
    info = vaultlens.status(app)
    assert isinstance(info, vaultlens.IndexStatus)
    assert info.embedding_space is not None and info.embedding_space.provider == "fake"
    assert info.last_run is not None and info.last_run.stats.chunks_embedded == stats.chunks_embedded
    assert info.as_dict()["last_run"]["status"] == "ok"
    report = vaultlens.doctor(app)
    assert isinstance(report, vaultlens.DoctorReport) and report.healthy
    app.close()


def test_the_fake_provider_is_chosen_by_settings_through_the_registry(tmp_path: Path) -> None:
    app = vaultlens.App.open(topic_vault(tmp_path / "v", 5), {"embedding.provider": "fake"})
    vaultlens.index(app)
    assert vaultlens.status(app).embedding_space.model == "hashing-v1"  # type: ignore[union-attr]
    app.close()


def test_duplicates_threshold_zero_is_honoured(tmp_path: Path) -> None:
    app = fake_app(topic_vault(tmp_path / "v", 10))
    vaultlens.index(app)
    default = vaultlens.duplicates(app)
    zero = vaultlens.duplicates(app, threshold=0.0)
    assert zero.threshold == 0.0 and default.threshold == app.settings.discover.duplicate_threshold
    assert len(zero.pairs) > len(default.pairs)
    app.close()


def test_many_readers_while_a_writer_indexes_in_the_same_process(tmp_path: Path) -> None:
    vault = topic_vault(tmp_path / "v")
    app = fake_app(vault)
    vaultlens.index(app)
    errors: list[BaseException] = []
    found: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                hits = vaultlens.search(app, "river kayaks", limit=50)
                found.append(len(hits))
                vaultlens.similar(app, "t3/note03.md", limit=3)
            except BaseException as exc:  # noqa: BLE001 - any failure fails the test below
                errors.append(exc)
                return

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for round_ in range(6):  # the writer: edits, adds and deletes committed while readers read
        (vault / f"t3/new{round_}.md").write_text(f"# New\n\nriver kayaks round {round_}\n", encoding="utf-8")
        (vault / f"t0/note{round_ * 5:02d}.md").unlink()
        vaultlens.index(app)
    stop.set()
    for t in threads:
        t.join(30)
    app.close()
    assert errors == []
    assert found and min(found) >= 6  # every snapshot held a whole generation's river notes


def test_a_store_switch_never_closes_a_store_an_in_flight_reader_holds(tmp_path: Path) -> None:
    vault = topic_vault(tmp_path / "v", 10)
    app = fake_app(vault)
    vaultlens.index(app)
    old_dir = app.index_dir
    with app.reading() as held:
        before = held.file_records()
        # another writer (a `rebuild --background` elsewhere) builds a new store and switches to it
        rebuild_background(app.home, app.vault, HashingEmbeddingProvider(), app.settings)
        assert app.index_dir != old_dir
        assert vaultlens.search(app, "sourdough bread", limit=2)  # a new reader gets the new store
        assert held.file_records() == before  # the old store still answers its reader
        assert len(held.chunks(held.matrix()[0].tolist())) > 0
    assert vaultlens.search(app, "sourdough bread", limit=2)[0].path.startswith("t0/")
    app.close()


def test_a_reader_without_an_index_gets_a_clear_error(tmp_path: Path) -> None:
    app = fake_app(topic_vault(tmp_path / "v", 2))
    with pytest.raises(IndexNotFound) as info:
        vaultlens.search(app, "anything")
    assert (info.value.code, info.value.exit_code, info.value.http_status) == ("index_not_found", 4, 404)


@pytest.mark.parametrize("cls", [c for c in vars(vaultlens.errors).values() if isinstance(c, type)])
def test_every_error_carries_code_exit_code_and_http_status(cls: type) -> None:
    if not issubclass(cls, VaultlensError):
        return
    assert isinstance(cls.code, str) and cls.code
    assert isinstance(cls.exit_code, int) and cls.exit_code > 0
    assert 400 <= cls.http_status < 600


def test_a_damaged_store_file_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    vault = topic_vault(tmp_path / "v", 3)
    app = vaultlens.App.open(vault, {"embedding.provider": "fake"})
    vaultlens.index(app)
    index_dir = app.index_dir
    app.close()
    for p in index_dir.glob("index.sqlite-*"):
        p.unlink()
    wal = index_dir / "index.sqlite-wal"
    os.mkdir(wal)  # the OS refuses SQLite its write-ahead log
    time.sleep(0.01)
    result = run_cli(["search", "bread", "--vault", str(vault), "--set", "embedding.provider=fake"])
    assert result.exit_code != 0
    assert "Traceback" not in result.output and "error" in result.stderr.lower()


def test_readers_share_the_process_with_a_running_watcher(tmp_path: Path) -> None:
    vault = topic_vault(tmp_path / "v", 10)
    app = vaultlens.App.open(vault, {"embedding.provider": "fake", "watch.debounce_ms": "100"})
    vaultlens.index(app)
    stop = threading.Event()
    flushes: list[object] = []
    writer = threading.Thread(target=vaultlens.watch, args=(app, flushes.append, stop))
    writer.start()
    try:
        deadline = time.monotonic() + 20
        while not flushes and time.monotonic() < deadline:  # the startup reconcile
            time.sleep(0.05)
        (vault / "t4" / "fresh.md").write_text("# Fresh\n\nzebra crossing glacier\n", encoding="utf-8")
        seen = False
        while not seen and time.monotonic() < deadline:
            hits = vaultlens.search(app, "zebra crossing glacier", limit=3)  # reads while watch writes
            seen = bool(hits) and hits[0].path == "t4/fresh.md"
            time.sleep(0.05)
        assert seen, "a search in the watcher's process sees the watcher's commit"
    finally:
        stop.set()
        writer.join(20)
        app.close()
    assert not writer.is_alive()
