"""Regression tests for the failures found by trying to break the spine (issue 9), through the CLI.

Vectors come from the deterministic hashing provider (``--set embedding.provider=fake``), so a
swap of two notes' texts changes which note answers a query, and no model is loaded.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import vaultlens
from vaultlens.config.paths import index_dir
from vaultlens.errors import IndexNotFound, VaultlensError
from vaultlens.index.backends import get_backend
from vaultlens.index.sqlite.store import SQLiteStore
from vl_support import default_backend, opened_store, run_cli, write_vault

FAKE = ["--set", "embedding.provider=fake"]
CATS = "# Pets\n\nFeline pets purr, chase mice and sleep on warm windowsills all afternoon.\n"
DATABASES = "# Storage\n\nRelational databases keep rows in tables and answer SQL queries with indexes.\n"
STARS = "# Sky\n\nAstronomy maps stars, galaxies and nebulae with telescopes on dark nights.\n"

pytestmark = pytest.mark.usefixtures("store_under_test")  # VAULTLENS_TEST_STORE=postgres: both stores


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "v", {"a.md": CATS, "b.md": DATABASES, "c.md": STARS})


def cli(*args: str, vault: Path) -> tuple[int, str, str]:
    result = run_cli([*args, "--vault", str(vault), *FAKE])
    return result.exit_code, result.stdout, result.stderr


def top(vault: Path, query: str) -> str:
    code, out, err = cli("search", query, "-n", "1", "--json", vault=vault)
    assert code == 0, err
    return str(json.loads(out)[0]["path"])


def swap_a_and_c(vault: Path) -> None:
    (vault / "a.md").write_text(STARS, encoding="utf-8")
    (vault / "c.md").write_text(CATS, encoding="utf-8")


# ---- 1. a stale vector cache written by a reader of the old store ----------------------------------


@pytest.mark.sqlite_only("the SQLite backend's vector cache files (matrix-*.npy)")
def test_a_cache_left_by_a_reader_of_the_old_store_is_never_used(vault: Path) -> None:
    assert cli("index", vault=vault)[0] == 0
    assert top(vault, "feline pets") == "a.md"  # builds the vector cache of this store
    live = index_dir(vault)
    stale = {p.name: p.read_bytes() for p in live.glob("matrix-*.npy")}
    assert stale
    swap_a_and_c(vault)
    assert cli("rebuild", vault=vault)[0] == 0
    for name, data in stale.items():  # what an old reader in flight writes after the rebuild
        (live / name).write_bytes(data)
        gen = name.split(".")[0].rsplit("-", 1)[1]
        (live / name.replace(f"-{gen}.", "-0.")).write_bytes(data)  # ...even at the new store's numbers
    assert top(vault, "feline pets") == "c.md"
    assert top(vault, "astronomy telescopes") == "a.md"
    assert cli("doctor", vault=vault)[0] == 0


def test_a_reader_of_the_old_store_closing_late_leaves_the_rebuilt_store_intact(vault: Path) -> None:
    """A reader (another process) still holding the store a foreground rebuild wiped and re-created
    closes only after the rebuild: the new store keeps every commit and stays healthy."""
    assert cli("index", vault=vault)[0] == 0
    # a slow search in another process, on the old store
    reader = get_backend(default_backend()).open(index_dir(vault), create=False)
    assert reader.counts().chunks == 3
    swap_a_and_c(vault)
    app = vaultlens.App.open(vault, {"embedding.provider": "fake"})
    vaultlens.rebuild(app)  # the new store stays open in this app, its commits in its WAL
    try:
        reader.close()  # the old store's last-connection clean-up runs only now
        assert top(vault, "feline pets") == "c.md"
        assert cli("doctor", vault=vault)[0] == 0
        (vault / "d.md").write_text(DATABASES.replace("Relational", "Columnar"), encoding="utf-8")
        assert cli("index", vault=vault)[0] == 0
    finally:
        app.close()
    assert cli("doctor", vault=vault)[0] == 0
    assert top(vault, "feline pets") == "c.md"


@pytest.mark.slow
def test_searches_racing_a_foreground_rebuild_leave_no_wrong_cache(vault: Path) -> None:
    assert cli("index", vault=vault)[0] == 0
    swap_a_and_c(vault)
    stop = threading.Event()
    failures: list[BaseException] = []
    transient: list[VaultlensError] = []

    def searching() -> None:  # a fresh App per search, as separate `vaultlens search` processes are
        while not stop.is_set():
            app = vaultlens.App.open(vault, {"embedding.provider": "fake"})
            try:
                vaultlens.search(app, "x")
            except VaultlensError as exc:  # the index is briefly absent, empty or new while a
                transient.append(exc)  # foreground rebuild starts over: said clearly, never a crash
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                failures.append(exc)
            finally:
                app.close()

    t = threading.Thread(target=searching)
    t.start()
    try:
        for _ in range(3):
            app = vaultlens.App.open(vault, {"embedding.provider": "fake"})
            vaultlens.rebuild(app)
            app.close()
    finally:
        stop.set()
        t.join(60)
    assert failures == []
    assert top(vault, "feline pets") == "c.md"
    assert cli("doctor", vault=vault)[0] == 0


@pytest.mark.sqlite_only("damages the SQLite backend's vector cache file")
def test_doctor_detects_a_cache_that_differs_from_the_stored_vectors(vault: Path) -> None:
    assert cli("index", vault=vault)[0] == 0
    top(vault, "feline pets")
    live = index_dir(vault)
    store = SQLiteStore(live)  # SQLite-specific: damages the SQLite backend's vector cache file
    ids_file, vec_file = store._cache_files(store.generation)
    store.close()
    vecs = np.load(vec_file)
    np.save(vec_file.with_suffix(""), vecs[::-1].copy())  # np.save adds .npy again
    code, _, err = cli("doctor", vault=vault)
    assert code == 1 and "differs from the stored vectors" in " ".join(err.split())


# ---- 5. a foreground rebuild checks the provider before it deletes anything -----------------------


def test_rebuild_with_an_unreachable_provider_keeps_the_index(vault: Path) -> None:
    assert cli("index", vault=vault)[0] == 0
    before = top(vault, "feline pets")
    broken = ["--set", "embedding.provider=ollama", "--set", "embedding.endpoint=http://127.0.0.1:9",
              "--set", "embedding.model=m", "--set", "embedding.max_retries=0", "--set", "embedding.timeout_s=2"]  # fmt: skip
    result = run_cli(["rebuild", "--vault", str(vault), *broken])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "nothing was deleted" in result.stderr.lower()
    assert top(vault, "feline pets") == before  # the old index still answers
    status = json.loads(cli("status", "--json", vault=vault)[1])
    assert status["notes"] == 3


def test_search_on_an_empty_index_says_so(vault: Path) -> None:
    assert cli("index", vault=vault)[0] == 0
    assert cli("clear", vault=vault)[0] == 0
    code, out, err = cli("search", "feline pets", vault=vault)
    assert code == 4 and out == ""
    said = " ".join(err.split())
    assert "index is empty" in said and "cleared" in said and "vaultlens index" in said


def test_search_after_a_first_run_stopped_before_any_chunk_says_so(vault: Path) -> None:
    """Ctrl-C during the first `index`, before its first batch: the index exists but holds nothing,
    and the reason is the stopped run, not the vault's notes."""
    with opened_store(index_dir(vault), create=True) as store:  # what the indexer leaves: a run, no chunk
        store.finish_run(store.start_run(), "cancelled", {})
    code, out, err = cli("search", "feline pets", vault=vault)
    said = " ".join(err.split())
    assert code == 4 and out == ""
    assert "index is empty" in said and "last index run (cancelled) stopped" in said
    assert "no note in the vault had text" not in said


