"""The embedded store's schema: its tables, the named migrations that bring an older file up to
date, and how a new store's file is created (whole, already in WAL mode)."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

SCHEMA_VERSION = 9
DB_NAME = "index.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, kind TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    file_hash TEXT, status TEXT NOT NULL, reason TEXT, title TEXT, aliases TEXT, tags TEXT,
    n_chunks INTEGER NOT NULL DEFAULT 0, updated_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL, ordinal INTEGER NOT NULL,
    heading_path TEXT NOT NULL, text TEXT NOT NULL, content_hash TEXT NOT NULL, embed_hash TEXT NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks(path);
CREATE INDEX IF NOT EXISTS chunks_by_embed ON chunks(embed_hash);
CREATE TABLE IF NOT EXISTS vectors (embed_hash TEXT PRIMARY KEY, vec BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(terms, tokenize='unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS links (
    src TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL, heading TEXT, block TEXT,
    display TEXT, line INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS links_by_src ON links(src);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL, stats TEXT);
"""

_FILE_KEY = "'files:'||{row}.status||':'||{row}.kind"  # a counter per file status and kind
FTS_OWNER = {"chunks_fts": "chunks", "notes_fts": "files"}  # the full-text tables and whose rowids key them


# Append-only: MIGRATIONS[n] brings a schema at version n to n + 1.
MIGRATIONS: dict[int, str] = {
    1: """CREATE TABLE IF NOT EXISTS dismissed_pairs (
        a TEXT NOT NULL, b TEXT NOT NULL, hash_a TEXT, hash_b TEXT, dismissed_at REAL NOT NULL,
        PRIMARY KEY (a, b));""",
    # note-level full text (rowid = files.rowid): BM25 of a whole note in one FTS5 query
    2: """CREATE VIRTUAL TABLE IF NOT EXISTS notes_fts USING fts5(terms, tokenize='unicode61 remove_diacritics 2');
        INSERT INTO notes_fts(rowid, terms)
            SELECT f.rowid, group_concat(x.terms, ' ') FROM files f JOIN (
                SELECT c.path AS path, t.terms AS terms FROM chunks c JOIN chunks_fts t ON t.rowid = c.rowid
                ORDER BY c.path, c.ordinal) x ON x.path = f.path
            GROUP BY f.rowid;""",
    # front matter is a flag, not a heading named "front matter"; a store id names the vector cache
    3: """ALTER TABLE chunks ADD COLUMN frontmatter INTEGER NOT NULL DEFAULT 0;
        UPDATE chunks SET frontmatter = 1 WHERE ordinal = 0 AND heading_path = '["front matter"]';
        INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', lower(hex(randomblob(8))));""",
    # a split part's context is stored (a tier vector is embedded later, from the store alone); the
    # optional quality tier's vectors, keyed like the main ones by the embedded text's hash
    # (the chunker signature is forgotten, so the next run re-chunks every note and stores the
    # contexts; embed texts are unchanged, so nothing is embedded again)
    4: """ALTER TABLE chunks ADD COLUMN context TEXT NOT NULL DEFAULT '';
        CREATE TABLE IF NOT EXISTS tier_vectors (embed_hash TEXT PRIMARY KEY, vec BLOB NOT NULL);
        DELETE FROM meta WHERE key = 'chunker';""",
    # the chunks each generation added or removed, so the ANN tier catches up a note at a time
    5: """CREATE TABLE IF NOT EXISTS chunk_log (generation INTEGER NOT NULL, key INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS chunk_log_by_generation ON chunk_log(generation);""",
    # the counts `status` shows, kept by triggers (status answers from them, not by counting rows)
    6: """CREATE INDEX IF NOT EXISTS files_with_reason ON files(path) WHERE reason IS NOT NULL;
        CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
        INSERT OR REPLACE INTO counters SELECT 'chunks', COUNT(*) FROM chunks;
        INSERT OR REPLACE INTO counters SELECT 'vectors', COUNT(*) FROM vectors;
        INSERT OR REPLACE INTO counters SELECT 'files:' || status || ':' || kind, COUNT(*) FROM files
            GROUP BY status, kind;"""
    # terse: the schema's text must stay on SQLite's first page (tests/test_store.py damages the rest)
    + "".join(
        f"CREATE TRIGGER IF NOT EXISTS n_{table}_{event[0]} AFTER {event} ON {table} BEGIN "
        + "".join(
            f"INSERT INTO counters VALUES({key},{d})ON CONFLICT DO UPDATE SET n=n+{d};" for key, d in rows
        )
        + "END;"
        for table, event, rows in (
            ("chunks", "INSERT", [("'chunks'", 1)]),
            ("chunks", "DELETE", [("'chunks'", -1)]),
            ("vectors", "INSERT", [("'vectors'", 1)]),
            ("vectors", "DELETE", [("'vectors'", -1)]),
            ("files", "INSERT", [(_FILE_KEY.format(row="new"), 1)]),
            ("files", "DELETE", [(_FILE_KEY.format(row="old"), -1)]),
            ("files", "UPDATE", [(_FILE_KEY.format(row="old"), -1), (_FILE_KEY.format(row="new"), 1)]),
        )
    ),
    # each full-text token's rows (index/term_counts.py), kept by apply; filled from FTS5's own vocabulary
    7: """CREATE TABLE IF NOT EXISTS term_stats(tbl TEXT,term TEXT,df INT,PRIMARY KEY(tbl,term))WITHOUT ROWID;
        DELETE FROM term_stats;
        CREATE VIRTUAL TABLE temp.chunk_vocab USING fts5vocab(main, chunks_fts, row);
        CREATE VIRTUAL TABLE temp.note_vocab USING fts5vocab(main, notes_fts, row);
        INSERT INTO term_stats SELECT 'chunks_fts', term, doc FROM temp.chunk_vocab;
        INSERT INTO term_stats SELECT 'notes_fts', term, doc FROM temp.note_vocab;
        DROP TABLE temp.chunk_vocab;
        DROP TABLE temp.note_vocab;""",
    # where a chunk of a PDF (its page) or a canvas (its text card's id) is: chunking/attachments.py
    8: """ALTER TABLE chunks ADD COLUMN page INTEGER;
        ALTER TABLE chunks ADD COLUMN card TEXT;""",
}


def create_file(path: Path) -> None:
    """A new store's file appears whole: WAL mode and the base schema are set on a temporary file,
    which is then linked into place (never over a file another opener made meanwhile). A reader
    that opened a file still in rollback mode held a lock that kept its creator from switching it
    to WAL: a search racing a foreground rebuild failed it with "database is locked"."""
    tmp = path.with_name(f"{DB_NAME}.new-{os.getpid()}-{threading.get_ident()}")
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(SCHEMA)
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', '1'), ('generation', '0')")
    finally:
        conn.close()  # the last connection: the WAL is checkpointed and removed
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another opener created it first: theirs is used
    except OSError:  # a file system without hard links: a rename, unless one appeared meanwhile
        if not path.exists():
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
