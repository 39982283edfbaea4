"""The embedded store's full text: FTS5's BM25 on the neutral scale (index/bm25_top.py picks the
rows worth scoring), its document frequencies from the counts ``apply`` keeps, and the check of those
counts against FTS5's own vocabulary."""

from __future__ import annotations

import heapq
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from vaultlens.errors import StoreError
from vaultlens.index import bm25_top
from vaultlens.index.bm25_top import K1, B, Query
from vaultlens.index.sqlite import fts_tokens
from vaultlens.index.sqlite.connection import SQLiteConnection
from vaultlens.index.store import NoteScores

PROBE_HEAD = 2000  # rows a pruned FTS5 query's probe fetches, so the pruned query rarely scores them again


def _any_of(terms: list[str]) -> str:
    """The FTS5 expression for rows holding any of ``terms`` (each quoted, so read as a word)."""
    return " OR ".join(f'"{t}"' for t in terms)


def _varints(blob: bytes) -> list[int]:
    """SQLite's big-endian varints (7 bits a byte, the 9th byte whole), as FTS5 writes its sizes."""
    out, value, used = [], 0, 0
    for byte in blob:
        used += 1
        if used == 9:
            out.append((value << 8) | byte)
            value, used = 0, 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            out.append((value << 7) | byte)
            value, used = 0, 0
    return out


def fts5_size(execute: Callable[[str, tuple[Any, ...]], list[Any]], table: str) -> tuple[int, int]:
    """(rows, tokens) of the single-column FTS5 ``table``, from FTS5's own averages record."""
    found = execute(f"SELECT block FROM {table}_data WHERE id = 1", ())
    sizes = _varints(found[0][0]) if found else []
    return (sizes[0], sizes[1]) if len(sizes) >= 2 else (0, 0)


