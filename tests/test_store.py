"""The SQLite store: integrity and consistency checks (doctor), atomic batches, the vector cache,
and indexes it cannot open."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import vaultlens as services
from vaultlens.chunking.chunker import Chunk
from vaultlens.config.paths import index_dir
from vaultlens.errors import StoreError
from vaultlens.index.sqlite.schema import DB_NAME
from vaultlens.index.sqlite.store import SQLiteStore
from vaultlens.index.store import FileRecord, IndexedChunk, NoteUpdate
from vaultlens.services.app import App
from vaultlens.vault.model import Link
from vl_support import bilingual_vault, db_rows, run_cli, run_index


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, use_provider) -> tuple[Path, Path]:
    """One real index of the bilingual vault, built once; tests work on copies of it."""
    root = tmp_path_factory.mktemp("built")
    vault = bilingual_vault(root / "vault")
    run_index(vault, root / "index", use_provider)
    return vault, root / "index"


@pytest.fixture
def healthy(built: tuple[Path, Path], isolated_env: Path) -> tuple[Path, Path]:
    """A private copy of the built index, placed where the CLI looks for it."""
    vault, src = built
    dest = index_dir(vault)
    shutil.copytree(src, dest)
    return vault, dest


def write_sql(store_dir: Path, *statements: str) -> None:
    con = sqlite3.connect(store_dir / DB_NAME)
    try:
        for sql in statements:
            con.execute(sql)
        con.commit()
    finally:
        con.close()


def problems(store_dir: Path) -> list[str]:
    store = SQLiteStore(store_dir)
    try:
        return store.problems()
    finally:
        store.close()


def test_a_healthy_index_has_no_problems(healthy: tuple[Path, Path]) -> None:
    vault, d = healthy
    assert problems(d) == []
    result = run_cli(["doctor", "--vault", str(vault)])
    assert result.exit_code == 0
    assert "index is healthy" in result.stdout
    assert db_rows(d, "PRAGMA journal_mode") == [("wal",)]


@pytest.mark.parametrize(
    ("corrupt", "expected"),
    [
        (
            ["DELETE FROM vectors WHERE rowid = (SELECT MIN(rowid) FROM vectors)"],
            ["1 chunks without a vector"],
        ),
        (
            ["DELETE FROM chunks WHERE rowid = (SELECT MAX(rowid) FROM chunks)"],
            ["1 full-text rows without a chunk", "1 notes whose chunk count disagrees"],
        ),
        (
            ["DELETE FROM chunks_fts WHERE rowid = (SELECT MIN(rowid) FROM chunks)"],
            [
                "1 chunks without full-text terms",
                r"\d+ kept term counts of chunks_fts differ from its full-text index",
            ],
        ),
        (
            [
                "UPDATE term_stats SET df = df + 1 WHERE tbl = 'notes_fts'"
                " AND term = (SELECT MIN(term) FROM term_stats WHERE tbl = 'notes_fts')"
            ],
            ["1 kept term counts of notes_fts differ from its full-text index"],
        ),
        (
            ["UPDATE files SET n_chunks = n_chunks + 1 WHERE path = 'Tech/HTTP caching.md'"],
            ["1 notes whose chunk count disagrees"],
        ),
        (
            ["UPDATE files SET status = 'skipped' WHERE path = 'Tech/Deploy runbook.md'"],
            ["1 chunks of notes not marked indexed"],
        ),
        (
            ["UPDATE vectors SET vec = substr(vec, 1, 100) WHERE rowid = (SELECT MIN(rowid) FROM vectors)"],
            ["1 vectors with the wrong dimension"],
        ),
    ],
    ids=[
        "vector-row-deleted",
        "chunk-row-deleted",
        "fts-row-deleted",
        "term-count-off",
        "count-off",
        "status-off",
        "short-vector",
    ],
)
def test_doctor_finds_each_kind_of_inconsistency(
    healthy: tuple[Path, Path], corrupt: list[str], expected: list[str]
) -> None:
    vault, d = healthy
    write_sql(d, *corrupt)
    found = problems(d)
    assert len(found) == len(expected)
    assert all(re.fullmatch(e, f) for e, f in zip(expected, found, strict=True)), found
    result = run_cli(["doctor", "--vault", str(vault)])
    assert result.exit_code == 1
    for line in expected:
        assert re.search(line, result.stderr)
    assert "vaultlens rebuild" in result.stderr
    assert "Traceback" not in result.output


def test_damaged_pages_fail_the_integrity_check(healthy: tuple[Path, Path]) -> None:
    vault, d = healthy
    data = bytearray((d / DB_NAME).read_bytes())
    for off in range(4096 * 2, len(data) - 4096, 4096):  # scribble inside every page but the first two
        data[off + 100 : off + 400] = bytes((i * 37 + off) % 256 for i in range(300))
    (d / DB_NAME).write_bytes(bytes(data))
    found = problems(d)
    assert found and found[0].startswith("SQLite integrity check failed")
    result = run_cli(["doctor", "--vault", str(vault)])
    assert result.exit_code == 1 and "integrity check failed" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_an_index_that_cannot_be_opened_is_a_store_error(healthy: tuple[Path, Path], how: str) -> None:
    vault, d = healthy
    db = d / DB_NAME
    if how == "garbage":
        db.write_bytes(b"this is not a database" * 1000)
    else:
        db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    with pytest.raises(StoreError) as info:
        SQLiteStore(d)
    assert "Could not open the index" in str(info.value) and "is damaged" in str(info.value)
    assert "vaultlens rebuild" in str(info.value)
    for command in (["status"], ["search", "x"], ["doctor"]):
        result = run_cli([*command, "--vault", str(vault)])
        assert result.exit_code == StoreError.exit_code, command
        assert "is damaged" in " ".join(result.stderr.split())
        assert "Traceback" not in result.output


def test_an_index_from_a_newer_version_is_refused(healthy: tuple[Path, Path]) -> None:
    _, d = healthy
    write_sql(d, "UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="written by a newer vaultlens \\(schema 999\\)"):
        SQLiteStore(d)


def test_a_failing_batch_changes_nothing(healthy: tuple[Path, Path]) -> None:
    _, d = healthy
    store = SQLiteStore(d)
    try:
        counts, gen = store.counts(), store.generation
        rows = store.chunks(range(1, 3))
        first = next(iter(rows.values()))
        dup = Chunk(first.id, "Other.md", 0, (), "text", "h", 0, 4, 0, 1)  # a chunk id that already exists
        update = NoteUpdate(
            FileRecord("Other.md", "note", 4, 1, "fh", "indexed", n_chunks=1), [IndexedChunk(dup, "e", "t")]
        )
        with pytest.raises(sqlite3.IntegrityError):
            store.apply(
                updates=[update], deletes=["Tech/HTTP caching.md"], vectors={"e": np.ones(512, np.float32)}
            )
        assert store.counts() == counts
        assert store.generation == gen
        assert "Tech/HTTP caching.md" in store.file_records()
        assert store.problems() == []
    finally:
        store.close()


def test_vector_cache_is_rebuilt_when_missing_stale_or_damaged(healthy: tuple[Path, Path]) -> None:
    _, d = healthy
    store = SQLiteStore(d)
    truth_ids, truth_vecs = store._read_matrix()
    ids, vecs = store.matrix()
    np.testing.assert_array_equal(ids, truth_ids)
    np.testing.assert_array_equal(vecs, truth_vecs)
    gen = store.generation
    cache = sorted(p.name for p in d.glob("matrix-*"))
    stem = f"matrix-{store.store_id}-{gen}"
    assert cache == [f"{stem}.ids.npy", f"{stem}.vecs.npy"]
    store.close()

    vec_file = d / f"{stem}.vecs.npy"
    vec_file.write_bytes(vec_file.read_bytes()[:200])  # truncated by a crash or a full disk
    store = SQLiteStore(d)
    ids, vecs = store.matrix()
    np.testing.assert_array_equal(vecs, truth_vecs)
    store.apply(deletes=["Books/Thinking in Systems.md"])  # a new generation makes the old cache stale
    ids, vecs = store.matrix()
    store.close()
    assert len(ids) == len(truth_ids) - 1
    assert sorted(p.name for p in d.glob("matrix-*")) == [
        f"matrix-{store.store_id}-{gen + 1}.ids.npy",
        f"matrix-{store.store_id}-{gen + 1}.vecs.npy",
    ]


def test_vectors_read_are_kept_per_generation_so_a_reused_rowid_gets_its_new_vector(
    healthy: tuple[Path, Path],
) -> None:
    _, d = healthy
    store, reader = SQLiteStore(d), SQLiteStore(d)
    try:
        ((path,),) = db_rows(d, "SELECT path FROM chunks ORDER BY rowid DESC LIMIT 1")
        assert isinstance(path, str)
        ((freed,),) = db_rows(d, f"SELECT MAX(rowid) + 1 FROM chunks WHERE path != '{path}'")
        assert (freed,) in db_rows(d, f"SELECT rowid FROM chunks WHERE path = '{path}'")
        key = np.array([freed], dtype=np.int64)
        old = store.vectors_of(key)[1][0].copy()
        new = np.zeros(512, np.float32)
        new[7] = 1.0
        chunk = Chunk("replacement-chunk", path, 0, (), "new text", "c-new", 0, 8, 0, 1)
        record = FileRecord(path, "note", 8, 2, "fh-new", "indexed", n_chunks=1)
        update = NoteUpdate(record, [IndexedChunk(chunk, "e-new", "new text")])
        with reader.snapshot():  # pinned before the edit: keeps reading the old generation
            np.testing.assert_array_equal(reader.vectors_of(key)[1][0], old)
            # the note's chunks go and its one new chunk takes the lowest of their rowids, now free
            store.apply(updates=[update], vectors={"e-new": new})
            assert db_rows(d, "SELECT rowid FROM chunks WHERE id = 'replacement-chunk'") == [(freed,)]
            np.testing.assert_array_equal(reader.vectors_of(key)[1][0], old)
        np.testing.assert_array_equal(store.vectors_of(key)[1][0], new)
        np.testing.assert_array_equal(reader.vectors_of(key)[1][0], new)
    finally:
        store.close()
        reader.close()


def test_known_embed_hashes_handles_many_at_once(healthy: tuple[Path, Path]) -> None:
    _, d = healthy
    present = [str(r[0]) for r in db_rows(d, "SELECT embed_hash FROM vectors")]
    store = SQLiteStore(d)
    try:
        asked = [f"{i:064x}" for i in range(1200)] + present
        assert store.known_embed_hashes(asked) == set(present)
    finally:
        store.close()


def test_clear_keeps_the_file_and_forgets_the_space(healthy: tuple[Path, Path]) -> None:
    vault, d = healthy
    app = App.open(vault)
    services.clear(app)
    app.close()
    store = SQLiteStore(d)
    try:
        assert store.space is None
        assert (store.counts().notes, store.counts().chunks, store.counts().vectors) == (0, 0, 0)
        assert store.get_meta("cleared_at") is not None
        assert store.problems() == []
    finally:
        store.close()
    assert (d / DB_NAME).exists()


def test_a_batch_gives_every_row_the_rowid_a_row_by_row_write_gives(tmp_path: Path) -> None:
    """apply writes each kind of row in one executemany: the chunk rowids (the vector cache's and the ANN
    tier's keys), the change log, the files' rowids (notes_fts's keys) and the links must be what
    inserting row by row gave: a freed rowid at the top is reused, rows keep the batch's order."""

    def note(path: str, n: int, tag: str) -> NoteUpdate:
        chunks = [
            IndexedChunk(
                Chunk(f"{path}#{tag}{i}", path, i, (), f"{tag}{i}", f"h{tag}{i}", 0, 1, i, i + 1),
                f"e{tag}{i}",
                f"t{tag}{i}",
            )
            for i in range(n)
        ]
        links = (Link("wiki", f"{path}-to-{tag}", 0), Link("markdown", "x.md", 1, "shown"))
        return NoteUpdate(FileRecord(path, "note", n, 1, f"fh{tag}", "indexed", n_chunks=n), chunks, links)

    store = SQLiteStore(tmp_path / "store")
    try:
        store.apply(updates=[note("a.md", 2, "a"), note("b.md", 1, "b"), note("c.md", 2, "c")])
        touched = FileRecord("a.md", "note", 2, 9, "fha", "indexed", n_chunks=2)
        store.apply(updates=[note("c.md", 3, "c2"), note("d.md", 1, "d")], deletes=["b.md"], touch=[touched])
    finally:
        store.close()
    d = tmp_path / "store"
    assert db_rows(d, "SELECT rowid, id FROM chunks ORDER BY rowid") == [
        (1, "a.md#a0"), (2, "a.md#a1"), (3, "c.md#c20"), (4, "c.md#c21"), (5, "c.md#c22"), (6, "d.md#d0"),
    ]  # fmt: skip
    assert db_rows(d, "SELECT rowid, terms FROM chunks_fts ORDER BY rowid") == [
        (1, "ta0"), (2, "ta1"), (3, "tc20"), (4, "tc21"), (5, "tc22"), (6, "td0"),
    ]  # fmt: skip
    assert db_rows(d, "SELECT generation, key FROM chunk_log ORDER BY rowid") == [
        (1, 1), (1, 2), (1, 3), (1, 4), (1, 5),  # the first batch's chunks
        (2, 3), (2, 4), (2, 5),  # b.md's and c.md's old chunks, gone
        (2, 3), (2, 4), (2, 5), (2, 6),  # the rowids freed at the top, reused
    ]  # fmt: skip
    assert db_rows(d, "SELECT rowid, path, mtime_ns FROM files ORDER BY rowid") == [
        (1, "a.md", 9), (2, "c.md", 1), (3, "d.md", 1),
    ]  # fmt: skip
    assert db_rows(d, "SELECT rowid, terms FROM notes_fts ORDER BY rowid") == [
        (1, "ta0 ta1"), (2, "tc20 tc21 tc22"), (3, "td0"),
    ]  # fmt: skip
    assert db_rows(d, "SELECT src, kind, target, display, line FROM links ORDER BY rowid") == [
        (p, kind, target, shown, line)
        for p, tag in (("a.md", "a"), ("c.md", "c2"), ("d.md", "d"))
        for kind, target, shown, line in (
            ("wiki", f"{p}-to-{tag}", None, 0),
            ("markdown", "x.md", "shown", 1),
        )
    ]


def test_a_store_from_before_pdfs_gets_the_page_and_card_columns(healthy: tuple[Path, Path]) -> None:
    """Migration 8 -> 9: an index written before PDFs and canvases were read keeps its chunks, each
    without a page or card, and takes new ones with them."""
    _, d = healthy
    write_sql(
        d,
        "ALTER TABLE chunks DROP COLUMN page",
        "ALTER TABLE chunks DROP COLUMN card",
        "UPDATE meta SET value = '8' WHERE key = 'schema_version'",
    )
    store = SQLiteStore(d)
    try:
        chunks = store.chunks(range(1, 4))
        assert chunks and all(c.page is None and c.card is None for c in chunks.values())
    finally:
        store.close()
    assert db_rows(d, "SELECT value FROM meta WHERE key = 'schema_version'") == [("9",)]
