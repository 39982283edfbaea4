"""The note-level full-text table: kept in step with the notes through edits, touches, moves,
deletes and clear, and built from the chunk-level table when an older index is migrated.

SQLite-specific: the table (notes_fts), its migration and its doctor check are the SQLite
backend's own, so these tests open SQLiteStore and the file directly."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from test_store import problems
from vaultlens.index.lexical import query_terms
from vaultlens.index.sqlite.schema import DB_NAME, SCHEMA_VERSION
from vaultlens.index.sqlite.store import SQLiteStore
from vl_support import run_index, write_vault


def note_hits(store_dir: Path, query: str) -> dict[str, float]:
    store = SQLiteStore(store_dir)
    try:
        return store.lexical(query_terms(query), 50, 50).notes
    finally:
        store.close()


def test_note_lexical_follows_edits_touches_moves_and_deletes(tmp_path: Path, use_provider) -> None:
    vault = write_vault(
        tmp_path / "vault",
        {
            "a.md": "# Sourdough\n\nFeed the starter with rye flour every morning.\n",
            "b.md": "# Trains\n\nThe night train to Kyoto leaves at nine.\n",
        },
    )
    store_dir = tmp_path / "index"
    run_index(vault, store_dir, use_provider)
    assert set(note_hits(store_dir, "rye starter")) == {"a.md"}

    os.utime(vault / "a.md", ns=(1, 1))  # a touch: same bytes, new stamp (the row is updated in place)
    (vault / "b.md").write_text("# Trains\n\nThe night train carries rye bread.\n", encoding="utf-8")
    run_index(vault, store_dir, use_provider)
    assert set(note_hits(store_dir, "rye")) == {"a.md", "b.md"}
    assert problems(store_dir) == []

    (vault / "a.md").rename(vault / "moved.md")
    (vault / "b.md").unlink()
    run_index(vault, store_dir, use_provider)
    assert set(note_hits(store_dir, "rye starter")) == {"moved.md"}
    assert problems(store_dir) == []

    store = SQLiteStore(store_dir)
    store.clear()
    store.close()
    assert note_hits(store_dir, "rye") == {}
    assert problems(store_dir) == []


def test_migration_builds_note_full_text_from_chunks(tmp_path: Path, use_provider) -> None:
    vault = write_vault(tmp_path / "vault", {"n.md": "# Kettle\n\nDescale the kettle with citric acid.\n"})
    store_dir = tmp_path / "index"
    run_index(vault, store_dir, use_provider)
    con = sqlite3.connect(store_dir / DB_NAME)  # turn the index back into a schema-2 one
    con.execute("DROP TABLE notes_fts")
    con.execute("ALTER TABLE chunks DROP COLUMN frontmatter")  # added by the migration to schema 4
    con.execute("ALTER TABLE chunks DROP COLUMN context")  # added by the migration to schema 5
    con.execute("DROP TABLE tier_vectors")  # likewise
    con.execute("DROP TABLE term_stats")  # added by the migration to schema 8
    con.execute("ALTER TABLE chunks DROP COLUMN page")  # added by the migration to schema 9
    con.execute("ALTER TABLE chunks DROP COLUMN card")  # likewise
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    assert set(note_hits(store_dir, "citric kettle")) == {"n.md"}
    assert problems(store_dir) == []
    store = SQLiteStore(store_dir)
    try:  # every migration ran: the tier table exists and chunks read back with an empty context
        assert store.tier_coverage() == (0, 1) and store.get_meta("schema_version") == str(SCHEMA_VERSION)
        keys, _ = store.matrix()
        assert [c.context for c in store.chunks(keys.tolist()).values()] == [""]
    finally:
        store.close()


def test_doctor_reports_a_missing_note_full_text_row(tmp_path: Path, use_provider) -> None:
    vault = write_vault(tmp_path / "vault", {"n.md": "# Kettle\n\nDescale the kettle with citric acid.\n"})
    store_dir = tmp_path / "index"
    run_index(vault, store_dir, use_provider)
    con = sqlite3.connect(store_dir / DB_NAME)
    con.execute("DELETE FROM notes_fts")
    con.commit()
    con.close()
    assert any("note-level full text" in p for p in problems(store_dir))
