"""Where a store lives in the database (one schema per vault and lifecycle slot) and its migrations.

A store is a schema: ``vl_<16 hex of the vault key>_<slot>``. The vault key is ``index.vault_id``
when set (so every machine of a team names the same vault alike), else the index root's path on
this machine; the slot is the lifecycle folder (``r0`` for the root, ``r<k>`` for a rebuild's).
Each store's connections put its schema alone (plus ``public`` for the vector type) on the search
path and every statement is unqualified, so one vault's store cannot name another vault's tables.

Migrations are named and ordered; ``schema_migrations`` records the applied ones, and they run
in one transaction under the store's advisory lock, so two processes opening a new store at
once apply each exactly once.
"""

from __future__ import annotations

import re
from pathlib import Path

from vaultlens.fsutil import sha256_hex

_SLOT = re.compile(r"r\d+")

# What each table adds to the counters, per row of ``{rows}``: (counter name, amount) rows. The names:
# 'chunks', 'vectors', 'files:<status>:<kind>' (as the SQLite store's), 'fts:<table>' / 'dl:<table>'
# for the rows with full text and their summed term counts (BM25's collection size and mean length).
_COUNTED = {
    "chunks": "SELECT 'chunks', 1 FROM {rows} UNION ALL SELECT 'fts:chunks', 1 FROM {rows}"
    " UNION ALL SELECT 'dl:chunks', dl FROM {rows}",
    "vectors": "SELECT 'vectors', 1 FROM {rows}",
    "files": "SELECT 'files:' || status || ':' || kind, 1 FROM {rows}"
    " UNION ALL SELECT 'fts:files', 1 FROM {rows} WHERE tsv IS NOT NULL"
    " UNION ALL SELECT 'dl:files', dl FROM {rows} WHERE tsv IS NOT NULL",
}


def _triggers(table: str, function: str, names: tuple[str, str, str]) -> str:
    """Statement triggers running ``function`` after each INSERT, UPDATE and DELETE on ``table`` (named
    ``table_<name>`` in that order), the statement's new rows as ``came`` and its old ones as ``gone``."""
    added, changed, removed = names
    return f"""CREATE TRIGGER {table}_{added} AFTER INSERT ON {table} REFERENCING NEW TABLE AS came
    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER {table}_{changed} AFTER UPDATE ON {table} REFERENCING OLD TABLE AS gone NEW TABLE AS came
    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
CREATE TRIGGER {table}_{removed} AFTER DELETE ON {table} REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION {function}();
"""


def _counting(table: str, parts: str) -> str:
    """The counters of ``table`` filled from its rows, and statement triggers that add each statement's
    new rows ("came") and subtract its old ones ("gone"): one pass over the rows a statement changed
    (plpgsql plans a statement when it first runs, so an INSERT trigger never plans the "gone" one)."""

    def add(rows: str, sign: str) -> str:
        return (
            f"INSERT INTO counters AS c (name, n) SELECT name, {sign}SUM(n) FROM ({parts.format(rows=rows)})"
            " x(name, n) GROUP BY name ON CONFLICT (name) DO UPDATE SET n = c.n + excluded.n;"
        )

    return f"""
INSERT INTO counters SELECT name, SUM(n) FROM ({parts.format(rows=table)}) x(name, n) GROUP BY name;
CREATE FUNCTION count_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'DELETE' THEN {add("came", "")} END IF;
    IF TG_OP <> 'INSERT' THEN {add("gone", "-")} END IF;
    RETURN NULL;
END $$;
{_triggers(table, f"count_{table}", ("added", "changed", "removed"))}"""


# Each full-text table with postings: (table, its key column, the key's SQL type).
_POSTED = (("chunks", "key", "BIGINT"), ("files", "path", "TEXT"))