def fts5_query(
    execute: Callable[[str, tuple[Any, ...]], list[Any]], table: str, idf: Mapping[str, float]
) -> Query:
    """bm25_top's query over the FTS5 ``table`` (single column): the best rows of ``match`` as
    (rowid, -bm25()), each scored with the terms of ``also`` (``idf``: theirs) too; FTS5 syntax
    errors become a StoreError.

    FTS5's bm25() counts every row of every term of its expression once per query (its idf), so the
    common ``also`` terms cannot be in it without costing what pruning saves. The rows of ``match``
    come best first by their score over ``match``; each then gets the common terms' shares computed
    here as bm25() computes them (its k1 and b, the row's token count and the mean from FTS5's own
    size records, the term counted in the row's stored terms), until no row left can reach the
    ``limit``-th best even with every common term at its bound. The counting is by exact term: a
    stored word that only FTS5's diacritic folding would equate with the query's is not counted.
    A call over only some of ``idf``'s terms and none ``also`` is bm25_top's probe, and its terms are
    often the pruned call's ``match``: it fetches PROBE_HEAD rows, and the pruned call scores those
    first; when no row past them can reach the best ``limit``, FTS5 does not score the rows of
    ``match`` a second time (~4 ms at 1,000,000 chunks).
    """
    heads: dict[str, tuple[int, list[tuple[Any, float]]]] = {}  # expression -> (limit, its best rows)

    def best(expression: str, limit: int | None) -> list[tuple[Any, float]]:
        # one row, as SQLiteStore._pairs_in reads; 21 digits give each double back exactly (measured:
        # 0 of 900,000 differed; 15 or 17 did not)
        sql = (
            f"SELECT group_concat(r), group_concat(printf('%!.20e', s)) FROM (SELECT rowid AS r,"
            f" -bm25({table}) AS s FROM {table} WHERE {table} MATCH ? ORDER BY bm25({table})"
        )
        try:
            ((keys, scores),) = (
                execute(sql + " LIMIT ?)", (expression, limit))
                if limit is not None
                else execute(sql + ")", (expression,))
            )
        except sqlite3.OperationalError as exc:
            raise StoreError(f"Full-text query failed: {exc}") from None
        found = (
            list(zip(map(int, keys.split(",")), map(float, scores.split(",")), strict=True)) if keys else []
        )
        if limit is not None:
            heads[expression] = (limit, found)
        return found

    def run(match: list[str], also: list[str], limit: int) -> list[tuple[Any, float]]:
        if not match:
            return []
        if not also:
            probe = len(match) < len(idf)
            return best(_any_of(match), max(limit, PROBE_HEAD) if probe else limit)[:limit]
        rows_n, tokens = fts5_size(execute, table)
        avgdl = tokens / max(rows_n, 1)
        reach = sum(idf[t] for t in also) * (K1 + 1)
        common = set(also)
        # which rows hold a common term at all: FTS5 finds them fast while no bm25() asks for counts
        sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
        holding = {r for (r,) in execute(sql, (f"({_any_of(match)}) AND ({_any_of(also)})",))}

        def with_common(ranked: list[tuple[Any, float]]) -> tuple[list[tuple[Any, float]], bool]:
            """The best ``limit`` of ``ranked`` (rows of match, best first) with the common terms' shares
            added, and whether it stopped before a row that could not enter them any more."""
            top: list[tuple[float, Any]] = []  # a min-heap of the best full scores
            for start in range(0, len(ranked), 256):
                part = ranked[start : start + 256]
                if len(top) >= limit and part[0][1] + reach < top[0][0]:
                    return [(key, full) for full, key in sorted(top, key=lambda fk: -fk[0])], True
                keys = tuple(r for r, _ in part if r in holding)
                marks = ",".join("?" * len(keys))
                texts = (
                    dict(execute(f"SELECT rowid, terms FROM {table} WHERE rowid IN ({marks})", keys))
                    if keys
                    else {}
                )
                sizes = (
                    dict(execute(f"SELECT id, sz FROM {table}_docsize WHERE id IN ({marks})", keys))
                    if keys
                    else {}
                )
                for key, score in part:
                    full = score
                    if key in texts:
                        counts = Counter(w for w in str(texts[key]).split() if w in common)
                        norm = K1 * (1 - B + B * _varints(sizes.get(key, b"\x00"))[0] / avgdl)
                        full += sum(idf[t] * n * (K1 + 1) / (n + norm) for t, n in counts.items())
                    if len(top) < limit:
                        heapq.heappush(top, (full, key))
                    elif full > top[0][0]:
                        heapq.heapreplace(top, (full, key))
            return [(key, full) for full, key in sorted(top, key=lambda fk: -fk[0])], False

        expression = _any_of(match)
        head_limit, head = heads.get(expression, (0, []))
        if head_limit and len(head) == head_limit:  # the head holds not every row of match
            found, stopped = with_common(head)
            # a row past the head scores at most the head's last over match
            if stopped or (len(found) >= limit and head[-1][1] + reach < found[-1][1]):
                return found
        return with_common(head if len(head) < head_limit else best(expression, None))[0]

    return run


