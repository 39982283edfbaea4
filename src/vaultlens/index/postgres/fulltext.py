"""Full text in PostgreSQL scored exactly like the SQLite store's FTS5 BM25, on the contract's scale.

Terms arrive stemmed by index/lexical.py (Snowball Russian or English chosen per word by its
script, the same stemmers PostgreSQL's ``russian`` and ``english`` configurations use), so they
are stored as they are: a ``tsvector`` literal whose lexemes are the terms and whose positions
count them (PostgreSQL keeps at most 256 positions per lexeme; BM25 saturates long before), with
the row's term count beside it. A second stemming by a text search configuration would split the
two backends' vocabularies; with the same terms, the same BM25 (k1 1.2, b 0.75, FTS5's idf
floored at 1e-6) and the same division by the query's idf mass, hybrid search ranks alike on both.
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


def tsquery_literal(terms: list[str]) -> str:
    """Any of ``terms`` (tsquery input)."""
    return " | ".join(_lexeme(t) for t in terms)


def bm25_sql(table: str, key: str) -> str:
    """Rows (key, BM25) of ``table`` matching ``%(query)s``, best ``%(limit)s`` first (equal scores by key).

    ``%(terms)s`` / ``%(idf)s`` are parallel arrays of the matched terms and their idf, ``%(avgdl)s``
    the table's mean document length. A term's frequency is the number of positions of its lexeme."""
    return (
        f"SELECT d.{key}, SUM(q.idf * u.tf * {K1 + 1} / (u.tf + {K1} * ({1 - B} + {B} * d.dl / %(avgdl)s)))"
        f" FROM {table} d"
        # only the query's lexemes are unnested: marked weight A, filtered, then read
        " CROSS JOIN LATERAL (SELECT lexeme, cardinality(positions) AS tf"
        " FROM unnest(ts_filter(setweight(d.tsv, 'A', %(terms)s::text[]), '{a}'))) u"
        " JOIN unnest(%(terms)s::text[], %(idf)s::float8[]) AS q(term, idf) ON q.term = u.lexeme"
        " WHERE d.tsv @@ %(query)s::tsquery"
        f" GROUP BY d.{key} ORDER BY 2 DESC, 1 LIMIT %(limit)s"  # ties by key: the same rows whatever the layout
    )
