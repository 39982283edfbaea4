"""The PostgreSQL store: one schema per store, pgvector for vectors (HNSW, cosine), postings for full text.

The same guarantees as the SQLite store, said in PostgreSQL: every batch is one transaction that
first takes the store's advisory transaction lock, so batches of two writers (on any machine)
never interleave and a killed writer leaves the last committed batch; a snapshot is a REPEATABLE
READ, READ ONLY transaction on a per-thread connection, so every read in it sees one committed
generation while writers keep committing. Vectors are kept twice: by embed hash (so an unchanged
or moved chunk costs no embedding) and on the chunk row, where the HNSW index serves ``top_k``
once a store holds more than ``exact_below`` chunks (below, an exact scan answers, as SQLite's).

The store is built from rooms: ``connection`` (connect, errors translated, and the base: connections,
transactions, snapshots, meta, kept counters), ``schema`` (a schema per store, named migrations),
``fulltext`` (BM25 from the postings), ``vectors`` (pgvector, HNSW, the vector cache file), ``seen``;
this module holds the writes, the catalog reads and doctor's checks.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from vaultlens.chunking.chunker import Chunk
from vaultlens.embedding.base import EmbeddingSpace, Vectors
from vaultlens.index import rows, term_counts
from vaultlens.index.estimate import RebuildEstimate
from vaultlens.index.postgres import fulltext
from vaultlens.index.postgres.fulltext import PostgresFullText
from vaultlens.index.postgres.seen import SeenPaths
from vaultlens.index.postgres.vectors import EXACT_BELOW, PostgresVectors
from vaultlens.index.runs import RunRecord
from vaultlens.index.store import (
    ChunkKeys,
    FileRecord,
    NoteText,
    NoteUpdate,
    StoreCounts,
    tier_switch,
)
from vaultlens.vault.model import Link

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import psycopg

SLICE_CHUNKS = 2000  # chunks per insert statement of a batch (apply)


def _columns(alias: str = "") -> str:
    return rows.chunk_columns("key", alias)


# the SQL types of rows.RECORD_COLUMNS, rows.CHUNK_INSERT_COLUMNS and rows.LINK_COLUMNS, in order:
# a batch's rows go to the server as one array per column
_RECORD_TYPES = ["text", "text", "bigint", "bigint", "text", "text", "text", "text", "text", "text", "int",
                 "float8"]  # fmt: skip
_CHUNK_TYPES = ["text", "text", "int", "text", "text", "text", "text", "int", "int", "int", "int", "bool",
                "text", "int", "text"]  # fmt: skip
_LINK_TYPES = ["text", "text", "text", "text", "text", "text", "int"]


def _names(columns: str) -> list[str]:
    return [c.strip() for c in columns.split(",")]


def _arrays(types: list[str]) -> str:
    return ", ".join(f"%s::{t}[]" for t in types)


_RECORD_ARRAYS, _CHUNK_ARRAYS, _LINK_ARRAYS = map(_arrays, (_RECORD_TYPES, _CHUNK_TYPES, _LINK_TYPES))
_FILE_SELECT = ", ".join([*(f"u.{c}" for c in _names(rows.RECORD_COLUMNS)), "u.tsv::tsvector", "u.dl"])
_CHUNK_SELECT = ", ".join(f"u.{c}" for c in _names(rows.CHUNK_INSERT_COLUMNS))


# document frequencies (migration 0003) moved by a batch's rows: ``{_COUNT_TERMS} SELECT tbl, term,
# delta ... {_ADD_COUNTS}`` (a term's row stays at 0 when its last holder goes)
_COUNT_TERMS = "INSERT INTO term_stats AS s (tbl, term, df)"
_ADD_COUNTS = "ON CONFLICT (tbl, term) DO UPDATE SET df = s.df + excluded.df"


def _slices(updates: Sequence[NoteUpdate]) -> Iterator[Sequence[NoteUpdate]]:
    """Consecutive runs of whole notes of about SLICE_CHUNKS chunks."""
    start, size = 0, 0
    for i, u in enumerate(updates):
        size += len(u.chunks)
        if size >= SLICE_CHUNKS:
            yield updates[start : i + 1]
            start, size = i + 1, 0
    if start < len(updates):
        yield updates[start:]


def _columnwise(values: list[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Rows of ``width`` values as ``width`` lists (one array parameter per column)."""
    return [list(col) for col in zip(*values, strict=True)] if values else [[] for _ in range(width)]