class SQLiteFullText(SQLiteConnection):
    """Full-text reads of the store (SQLiteStore)."""

    _df_cache: dict[tuple[int, str, str], int]  # (generation, table, term) -> rows holding it (SQLiteStore)

    # ---- full text ----------------------------------------------------------------------------
    def lexical_chunks(self, terms: Sequence[str], limit: int) -> dict[int, float]:
        """FTS5 BM25 of chunks divided by the query's idf mass (:func:`bm25_top.weigh`).

        The idf is FTS5's own (``log((N - df + 0.5) / (df + 0.5))``, floored at ~0), so the mass
        is roughly the BM25 of a chunk holding every term once. Past PRUNE_FROM_ROWS matching rows
        the best rows come from :func:`bm25_top.best_rows`, which skips scoring the rows that hold
        only the query's common terms (the same rows and scores; below, its probe costs more than it
        saves).
        """
        with self.snapshot():
            q = self._weigh(terms)
            if q is None:
                return {}
            run = self._bm25_rows("chunks_fts", q.held)
            best = bm25_top.top(run, q.held, limit, q.plain)
            return {int(r): float(v) / q.mass for r, v in best}

    def lexical_notes(self, terms: Sequence[str], limit: int) -> NoteScores:
        """FTS5 BM25 of whole notes over the terms some chunk holds, divided by the same mass; the
        terms in more than half the notes are left out of the match as the chunk query does."""
        with self.snapshot():
            q = self._weigh(terms)
            if q is None:
                return NoteScores()
            n_notes = self._notes_now()
            note_dfs = self._doc_freqs("notes_fts", q.held, n_notes)
            note_idf = bm25_top.note_weights(n_notes, note_dfs)
            run = self._bm25_rows("notes_fts", note_idf)
            top = bm25_top.top(run, note_idf, limit, q.plain)
            return NoteScores(
                [r for r, _ in top],
                [float(v) / q.mass for _, v in top],
                lambda keys: self._pairs_in("files", "rowid", "path", keys),
                lambda paths: self._pairs_in("files", "path", "rowid", paths),
            )

    def _weigh(self, terms: Sequence[str]) -> bm25_top.Weighed | None:
        n_chunks = self._chunks_now()
        return bm25_top.weigh(n_chunks, self._doc_freqs("chunks_fts", dict.fromkeys(terms), n_chunks))

    def _bm25_rows(self, table: str, idf: Mapping[str, float]) -> Query:
        return fts5_query(lambda sql, params: self.db.execute(sql, params).fetchall(), table, idf)

    def _doc_freqs(self, table: str, terms: Iterable[str], rows: int) -> dict[str, int]:
        """Rows of ``table`` holding each term, capped just over half of ``rows`` (past it FTS5's idf
        is floored, whatever the count): the counts ``apply`` keeps (index/term_counts.py), one
        lookup for the terms not cached for this generation. A term FTS5 stores as more than one
        token (or none) is matched as a phrase, so its rows are counted."""
        gen = self.generation
        if len(self._df_cache) > 100_000:
            self._df_cache.clear()
        cap = rows // 2 + 1
        out = {t: self._df_cache.get((gen, table, t)) for t in terms}
        stored = {t: fts_tokens.word_tokens(t) for t, df in out.items() if df is None}
        sql = f"SELECT term, df FROM term_stats WHERE tbl = '{table}' AND term IN ({{marks}})"
        kept = dict(self._rows_in(sql, {tokens[0] for tokens in stored.values() if len(tokens) == 1}))
        for t, tokens in stored.items():
            if len(tokens) == 1:
                df = kept.get(tokens[0], 0)
            else:
                sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"
                (df,) = self.db.execute(sql, (f'"{t}"', cap)).fetchone()
            out[t] = self._df_cache[(gen, table, t)] = int(df)
        return {t: min(int(df or 0), cap) for t, df in out.items()}

    def _miscounted_terms(self, table: str) -> int:
        """Tokens whose kept row count (``term_stats``) is not FTS5's own (its vocabulary's). On the main
        connection: a reader's may not even create the temporary vocabulary table."""
        self._conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_vocab USING fts5vocab(main, {table}, row)"
        )
        kept = f"SELECT term, df FROM term_stats WHERE tbl = '{table}' AND df <> 0"
        vocab = f"SELECT term, doc FROM temp.{table}_vocab"
        sql = (
            f"SELECT COUNT(DISTINCT term) FROM (SELECT term FROM ({kept} EXCEPT {vocab})"
            f" UNION ALL SELECT term FROM ({vocab} EXCEPT {kept}))"
        )
        return int(self._conn.execute(sql).fetchone()[0])

    def _notes_now(self) -> int:
        """Rows of notes_fts (one per note with chunks), as FTS5 counts them for its idf."""
        return fts5_size(lambda sql, params: self.db.execute(sql, params).fetchall(), "notes_fts")[0]
