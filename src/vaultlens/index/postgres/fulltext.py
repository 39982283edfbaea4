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

from vaultlens.index.bm25_top import K1, B

MAX_POSITIONS = 256  # PostgreSQL's limit per lexeme


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


def bm25_sql(table: str, key: str) -> str:
    """Rows (key, BM25) of ``table`` holding a term of ``%(match)s``, each scored over ``%(match)s`` and
    ``%(also)s``, best ``%(limit)s`` first (equal scores by key), from ``{table}_postings``.

    ``%(match_idf)s`` / ``%(also_idf)s`` are the terms' idf, ``%(avgdl)s`` the table's mean document
    length. The match terms' postings are read by term (index-only range scans); the other terms'
    are looked up for the rows found (bm25_top scores a common term only where a rare one matched)."""
    score = f"q.idf * p.tf * {K1 + 1} / (p.tf + {K1} * ({1 - B} + {B} * p.dl / %(avgdl)s))"
    posted = f"{table}_postings"
    return (
        f"SELECT {key}, SUM(s) FROM (SELECT p.{key}, {score} AS s"
        f" FROM unnest(%(match)s::text[], %(match_idf)s::float8[]) q(term, idf)"
        f" JOIN {posted} p ON p.term = q.term"
        f" UNION ALL SELECT p.{key}, {score}"
        f" FROM (SELECT DISTINCT {key} FROM {posted} WHERE term = ANY(%(match)s)) c"
        " CROSS JOIN unnest(%(also)s::text[], %(also_idf)s::float8[]) q(term, idf)"
        f" JOIN {posted} p ON p.term = q.term AND p.{key} = c.{key}) x"
        f" GROUP BY {key} ORDER BY 2 DESC, 1 LIMIT %(limit)s"  # ties by key: the same rows whatever the layout
    )