def test_search_during_an_index_run_says_notes_may_be_missing(vault: Path) -> None:
    assert cli("index", vault=vault)[0] == 0
    app = vaultlens.App.open(vault, {"embedding.provider": "fake"})
    with app.writing():  # a run that holds the writer lock and has not finished yet
        with opened_store(index_dir(vault)) as store:
            store.start_run()
        code, out, err = cli("search", "feline pets", vault=vault)
    assert code == 0 and out
    assert "An index run is in progress" in " ".join(err.split())
    after = " ".join(
        cli("search", "feline pets", vault=vault)[2].split()
    )  # the writer is gone, its run unfinished
    assert (
        "in progress" not in after and "last index run was interrupted before it reached every note" in after
    )


def test_copying_an_index_keeps_working(vault: Path, tmp_path: Path) -> None:
    """A copied index folder (backup, restore) keeps its store id and its cache stays valid."""
    assert cli("index", vault=vault)[0] == 0
    top(vault, "feline pets")
    backup = tmp_path / "backup"
    shutil.copytree(index_dir(vault), backup)
    shutil.rmtree(index_dir(vault))
    shutil.copytree(backup, index_dir(vault))
    assert top(vault, "feline pets") == "a.md"
    assert cli("doctor", vault=vault)[0] == 0


