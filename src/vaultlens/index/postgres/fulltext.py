"""Full text in PostgreSQL scored exactly like the SQLite store's FTS5 BM25, on the contract's scale.

Terms arrive stemmed by index/lexical.py (Snowball Russian or English chosen per word by its
script, the same stemmers PostgreSQL's ``russian`` and ``english`` configurations use), so they
are stored as they are: a ``tsvector`` literal whose lexemes are the terms and whose positions
count them (PostgreSQL keeps at most 256 positions per lexeme; BM25 saturates long before), with
the row's term count beside it; each term's postings (row, term frequency, row length) are kept
beside the table by triggers (schema.py, migration 0005) and BM25 is read from them. A second
stemming by a text search configuration would split the two backends' vocabularies; with the same
terms, the same BM25 (k1 1.2, b 0.75, FTS5's idf floored at 1e-6) and the same division by the
query's idf mass, hybrid search ranks alike on both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from vaultlens.index import bm25_top
from vaultlens.index.bm25_top import K1, B, Query
from vaultlens.index.postgres.connection import PostgresConnection
from vaultlens.index.store import NoteScores

MAX_POSITIONS = 256  # PostgreSQL's limit per lexeme
PROBE_FROM = 50  # postings per row found past which a common term is looked up per row (see probed)
# rows that can still reach the best (bm25_sql) per row returned: 1.4-3 measured at 1,000,000 chunks,
# where a term in a tenth of them, joined because all rows found were counted, cost 50-60 ms
REACHING = 4
REACH_SLACK = 1e-9  # under the floor a row must reach: float sums added in another order may differ

_COUNTED = ("chunks", "files")  # the tables whose terms term_stats counts


def _lexeme(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(terms: str) -> tuple[str, int]:
    """(tsvector input for the space-separated ``terms``, their number: the BM25 document length)."""
    words = terms.split()
    counts = Counter(words)
    parts = [
        f"{_lexeme(t)}:{','.join(str(i) for i in range(1, min(n, MAX_POSITIONS) + 1))}"
        for t, n in counts.items()
    ]
    return " ".join(parts), len(words)


def bm25_sql(table: str, key: str, also: bool, probe: bool) -> str:
    """Rows (key, BM25) of ``table`` holding a term of ``%(match)s``, each scored over ``%(match)s``
    and, when ``also`` / ``probe``, ``%(also)s`` / ``%(probe)s``, best ``%(limit)s`` first (equal
    scores by key), from ``{table}_postings``.

    ``%(match_idf)s`` / ``%(also_idf)s`` / ``%(probe_idf)s`` are the terms' idf, ``%(avgdl)s`` the
    table's mean document length, ``%(bound)s`` (with other terms) the most they can add to a row:
    ``(k1 + 1)`` times their idf summed. The match terms' postings are read by term (index-only range
    scans) and scored first. The other terms are scored only for the rows found (bm25_top scores a
    common term only where a rare one matched), and of those only for the rows that can still reach
    the best ``%(limit)s``: a row's match score is a floor under its full score, so the
    ``%(limit)s``-th best match score is a floor under the ``%(limit)s``-th best full score, and a
    row whose match score falls short of it by more than the bound can never make up the
    difference (with a very common term, whose bound is small, a few hundred rows of thousands). An
    ``also`` term's postings are joined with those rows, a ``probe`` term is looked up per row (see
    :func:`probed`). A part with no terms is left out, so the planner never prepares rows for it;
    the rows that are not scored further keep their match score, below every row returned.
    """
    score = f"q.idf * p.tf * {K1 + 1} / (p.tf + {K1} * ({1 - B} + {B} * p.dl / %(avgdl)s))"
    posted = f"{table}_postings"
    matched = (
        f"SELECT p.{key}, {score} AS s FROM unnest(%(match)s::text[], %(match_idf)s::float8[]) q(term, idf)"
        f" JOIN {posted} p ON p.term = q.term"
    )
    order = f" GROUP BY {key} ORDER BY 2 DESC, 1 LIMIT %(limit)s"  # ties by key: the same rows whatever the layout
    if not (also or probe):
        return f"SELECT {key}, SUM(s) FROM ({matched}) x" + order
    parts = [f"SELECT {key}, s FROM m"]
    if also:
        parts.append(
            f"SELECT c.{key}, {score} FROM c CROSS JOIN unnest(%(also)s::text[], %(also_idf)s::float8[]) q(term, idf)"
            f" JOIN {posted} p ON p.term = q.term AND p.{key} = c.{key}"
        )
    if probe:  # LIMIT 1 (a (term, key) is unique) keeps the planner from flattening the probe into a join
        parts.append(
            f"SELECT c.{key}, {score} FROM c CROSS JOIN unnest(%(probe)s::text[], %(probe_idf)s::float8[]) q(term, idf)"
            f" CROSS JOIN LATERAL (SELECT tf, dl FROM {posted} WHERE term = q.term AND {key} = c.{key} LIMIT 1) p"
        )
    return (
        f"WITH m AS MATERIALIZED (SELECT {key}, SUM(s) AS s FROM ({matched}) x GROUP BY {key}),"
        " r AS (SELECT COALESCE((SELECT s FROM m ORDER BY s DESC OFFSET %(limit)s - 1 LIMIT 1), '-Infinity')"
        f" - %(bound)s - {REACH_SLACK} AS reach),"
        f" c AS (SELECT m.{key} FROM m, r WHERE m.s >= r.reach)"
        f" SELECT {key}, SUM(s) FROM ({' UNION ALL '.join(parts)}) x" + order
    )


def probed(also: list[str], rows: int, df: Mapping[str, int], limit: int) -> tuple[list[str], list[str]]:
    """(terms to join, terms to probe) of ``also``, for about ``rows`` rows found, of which those that
    can reach the best ``limit`` are scored (see :func:`bm25_sql`; about REACHING times ``limit``
    of them, or all when fewer). The planner cannot see a term's posting count behind an array, so
    it joins every term by reading its whole posting list into a hash: 108 ms for a term in 480,733
    of 1,000,000 chunks, where 1,996 index probes take 22 ms (a probe ~11 us, a posting read ~0.2
    us; docs/benchmarks.md). A term whose postings outnumber the rows scored PROBE_FROM times is
    probed."""
    scored = min(rows, REACHING * limit)
    probe = [t for t in also if df.get(t, 0) > PROBE_FROM * scored]
    return [t for t in also if t not in probe], probe


class PostgresFullText(PostgresConnection):
    """Full-text reads of the store (PostgresStore)."""

    # ---- full text ----------------------------------------------------------------------------
    def lexical_chunks(self, terms: Sequence[str], limit: int) -> dict[int, float]:
        """BM25 of chunks as FTS5 computes it, divided by the query's idf mass (see
        :mod:`vaultlens.index.postgres.fulltext`); terms in more than half the chunks are left out of
        the match, the rarest kept, and past bm25_top.PRUNE_FROM_ROWS matching rows the rows holding
        only common terms are not scored (bm25_top.best_rows), as in the SQLite store."""
        with self.snapshot():
            q = self._weigh(terms)
            if q is None:
                return {}
            run = self._bm25_rows("chunks", "key", q.held)
            best = bm25_top.top(run, q.held, limit, q.plain)
            return {int(k): float(v) / q.mass for k, v in best}

    def lexical_notes(self, terms: Sequence[str], limit: int) -> NoteScores:
        """BM25 of whole notes over the terms some chunk holds, divided by the same mass (the terms in
        more than half the notes left out of the match the same way)."""
        with self.snapshot():
            q = self._weigh(terms)
            if q is None:
                return NoteScores()
            n_notes = self._size("files")
            note_dfs = self._doc_freqs("files", list(q.held))
            note_idf = bm25_top.note_weights(n_notes, note_dfs)
            run = self._bm25_rows("files", "path", note_idf)
            top = bm25_top.top(run, note_idf, limit, q.plain)
            return NoteScores([str(p) for p, _ in top], [float(v) / q.mass for _, v in top])

    def _weigh(self, terms: Sequence[str]) -> bm25_top.Weighed | None:
        return bm25_top.weigh(self._size("chunks"), self._doc_freqs("chunks", list(dict.fromkeys(terms))))

    def _bm25_rows(self, table: str, key: str, idf: dict[str, float]) -> Query:
        """bm25_top's query over ``table``: the best (key, BM25) rows holding a term of ``match``, each
        scored over ``match`` and ``also`` (one query: the score's terms need not be the match's)."""

        def run(match: list[str], also: list[str], limit: int) -> list[tuple[Any, float]]:
            df = self._doc_freqs(table, match + also) if also else {}
            joined, probe = probed(also, sum(df.get(t, 0) for t in match), df, limit)
            return [
                (k, float(v))
                for k, v in self._rows(
                    bm25_sql(table, key, bool(joined), bool(probe)),
                    {
                        "match": match,
                        "match_idf": [idf[t] for t in match],
                        "also": joined,
                        "also_idf": [idf[t] for t in joined],
                        "probe": probe,
                        "probe_idf": [idf[t] for t in probe],
                        "avgdl": self._avgdl(table),
                        "limit": limit,
                        "bound": (bm25_top.K1 + 1) * sum(idf[t] for t in also),
                    },
                )  # fmt: skip
            ]

        return run

    def _doc_freqs(self, table: str, terms: list[str]) -> dict[str, int]:
        """Rows of ``table`` (``chunks`` or note-level ``files``) holding each term, capped just over
        half of them (past it FTS5's idf is floored, whatever the count): the counts `apply` keeps
        (migration 0003). The terms not cached for this generation are read in one statement for
        both tables: a search weighs its terms over the chunks, then over the notes."""
        gen = self.generation
        known = {t: self._stats.get((gen, "df:" + table, t)) for t in terms}
        missing = [t for t, df in known.items() if df is None]
        if missing:
            counted = dict.fromkeys(((tbl, t) for tbl in _COUNTED for t in missing), 0)
            for tbl, term, df in self._rows(
                "SELECT tbl, term, df FROM term_stats WHERE tbl = ANY(%s) AND term = ANY(%s)",
                (list(_COUNTED), missing),
            ):
                counted[(tbl, term)] = df
            self._trim_stats()
            for (tbl, t), df in counted.items():
                self._stats[(gen, "df:" + tbl, t)] = float(min(df, self._size(tbl) // 2 + 1))
            known.update((t, self._stats[(gen, "df:" + table, t)]) for t in missing)
        return {t: int(df or 0) for t, df in known.items()}

    def _avgdl(self, table: str) -> float:
        return max(self._counter(f"dl:{table}") / max(self._size(table), 1), 1e-9)