def _posting(table: str, key: str, key_type: str) -> str:
    """``{table}_postings`` (term, key, tf, dl) filled from the table's tsvectors, and statement
    triggers keeping it: a row's terms added with it, removed with it, replaced when its full text
    changes (a file's restamp leaves them)."""
    terms = "SELECT u.lexeme, r.{key}, cardinality(u.positions), r.dl FROM {rows} r, unnest(r.tsv) u"
    add = f"INSERT INTO {table}_postings (term, {key}, tf, dl) " + terms
    drop = (
        f"DELETE FROM {table}_postings p USING {{rows}} r, unnest(tsvector_to_array(r.tsv)) w(term)"
        f" WHERE p.term = w.term AND p.{key} = r.{key}"
    )
    changed = (
        f"(SELECT g.* FROM gone g JOIN came c ON c.{key} = g.{key}"
        " WHERE g.tsv IS DISTINCT FROM c.tsv OR g.dl IS DISTINCT FROM c.dl)"
    )
    changed_new = changed.replace("SELECT g.*", "SELECT c.*")
    return f"""
CREATE TABLE {table}_postings (
    term TEXT NOT NULL, {key} {key_type} NOT NULL, tf INTEGER NOT NULL, dl INTEGER NOT NULL,
    PRIMARY KEY (term, {key}) INCLUDE (tf, dl));
{add.format(key=key, rows=table)} WHERE r.tsv IS NOT NULL;
CREATE FUNCTION post_{table}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN {add.format(key=key, rows="came")};
    ELSIF TG_OP = 'DELETE' THEN {drop.format(rows="gone")};
    ELSE
        {drop.format(rows=changed)};
        {add.format(key=key, rows=changed_new)};
    END IF;
    RETURN NULL;
END $$;
{_triggers(table, f"post_{table}", ("posted", "reposted", "unposted"))}"""