# ---- scores a user can read -----------------------------------------------------------------------


def test_a_nonsense_query_is_said_to_match_nothing_well(tmp_path: Path, use_provider: object) -> None:
    vault = write_vault(tmp_path / "real", {"a.md": CATS, "b.md": DATABASES, "c.md": STARS})
    assert run_cli(["index", "--vault", str(vault)]).exit_code == 0
    nonsense = run_cli(["search", "zzqxq vbnmk", "--vault", str(vault)])
    assert "Nothing in the vault matches this well" in " ".join(nonsense.stdout.split())
    hits = json.loads(run_cli(["search", "zzqxq vbnmk", "--json", "--vault", str(vault)]).stdout)
    assert hits[0]["score"] == 1.0  # the fused score is relative to the query's candidates...
    assert hits[0]["similarity"] < 0.25 and all(h["weak"] for h in hits)  # ...the similarity is not
    real = run_cli(["search", "which animals purr and chase mice", "--vault", str(vault)])
    assert "Nothing in the vault matches" not in real.stdout
    best = json.loads(
        run_cli(["search", "which animals purr and chase mice", "--json", "--vault", str(vault)]).stdout
    )
    assert best[0]["path"] == "a.md" and not best[0]["weak"] and best[0]["similarity"] > 0.25


# ---- rough edges -----------------------------------------------------------------------------------


def test_with_json_errors_are_json_on_stdout(vault: Path) -> None:
    result = run_cli(["search", "feline", "--json", "--vault", str(vault), *FAKE])  # not indexed yet
    assert result.exit_code == 4
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "index_not_found" and "vaultlens index" in error["hint"]


def test_clear_on_a_never_indexed_vault_says_there_was_nothing(vault: Path) -> None:
    code, out, _ = cli("clear", vault=vault)
    assert code == 0 and "nothing to clear" in " ".join(out.split())
    assert json.loads(cli("clear", "--json", vault=vault)[1]) == {"vault": str(vault), "cleared": False}
    assert cli("index", vault=vault)[0] == 0
    assert json.loads(cli("clear", "--json", vault=vault)[1])["cleared"] is True


def test_dismissing_a_note_against_itself_is_refused(vault: Path) -> None:
    assert cli("index", vault=vault)[0] == 0
    code, _, err = cli("duplicates", "dismiss", "a.md", "a", vault=vault)
    assert code == 2 and "same note" in err
    code, out, err = cli("duplicates", "dismiss", "a.md", "b.md", vault=vault)  # cats and databases
    assert code == 2 and "a.md and b.md are not a pair `vaultlens duplicates` lists" in " ".join(err.split())


def test_a_note_is_listed_under_one_kind_of_exact_copy(tmp_path: Path) -> None:
    body = "# Release\n\nShip the release on Friday after the checklist is green and tagged.\n"
    vault = write_vault(tmp_path / "v", {"a.md": body, "b.md": body, "c.md": "---\ntags: [x]\n---\n" + body})
    assert cli("index", vault=vault)[0] == 0
    report = json.loads(cli("duplicates", "--json", vault=vault)[1])
    kinds: dict[str, list[str]] = {}
    for group in report["exact"]:
        for path in group["paths"]:
            kinds.setdefault(path, []).append(group["kind"])
    assert {g["kind"]: g["paths"] for g in report["exact"]} == {
        "identical": ["a.md", "b.md"],
        "same_body": ["a.md", "c.md"],
    }
    assert kinds["b.md"] == ["identical"] and kinds["c.md"] == ["same_body"]
    assert report["pairs"] == []  # exact copies are not listed again as near-duplicates


def test_an_empty_folder_indexes_with_a_hint(tmp_path: Path) -> None:
    empty = tmp_path / "not-a-vault"
    empty.mkdir()
    code, _, err = cli("index", vault=empty)
    assert code == 0 and "No Markdown notes found" in " ".join(err.split())


