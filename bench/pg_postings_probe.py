"""A posting table for chunk-level BM25, tried on a store kept by pg_search.py (a design probe, not the store).

Builds ``cp (term, key, tf, dl)`` from the kept store's chunk tsvectors, indexed on (term, key)
INCLUDE (tf, dl) so a term's postings are an index-only range scan, unless it exists. Then, for
pg_search.py's queries (same seed), times the chunk-level best 200 (bm25_top's pruning, the store's
own document frequencies and idf) scored from the tsvectors (the store's query) and from the
posting table, alternating, and counts the queries whose rows (in order) and scores are the same.
``--drop`` removes the table at the end (the kept store is then as its `apply` wrote it).

Usage: .venv/bin/python bench/pg_postings_probe.py --keep DIR [--chunks N] [--queries N] [--drop]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import REPO, median, pct
from pg_search import SETTINGS
from search_latency import Corpus

LIMIT = 200  # search.candidates


def postings_sql() -> str:
    """Best rows holding a term of %(m)s, scored over %(m)s and %(a)s: the match terms' postings read
    by term, the other terms' looked up per candidate row (as the tsvector query scores them)."""
    from vaultlens.index.bm25_top import K1, B

    score = f"q.idf * p.tf * {K1 + 1} / (p.tf + {K1} * ({1 - B} + {B} * p.dl / %(avgdl)s))"
    return (
        f"SELECT key, SUM(s) FROM (SELECT p.key, {score} AS s"
        " FROM unnest(%(m)s::text[], %(mi)s::float8[]) q(term, idf) JOIN cp p ON p.term = q.term"
        f" UNION ALL SELECT p.key, {score} FROM (SELECT DISTINCT key FROM cp WHERE term = ANY(%(m)s)) c"
        " CROSS JOIN unnest(%(a)s::text[], %(ai)s::float8[]) q(term, idf)"
        " JOIN cp p ON p.term = q.term AND p.key = c.key) x"
        " GROUP BY key ORDER BY 2 DESC, 1 LIMIT %(limit)s"
    )


def build(store: Any) -> None:
    if store._one("SELECT to_regclass('cp') IS NOT NULL")[0]:
        return
    t0 = time.perf_counter()
    with store.transaction() as db:
        db.execute(
            "CREATE TABLE cp (term text NOT NULL, key bigint NOT NULL, tf int NOT NULL, dl int NOT NULL)"
        )
        db.execute(
            "INSERT INTO cp SELECT u.lexeme, c.key, cardinality(u.positions), c.dl FROM chunks c, unnest(c.tsv) u"
        )
        t1 = time.perf_counter()
        db.execute("CREATE INDEX cp_term_key ON cp (term, key) INCLUDE (tf, dl)")
    store._conn.execute("VACUUM ANALYZE cp")
    rows = store._one("SELECT COUNT(*) FROM cp")[0]
    mb = store._one("SELECT pg_total_relation_size('cp')")[0] / 1e6
    print(f"posting table: fill {t1 - t0:.0f} s, index + vacuum {time.perf_counter() - t1:.0f} s,"
          f" {rows:,} rows, {mb:,.0f} MB", flush=True)  # fmt: skip


def best_chunks(store: Any, terms: list[str], postings: bool) -> list[tuple[Any, float]]:
    """The chunk-level best LIMIT rows, as PostgresStore.lexical finds them, from either source."""
    from vaultlens.index import bm25_top

    dfs = store._doc_freqs("chunks", list(dict.fromkeys(terms)))
    n = store._size("chunks")
    idf = {t: bm25_top.idf(n, df) for t, df in dfs.items()}
    useful = list(bm25_top.useful(idf))
    run = store._bm25_rows("chunks", "key", idf)
    if postings:
        avgdl = store._avgdl("chunks")

        def run(match: list[str], also: list[str], limit: int) -> list[tuple[Any, float]]:
            params = {"m": match, "mi": [idf[t] for t in match], "a": also, "ai": [idf[t] for t in also],
                      "avgdl": avgdl, "limit": limit}  # fmt: skip
            return [(k, float(v)) for k, v in store._rows(postings_sql(), params)]

    if sum(dfs[t] for t in useful) < bm25_top.PRUNE_FROM_ROWS:
        return run(useful, [], LIMIT)
    return bm25_top.best_rows(run, {t: idf[t] for t in useful if dfs[t]}, LIMIT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", type=Path, required=True, help="the dir pg_search.py --keep filled")
    ap.add_argument("--chunks", type=int, default=1_000_000, help="the kept store's --chunks (1,000,000)")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--drop", action="store_true", help="drop the posting table at the end")
    args = ap.parse_args()
    if not (args.keep / "data" / "PG_VERSION").is_file():
        sys.exit(f"error: no cluster kept in {args.keep} (run bench/pg_search.py --keep {args.keep} first)")
    sys.path.insert(0, str(REPO / "tests"))
    import pg_server
    from vaultlens.index.lexical import query_terms
    from vaultlens.index.postgres import PostgresBackend

    started = pg_server.start(args.keep.resolve() / "data", SETTINGS)
    try:
        backend = PostgresBackend(started.dsn, "bench-kept", exact_below=0)
        store = backend.open(args.keep.resolve() / "pg", create=False)
        build(store)
        source = Corpus(args.chunks)
        queries = [query_terms(source.query()[0]) for _ in range(args.queries)]
        times: dict[bool, list[float]] = {False: [], True: []}
        same = 0
        with store.snapshot():
            for terms in queries[:3]:  # warm-up
                best_chunks(store, terms, False), best_chunks(store, terms, True)
            for i, terms in enumerate(queries):
                found = {}
                for postings in (False, True) if i % 2 else (True, False):
                    t0 = time.perf_counter()
                    found[postings] = best_chunks(store, terms, postings)
                    times[postings].append((time.perf_counter() - t0) * 1000)
                a, b = found[False], found[True]
                same += [k for k, _ in a] == [k for k, _ in b] and bool(
                    np.allclose([v for _, v in a], [v for _, v in b], rtol=1e-9)
                )
        for postings, values in times.items():
            name = "posting table" if postings else "tsvectors"
            print(
                f"chunk BM25 best {LIMIT} from {name}: p50 {median(values):.1f} ms, p95 {pct(values, 0.95):.1f} ms"
            )
        print(
            f"queries with the same rows in the same order and the same scores (rtol 1e-9): {same}/{len(queries)}"
        )
        if args.drop:
            with store.transaction() as db:
                db.execute("DROP TABLE cp")
        store.close()
    finally:
        pg_server.stop(started, keep=True)


if __name__ == "__main__":
    main()