class PostgresStore(PostgresFullText, PostgresVectors):
    reads_in_server = True

    def __init__(self, dsn: str, schema: str, location: Path, exact_below: int = EXACT_BELOW) -> None:
        super().__init__(dsn, schema, location)
        self.exact_below = exact_below
        self._matrix: dict[bool, tuple[int, ChunkKeys, Vectors]] = {}
        self._matrix_lock = threading.Lock()
        self._dims: int | None = None  # the HNSW index's dimension once it exists
        self._seen = SeenPaths()  # chunk paths the dense and score reads returned (index/postgres/seen.py)
        self.store_id = self.get_meta("store_id") or "0"

    # ---- embedding space and runs ----------------------------------------------------------
    def rebuild_estimate(self, target: EmbeddingSpace) -> RebuildEstimate:
        row = self._one(
            "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM (SELECT MAX(length(text) + length(heading_path)) AS n"
            " FROM chunks GROUP BY embed_hash) x"
        )
        return RebuildEstimate(int(row[0]), int(row[1]), self._embed_rate(), target.provider != "local")

    def _embed_rate(self, runs: int = 10) -> float | None:
        sql = "SELECT stats FROM runs WHERE stats IS NOT NULL ORDER BY id DESC LIMIT %s"
        return rows.embed_rate(raw for (raw,) in self._rows(sql, (runs,)))

    def start_run(self) -> int:
        with self.transaction() as db:
            row = db.execute(
                "INSERT INTO runs (started, status) VALUES (%s, 'running') RETURNING id", (time.time(),)
            ).fetchone()
            return int(row[0]) if row else 0

    def finish_run(self, run_id: int, status: str, stats: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE runs SET finished = %s, status = %s, stats = %s WHERE id = %s",
                (time.time(), status, json.dumps(stats), run_id),
            )

    def last_run(self) -> RunRecord | None:
        return rows.run_record(
            self._one("SELECT started, finished, status, stats FROM runs ORDER BY id DESC LIMIT 1")
        )

    # ---- writes -------------------------------------------------------------------------------
    def apply(
        self,
        updates: Sequence[NoteUpdate] = (),
        vectors: dict[str, npt.NDArray[np.float32]] | None = None,
        deletes: Sequence[str] = (),
        touch: Sequence[FileRecord] = (),
    ) -> None:
        """Apply one batch atomically: new vectors, replaced notes, deleted paths, refreshed stamps.

        One statement per table for each slice of SLICE_CHUNKS chunks (rows sent as arrays and
        unnested): a statement per chunk cost an executor start each and fired statement triggers per
        chunk; a statement for the whole batch left the server idle while the client built it."""
        import numpy as np

        # pipelined: the server inserts one slice of notes while the next one's rows are built here
        with self.transaction() as db, db.pipeline(), db.cursor() as cur:
            if vectors:
                cur.execute(  # the vectors in binary: as text, 1,000 of them took 1.4 s to format and parse
                    "INSERT INTO vectors (embed_hash, vec) SELECT * FROM unnest(%s::text[], %b::vector[])"
                    " ON CONFLICT DO NOTHING",
                    (list(vectors), [np.asarray(v, dtype=np.float32) for v in vectors.values()]),
                )
            gone = [*deletes, *(u.record.path for u in updates)]
            if gone:
                cur.execute("DELETE FROM links WHERE src = ANY(%s)", (gone,))
                for table in ("chunks", "files"):  # each deleted row's terms leave the counts
                    cur.execute(
                        f"WITH gone AS (DELETE FROM {table} WHERE path = ANY(%s) RETURNING tsv)"
                        f" {_COUNT_TERMS} SELECT '{table}', w, -COUNT(*)"
                        f" FROM gone, unnest(tsvector_to_array(gone.tsv)) w GROUP BY w {_ADD_COUNTS}",
                        (gone,),
                    )
            added: dict[str, Counter[str]] = {"chunks": Counter(), "files": Counter()}
            for part in _slices(updates):
                self._insert_notes(cur, part, added)
            for table, counts in added.items():
                if counts:
                    cur.execute(
                        f"{_COUNT_TERMS} SELECT %s, * FROM unnest(%s::text[], %s::bigint[]) {_ADD_COUNTS}",
                        (table, list(counts), list(counts.values())),
                    )
            if touch:
                cur.execute(
                    f"INSERT INTO files ({rows.RECORD_COLUMNS}) SELECT * FROM unnest({_RECORD_ARRAYS})"
                    " ON CONFLICT (path)" + rows.RECORD_UPSERT,
                    _columnwise([rows.record_params(r) for r in touch], len(_RECORD_TYPES)),
                )
            if updates or deletes:
                self._bump_generation()
            if vectors:
                self._ensure_ann(cur)

    def _insert_notes(
        self, cur: psycopg.Cursor[Any], updates: Sequence[NoteUpdate], added: dict[str, Counter[str]]
    ) -> None:
        """The notes' records (with their note-level full text), chunks and links: a statement each,
        rows in the batch's order (chunk keys are assigned as the chunks come); each row's distinct
        terms counted into ``added`` (per table)."""
        files, chunks, links = [], [], []
        in_chunks, in_notes = term_counts.added(updates)
        added["chunks"].update(in_chunks)
        added["files"].update(in_notes)
        for u in updates:
            tsv, dl = (
                fulltext.tsvector_literal(" ".join(item.terms for item in u.chunks))
                if u.chunks
                else (None, None)
            )
            files.append((*rows.record_params(u.record), tsv, dl))
            for item in u.chunks:
                chunks.append((*rows.chunk_params(item), *fulltext.tsvector_literal(item.terms)))
            links.extend(rows.link_params(u.record.path, u.links))
        cur.execute(
            f"INSERT INTO files ({rows.RECORD_COLUMNS}, tsv, dl)"
            f" SELECT {_FILE_SELECT} FROM unnest({_RECORD_ARRAYS}, %s::text[], %s::int[])"
            f" AS u({rows.RECORD_COLUMNS}, tsv, dl)",
            _columnwise(files, len(_RECORD_TYPES) + 2),
        )
        if chunks:
            cur.execute(
                f"INSERT INTO chunks ({rows.CHUNK_INSERT_COLUMNS}, tsv, dl, vec)"
                f" SELECT {_CHUNK_SELECT}, u.tsv::tsvector, u.dl,"
                # a lookup per row: a join would plan a scan of every stored vector per batch
                " (SELECT vec FROM vectors v WHERE v.embed_hash = u.embed_hash)"
                f" FROM unnest({_CHUNK_ARRAYS}, %s::text[], %s::int[]) WITH ORDINALITY"
                f" AS u({rows.CHUNK_INSERT_COLUMNS}, tsv, dl, ord) ORDER BY u.ord",
                _columnwise(chunks, len(_CHUNK_TYPES) + 2),
            )
        if links:
            cur.execute(
                f"INSERT INTO links ({rows.LINK_COLUMNS}) SELECT {rows.LINK_COLUMNS}"
                f" FROM unnest({_LINK_ARRAYS}) WITH ORDINALITY AS u({rows.LINK_COLUMNS}, ord) ORDER BY ord",
                _columnwise(links, len(_LINK_TYPES)),
            )

    def drop_orphan_vectors(self) -> int:
        with self.transaction() as db:
            db.execute(
                "DELETE FROM tier_vectors t WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = t.embed_hash)"
            )
            cur = db.execute(
                "DELETE FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = v.embed_hash)"
            )
            return cur.rowcount

    def clear(self) -> None:
        """Remove every indexed note and vector but keep the schema, so a cleared index stays cleared."""
        with self.transaction() as db:
            db.execute(
                "TRUNCATE chunks, vectors, tier_vectors, links, files, term_stats, counters,"
                " chunks_postings, files_postings"
            )
            db.execute("DELETE FROM meta WHERE key IN ('space', 'tier_space')")
            self._set_meta("cleared_at", str(time.time()))
            self._bump_generation()

    def dismiss_pair(self, a: str, b: str) -> None:
        a, b = sorted((a, b))
        hashes = dict(self._rows("SELECT path, file_hash FROM files WHERE path = ANY(%s)", ([a, b],)))
        with self.transaction() as db:
            db.execute(
                "INSERT INTO dismissed_pairs (a, b, hash_a, hash_b, dismissed_at) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (a, b) DO UPDATE SET hash_a = excluded.hash_a, hash_b = excluded.hash_b,"
                " dismissed_at = excluded.dismissed_at",
                (a, b, hashes.get(a), hashes.get(b), time.time()),
            )

    def restore_pair(self, a: str, b: str) -> bool:
        a, b = sorted((a, b))
        with self.transaction() as db:
            return db.execute("DELETE FROM dismissed_pairs WHERE a = %s AND b = %s", (a, b)).rowcount > 0

    # ---- the quality tier ---------------------------------------------------------------------
    def tier_missing(self, limit: int) -> list[tuple[str, str, Chunk]]:
        found = self._rows(
            f"SELECT DISTINCT ON (c.embed_hash) c.embed_hash, f.title, {_columns('c')} FROM chunks c"
            " JOIN files f ON f.path = c.path"
            " WHERE NOT EXISTS (SELECT 1 FROM tier_vectors t WHERE t.embed_hash = c.embed_hash)"
            " ORDER BY c.embed_hash, c.key",
        )
        found.sort(key=lambda r: int(r[2]))
        return [(r[0], r[1] or "", rows.chunk(r[2:])) for r in found[:limit]]

    def add_tier_vectors(self, space: EmbeddingSpace, vectors: dict[str, Vectors]) -> None:
        import numpy as np

        with self.transaction() as db, db.cursor() as cur:
            drop, record = tier_switch(self.tier_space, space)
            if drop:
                cur.execute("DELETE FROM tier_vectors")
            if record:
                self._set_meta("tier_space", space.to_json())
            cur.executemany(
                "INSERT INTO tier_vectors (embed_hash, vec) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [(h, np.asarray(v, dtype=np.float32)) for h, v in vectors.items()],
            )
            self._bump_generation()

    def tier_coverage(self) -> tuple[int, int]:
        row = self._one(rows.TIER_COVERAGE)
        return int(row[1]), int(row[0])

    # ---- catalog reads ------------------------------------------------------------------------
    def file_records(self) -> dict[str, FileRecord]:
        return {r[0]: rows.record(r) for r in self._rows(f"SELECT {rows.FILE_COLUMNS} FROM files")}

    def known_embed_hashes(self, hashes: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(hashes))
        return {
            r[0] for r in self._rows("SELECT embed_hash FROM vectors WHERE embed_hash = ANY(%s)", (wanted,))
        }

    def chunk_keys(self, path: str) -> set[tuple[str, str]]:
        return {
            (r[0], r[1]) for r in self._rows("SELECT id, content_hash FROM chunks WHERE path = %s", (path,))
        }

    def chunks(self, keys: Iterable[int]) -> dict[int, Chunk]:
        found = self._rows(f"SELECT {_columns()} FROM chunks WHERE key = ANY(%s)", ([int(k) for k in keys],))
        return {int(r[0]): rows.chunk(r) for r in found}

    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        row = self._one(f"SELECT {_columns()} FROM chunks WHERE id = %s", (chunk_id,))
        return None if row is None else rows.chunk(row)

    def chunk_paths(self, keys: Iterable[int]) -> dict[int, str]:
        found, missing = self._seen.split(self._frozen(), (int(k) for k in keys))
        if missing:
            found.update(self._rows("SELECT key, path FROM chunks WHERE key = ANY(%s)", (missing,)))
        return found

    def note_chunk_keys(self, paths: Iterable[str]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for key, path in self._rows(
            "SELECT key, path FROM chunks WHERE path = ANY(%s) ORDER BY key", (list(paths),)
        ):
            out.setdefault(path, []).append(int(key))
        return out

    def note_chunk_scores(
        self, query: Vectors, paths: Iterable[str]
    ) -> tuple[dict[str, list[int]], npt.NDArray[np.float32]]:
        """The keys and scores in one statement (rows grouped by note, keys in order in each)."""
        import numpy as np

        groups: dict[str, list[int]] = {}
        found = self._rows(
            "SELECT path, key, -(vec <#> %s) FROM chunks WHERE path = ANY(%s) ORDER BY path, key",
            (np.asarray(query, dtype=np.float32), list(paths)),
        )
        for path, key, _ in found:
            groups.setdefault(path, []).append(int(key))
        scores = np.fromiter((np.nan if s is None else s for _, _, s in found), np.float32, len(found))
        return groups, scores

    def chunk_layout(self) -> tuple[ChunkKeys, list[str], npt.NDArray[np.bool_]]:
        import numpy as np

        data = self._rows("SELECT key, path, frontmatter FROM chunks ORDER BY key")
        keys = np.fromiter((r[0] for r in data), dtype=np.int64, count=len(data))
        frontmatter = np.fromiter((bool(r[2]) for r in data), dtype=np.bool_, count=len(data))
        return keys, [r[1] for r in data], frontmatter

    def note_texts(self) -> Iterator[NoteText]:
        yield from rows.note_texts(
            self._rows("SELECT path, text, frontmatter FROM chunks ORDER BY path, ordinal")
        )

    def titles(self, paths: Iterable[str]) -> dict[str, str]:
        return dict(self._rows("SELECT path, title FROM files WHERE path = ANY(%s)", (list(paths),)))

    def links(self, paths: Iterable[str] | None = None) -> dict[str, list[Link]]:
        cols = rows.LINK_COLUMNS
        if paths is None:
            return rows.links_by_src(self._rows(f"SELECT {cols} FROM links ORDER BY src, line, n"))
        return rows.links_by_src(
            self._rows(f"SELECT {cols} FROM links WHERE src = ANY(%s) ORDER BY src, line, n", (list(paths),))
        )

    def dismissed_pairs(self) -> set[tuple[str, str]]:
        rows = self._rows(
            "SELECT d.a, d.b FROM dismissed_pairs d JOIN files fa ON fa.path = d.a JOIN files fb ON fb.path = d.b"
            " WHERE fa.file_hash IS NOT DISTINCT FROM d.hash_a AND fb.file_hash IS NOT DISTINCT FROM d.hash_b"
        )
        return {(r[0], r[1]) for r in rows}

    def counts(self) -> StoreCounts:
        """From the counters the store's triggers keep (migration 0004; doctor compares them with the
        rows); read once in a snapshot, whose every read of them would give the same."""
        in_snapshot = getattr(self._local, "snap", False)
        if in_snapshot and self._local.counts is not None:
            return cast(StoreCounts, self._local.counts)
        counts = rows.store_counts(self._rows("SELECT name, n FROM counters"))
        if in_snapshot:
            self._local.counts = counts
        return counts

    def _counted(self) -> StoreCounts:
        return rows.counted(self._rows)

    def size_bytes(self) -> int:
        row = self._one(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (self.schema,),
        )
        return int(row[0])

    def unused_vectors(self) -> int:
        row = self._one(
            "SELECT COUNT(*) FROM vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = v.embed_hash)"
        )
        return int(row[0])

    def problems(self) -> list[str]:
        checks = {
            "chunks without a vector": "SELECT COUNT(*) FROM chunks WHERE vec IS NULL",
            "chunks whose vector differs from the stored one": "SELECT COUNT(*) FROM chunks c JOIN vectors v"
            " ON v.embed_hash = c.embed_hash WHERE c.vec IS DISTINCT FROM v.vec",
            "notes with chunks but no note-level full text": "SELECT COUNT(*) FROM files WHERE n_chunks > 0"
            " AND status = 'indexed' AND tsv IS NULL",
            **rows.SHARED_CHECKS,
        }
        found = []
        for label, sql in checks.items():
            n = self._one(sql)[0]
            if n:
                found.append(f"{n} {label}")
        if self.counts() != self._counted():
            found.append(f"the kept counts {self.counts()} differ from the rows {self._counted()}")
        for table in ("chunks", "files"):
            kept = (self._size(table), self._counter(f"dl:{table}"))
            truth = self._one(f"SELECT COUNT(*), COALESCE(SUM(dl), 0) FROM {table} WHERE tsv IS NOT NULL")
            if kept != (int(truth[0]), int(truth[1])):
                found.append(
                    f"the kept full-text size of {table} {kept} differs from the rows {tuple(truth)}"
                )
            posted = self._one(f"SELECT COUNT(*) FROM {table}_postings")[0]
            terms = self._one(f"SELECT COALESCE(SUM(length(tsv)), 0) FROM {table}")[0]
            if posted != terms:
                found.append(f"the full-text postings of {table} ({posted}) differ from its terms ({terms})")
            kept_df = f"SELECT term, df FROM term_stats WHERE tbl = '{table}' AND df <> 0"
            true_df = f"SELECT word, ndoc FROM ts_stat('SELECT tsv FROM {table} WHERE tsv IS NOT NULL')"
            miscounted = self._one(
                f"SELECT COUNT(DISTINCT term) FROM (({kept_df} EXCEPT {true_df})"
                f" UNION ALL ({true_df} EXCEPT {kept_df})) x"
            )[0]
            if miscounted:
                found.append(f"{miscounted} kept term counts of {table} differ from its full-text index")
        for table, space, label in (
            ("vectors", self.space, "vectors"),
            ("tier_vectors", self.tier_space, "quality-tier vectors"),
        ):
            if space is not None and space.dimensions:
                bad = self._one(
                    f"SELECT COUNT(*) FROM {table} WHERE vector_dims(vec) != %s", (space.dimensions,)
                )[0]
                if bad:
                    found.append(f"{bad} {label} with the wrong dimension")
        return found
