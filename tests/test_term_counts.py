"""The SQLite store keeps each full-text token's row count in ``apply`` (index/term_counts.py): the
counts are FTS5's own after any writes, a search reads them without counting rows, and a store
written before them gets them on open."""

from __future__ import annotations

import sqlite3
import string
from pathlib import Path

import numpy as np
import pytest

from vaultlens.chunking.chunker import Chunk
from vaultlens.index.sqlite import fts_tokens
from vaultlens.index.sqlite.schema import DB_NAME, SCHEMA_VERSION
from vaultlens.index.sqlite.store import SQLiteStore
from vaultlens.index.store import FileRecord, IndexedChunk, NoteUpdate
from vl_support import db_rows

# diacritics FTS5 folds, a Cyrillic й it keeps, a ligature and a middle dot it splits a word at
WORDS = ["café", "cafe", "naïve", "naive", "чай", "чаи", "ﬁsh", "straße", "a·b", "b", "x1", "ёж", "еж"]
TABLES = ("chunks_fts", "notes_fts")


def note(path: str, texts: list[str]) -> NoteUpdate:
    chunks = [
        IndexedChunk(Chunk(f"{path}#{i}", path, i, (), t, f"h{path}{i}", 0, 1, i, i + 1), f"e{path}{i}", t)
        for i, t in enumerate(texts)
    ]
    return NoteUpdate(FileRecord(path, "note", 1, 1, f"fh{path}", "indexed", n_chunks=len(chunks)), chunks)


def put(store: SQLiteStore, *updates: NoteUpdate, deletes: tuple[str, ...] = ()) -> None:
    """``apply`` with a vector for each new chunk (so doctor finds nothing else to report)."""
    vectors = {c.embed_hash: np.ones(4, np.float32) for u in updates for c in u.chunks}
    store.apply(updates=updates, vectors=vectors, deletes=deletes)


def counted(store: SQLiteStore, table: str) -> dict[str, int]:
    """Each token's rows as FTS5 itself counts them: a phrase MATCH per token its vocabulary holds."""
    db = store._conn
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.v_{table} USING fts5vocab(main, {table}, row)")
    return {
        t: db.execute(f"SELECT COUNT(*) FROM {table} WHERE {table} MATCH ?", (f'"{t}"',)).fetchone()[0]
        for (t,) in db.execute(f"SELECT term FROM temp.v_{table}").fetchall()
    }


def kept(store: SQLiteStore, table: str) -> dict[str, int]:
    rows = store._conn.execute("SELECT term, df FROM term_stats WHERE tbl = ? AND df <> 0", (table,))
    return dict(rows.fetchall())


def test_every_plain_character_is_its_own_token() -> None:
    """The characters fts_tokens takes as unchanged by the tokenizer are unchanged by it."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE f USING fts5(terms, tokenize='{fts_tokens.TOKENIZER}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, instance)")
    plain = string.ascii_lowercase + string.digits + "".join(map(chr, range(ord("а"), ord("я") + 1)))
    db.executemany("INSERT INTO f(rowid, terms) VALUES (?, ?)", [(i, f"q{c}q") for i, c in enumerate(plain)])
    assert dict(db.execute("SELECT doc, term FROM v").fetchall()) == {
        i: f"q{c}q" for i, c in enumerate(plain)
    }
    assert all(fts_tokens.word_tokens(f"q{c}q") == (f"q{c}q",) for c in plain)


def test_other_words_get_the_tokenizers_own_tokens() -> None:
    assert fts_tokens.word_tokens("café") == ("cafe",)
    assert fts_tokens.word_tokens("чай") == ("чай",)  # not folded to чаи
    assert fts_tokens.word_tokens("a·b") == ("a", "b")
    assert fts_tokens.tokens("café cafe naïve a·b") == {"cafe", "naive", "a", "b"}


def test_the_kept_counts_are_fts5s_after_adds_edits_deletes_and_clear(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s")
    try:
        put(store, note("a.md", [" ".join(WORDS[:5]), "cafe b x1"]), note("b.md", WORDS[4:]))
        put(store, note("c.md", ["naive naive чай", "ёж еж"]))
        for table in TABLES:
            assert kept(store, table) == counted(store, table) != {}
        put(store, note("a.md", ["b straße"]), deletes=("b.md",))  # rewritten, and one gone
        for table in TABLES:
            assert kept(store, table) == counted(store, table)
        assert "cafe" not in kept(store, "chunks_fts") and kept(store, "chunks_fts")["straße"] == 1
        assert store.problems() == []
        store.clear()
        assert db_rows(tmp_path / "s", "SELECT COUNT(*) FROM term_stats") == [(0,)]
    finally:
        store.close()


def test_a_failed_batch_leaves_the_counts_as_they_were(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s")
    try:
        put(store, note("a.md", ["cafe b"]))
        before = kept(store, "chunks_fts"), kept(store, "notes_fts")
        same_id = note("b.md", ["naive b", "cafe"])
        clash = NoteUpdate(same_id.record, [same_id.chunks[0], same_id.chunks[0]])  # a chunk id twice
        with pytest.raises(sqlite3.IntegrityError):
            put(store, clash, deletes=("a.md",))
        assert (kept(store, "chunks_fts"), kept(store, "notes_fts")) == before
        assert store.problems() == []
    finally:
        store.close()


def test_a_search_reads_the_counts_without_counting_rows(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s")
    try:
        put(store, *(note(f"n{i}.md", [f"cafe w{i}", "b naïve"]) for i in range(9)))
        statements: list[str] = []
        with store.snapshot():
            store.db.set_trace_callback(statements.append)
            got = store._doc_freqs("chunks_fts", ["cafe", "café", "naive", "b", "w1", "absent"], 18)
            capped = store._doc_freqs(
                "chunks_fts", ["cafe", "w1"], 12
            )  # past half of 12: 7 is FTS5's idf too
            lookups = len(statements)
            phrase = store._doc_freqs("chunks_fts", ["a·b"], 18)
            store.db.set_trace_callback(None)
        assert got == {"cafe": 9, "café": 9, "naive": 9, "b": 9, "w1": 1, "absent": 0}
        assert capped == {"cafe": 7, "w1": 1}
        assert not [s for s in statements[:lookups] if "MATCH" in s]
        assert phrase == {"a·b": 0}  # two tokens: matched as a phrase, so its rows are counted
        assert any("MATCH" in s for s in statements[lookups:])
    finally:
        store.close()


def test_a_store_written_before_the_counts_gets_them_on_open(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s")
    try:
        put(store, note("a.md", [" ".join(WORDS)]), note("b.md", ["cafe naive", "x1"]))
    finally:
        store.close()
    con = sqlite3.connect(tmp_path / "s" / DB_NAME)
    con.execute("DROP TABLE term_stats")
    con.execute("ALTER TABLE chunks DROP COLUMN page")  # added by the migration to schema 9
    con.execute("ALTER TABLE chunks DROP COLUMN card")  # likewise
    con.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    store = SQLiteStore(tmp_path / "s")
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        for table in TABLES:
            assert kept(store, table) == counted(store, table) != {}
        assert store.problems() == []
    finally:
        store.close()