def test_status_says_a_killed_run_was_interrupted_and_why_a_run_failed(vault: Path) -> None:
    assert cli("index", vault=vault)[0] == 0
    with opened_store(index_dir(vault)) as store:
        store.start_run()  # what a run killed with -9 leaves behind
    info = json.loads(cli("status", "--json", vault=vault)[1])
    assert info["last_run"]["status"] == "interrupted"
    code, out, _ = cli("status", vault=vault)
    assert "interrupted" in out

    with opened_store(index_dir(vault)) as store:
        run = store.start_run()
        store.finish_run(run, "failed", {"files_scanned": 1, "error": "Cannot reach ollama at http://x"})
    info = json.loads(cli("status", "--json", vault=vault)[1])
    assert info["last_run"]["status"] == "failed" and "Cannot reach ollama" in info["last_run"]["error"]


def test_status_mentions_a_pending_chunking_change(vault: Path) -> None:
    assert cli("index", vault=vault)[0] == 0
    changed = run_cli(["status", "--json", "--vault", str(vault), *FAKE, "--set", "index.chunk_target=900"])
    assert json.loads(changed.stdout)["rechunk_pending"] is True
    assert json.loads(cli("status", "--json", vault=vault)[1])["rechunk_pending"] is False


def test_the_lock_message_names_the_holders_command(vault: Path, tmp_path: Path) -> None:
    from vaultlens.errors import IndexLocked
    from vaultlens.index.lock import WriterLock

    held = WriterLock(tmp_path / "lockdir")
    held.acquire()
    try:
        with pytest.raises(IndexLocked) as info:
            WriterLock(tmp_path / "lockdir").acquire()
    finally:
        held.release()
    assert f"PID {os.getpid()}" in info.value.message
    assert " ".join(sys.argv[1:])[:200] in info.value.message  # the holder's command line


def test_doctor_notices_a_note_indexed_under_two_paths(tmp_path: Path) -> None:
    """An index built before symlinks into the vault were skipped may hold one file twice."""
    from vaultlens.index.store import FileRecord, NoteUpdate

    vault = write_vault(tmp_path / "v", {"real/Note.md": CATS})
    (vault / "link").symlink_to(vault / "real", target_is_directory=True)
    assert cli("index", vault=vault)[0] == 0
    assert cli("doctor", vault=vault)[0] == 0
    with opened_store(index_dir(vault)) as store:
        store.apply(updates=[NoteUpdate(FileRecord("link/Note.md", "note", 1, 1, "h", "indexed"))])
    code, _, err = cli("doctor", vault=vault)
    assert code == 1 and "real/Note.md is indexed under 2 paths: link/Note.md, real/Note.md" in " ".join(
        err.split()
    )


@pytest.mark.sqlite_only("deletes the SQLite file under a reader")
def test_a_reader_never_creates_a_store_that_vanished_under_it(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search that saw the store just before a rebuild removed it gets IndexNotFound; it never
    leaves an empty store of its own where the rebuild builds (the race behind "disk I/O error")."""
    assert cli("index", vault=vault)[0] == 0
    app = vaultlens.App.open(vault, {"embedding.provider": "fake"})
    live = app.home.live_dir()
    for p in live.glob("index.sqlite*"):  # SQLite-specific: the store's files vanish
        p.unlink()
    monkeypatch.setattr(type(app.backend), "exists", lambda self, location: True)  # checked just before
    with pytest.raises(IndexNotFound):
        vaultlens.search(app, "feline pets")
    app.close()
    assert not list(live.glob("index.sqlite*"))


@pytest.mark.sqlite_only("the SQLite file's journal mode")
def test_a_new_store_file_is_wal_with_its_schema_from_the_moment_it_exists(tmp_path: Path) -> None:
    """A reader that opens a new store's file the instant it appears finds it in WAL mode with its
    tables: a file still in rollback mode let a reader's lock keep its creator from switching it
    (a search racing a foreground rebuild: "database is locked")."""
    import sqlite3

    from vaultlens.index.sqlite.schema import DB_NAME

    path = tmp_path / "store" / DB_NAME
    seen: list[tuple[str, int]] = []

    def first_look() -> None:
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            pass
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            mode = con.execute("PRAGMA journal_mode").fetchone()[0]
            tables = con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'meta'").fetchone()[0]
            seen.append((mode, tables))
        finally:
            con.close()

    looker = threading.Thread(target=first_look)
    looker.start()
    store = SQLiteStore(tmp_path / "store", create=True)
    looker.join(15)
    store.close()
    assert seen == [("wal", 1)]
    assert [p.name for p in path.parent.iterdir() if ".new-" in p.name] == []  # no temporary file left