# (name, statements). Append-only: a released name is never edited, a change is a new entry.
MIGRATIONS: tuple[tuple[str, str], ...] = (
    (
        "0001_base",
        """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    path TEXT PRIMARY KEY, kind TEXT NOT NULL, size BIGINT NOT NULL, mtime_ns BIGINT NOT NULL,
    file_hash TEXT, status TEXT NOT NULL, reason TEXT, title TEXT, aliases TEXT, tags TEXT,
    n_chunks INTEGER NOT NULL DEFAULT 0, updated_at DOUBLE PRECISION NOT NULL,
    tsv TSVECTOR, dl INTEGER);
CREATE INDEX files_tsv ON files USING gin (tsv);
CREATE TABLE vectors (embed_hash TEXT PRIMARY KEY, vec vector NOT NULL);
CREATE TABLE tier_vectors (embed_hash TEXT PRIMARY KEY, vec vector NOT NULL);
CREATE TABLE chunks (
    key BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL,
    ordinal INTEGER NOT NULL, heading_path TEXT NOT NULL, text TEXT NOT NULL, content_hash TEXT NOT NULL,
    embed_hash TEXT NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, frontmatter BOOLEAN NOT NULL DEFAULT false, context TEXT NOT NULL DEFAULT '',
    tsv TSVECTOR NOT NULL, dl INTEGER NOT NULL, vec vector);
ALTER TABLE chunks ALTER COLUMN vec SET STORAGE PLAIN;  -- inline, never compressed: scans read it as is
CREATE INDEX chunks_by_path ON chunks (path);
CREATE INDEX chunks_by_embed ON chunks (embed_hash);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE TABLE links (
    n BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, src TEXT NOT NULL, kind TEXT NOT NULL,
    target TEXT NOT NULL, heading TEXT, block TEXT, display TEXT, line INTEGER NOT NULL);
CREATE INDEX links_by_src ON links (src);
CREATE TABLE runs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, started DOUBLE PRECISION NOT NULL,
    finished DOUBLE PRECISION, status TEXT NOT NULL, stats TEXT);
CREATE TABLE dismissed_pairs (
    a TEXT NOT NULL, b TEXT NOT NULL, hash_a TEXT, hash_b TEXT, dismissed_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (a, b));
INSERT INTO meta (key, value) VALUES ('generation', '0'), ('store_id', md5(random()::text || clock_timestamp()::text));
""",
    ),
    (
        # A chunk row holds its vector inline (2 KB at 512 dimensions), so it is past the toast target
        # and its tsvector went to the TOAST table: BM25 read each matching row's terms through the
        # toast index (4 more pages a row; most of the lexical stage at 100,000 chunks). MAIN keeps a
        # tsvector in its row (compressed) unless the row outgrows a page. Rows written before stay
        # as they are until rewritten (a rebuild).
        "0002_tsvector_inline",
        """
ALTER TABLE chunks ALTER COLUMN tsv SET STORAGE MAIN;
ALTER TABLE files ALTER COLUMN tsv SET STORAGE MAIN;
""",
    ),
    (
        # Each term's document frequency in chunks and in note-level text, kept by `apply` (one
        # grouped upsert per table per batch), so a query's idf is one indexed lookup per term:
        # counting the rows a common term matches read up to half the table's heap (0.5 to 1.9 s at
        # 1,000,000 chunks). An existing store's counts come from its rows here.
        "0003_term_stats",
        """
CREATE TABLE term_stats (
    tbl TEXT NOT NULL, term TEXT NOT NULL, df BIGINT NOT NULL, PRIMARY KEY (tbl, term));
INSERT INTO term_stats SELECT 'chunks', word, ndoc FROM ts_stat('SELECT tsv FROM chunks');
INSERT INTO term_stats SELECT 'files', word, ndoc FROM ts_stat('SELECT tsv FROM files WHERE tsv IS NOT NULL');
""",
    ),
    (
        # Row counts and full-text sizes kept by statement triggers, as the SQLite store keeps its
        # counters: `status` and every search counted chunks, vectors and files (BM25 also summed
        # the document lengths), a pass over a million rows after every write. See _COUNTED below.
        "0004_counters",
        "CREATE TABLE counters (name TEXT PRIMARY KEY, n BIGINT NOT NULL);\n"
        + "".join(_counting(table, parts) for table, parts in _COUNTED.items()),
    ),
    (
        # BM25 from posting tables instead of the tsvectors: scoring a query read every matching row's
        # tsvector from the heap (the chunk-level best 200 at 1,000,000 chunks: 85-88 ms p50); a
        # term's postings are one index-only range scan (27-29 ms, the same rows and scores:
        # docs/benchmarks.md, "PostgreSQL: BM25 from posting tables"). About 31 rows per chunk.
        # See _posting.
        # Nothing matches a tsquery any more, so the tsvectors' GIN indexes go (their upkeep was a
        # good part of every write).
        "0005_postings",
        "".join(_posting(*posted) for posted in _POSTED)
        + "DROP INDEX IF EXISTS chunks_tsv;\nDROP INDEX IF EXISTS files_tsv;\n",
    ),
    (
        # where a chunk of a PDF (its page) or a canvas (its text card's id) is: chunking/attachments.py
        "0006_attachment_places",
        """
ALTER TABLE chunks ADD COLUMN page INTEGER;
ALTER TABLE chunks ADD COLUMN card TEXT;
""",
    ),
)


def vault_slot(location: Path) -> tuple[Path, str]:
    """(index root, lifecycle slot) of a store location: ``root/r<k>`` or the root itself (``r0``)."""
    if _SLOT.fullmatch(location.name):
        return location.parent, location.name
    return location, "r0"


def schema_name(location: Path, vault_id: str = "") -> str:
    """The schema that holds the store at ``location`` (see the module docstring)."""
    root, slot = vault_slot(location)
    key = vault_id or str(root.absolute())
    return f"vl_{sha256_hex(key)[:16]}_{slot}"


def lock_key(schema: str) -> int:
    """The store's advisory lock id: a signed 64-bit number derived from its schema name."""
    return int(sha256_hex(schema)[:16], 16) - (1 << 63)
