"""Search on the PostgreSQL backend against the SQLite backend, on the same synthetic store, same run.

The corpus is search_latency.py's (seeded clustered 512-d unit vectors, 10 chunks per note, Zipf
texts with per-cluster topic words). Both stores are filled through their own ``apply`` (the
indexer's write path); the PostgreSQL store is loaded without its HNSW index and builds it once at
the end (``ensure_ann``: what ``apply`` does by itself past search.ann_threshold chunks). Then, for
the same queries (query embedding excluded), alternating the backends:

- search: services.search.score_chunks + group_notes inside one snapshot, as the `search` verb;
- top-k: the dense candidates alone (``store.top_k``, k = search.candidates);
- lexical: the BM25 candidates alone (``store.lexical``), and the same with bm25_top's pruning off
  (every row holding a query term scored: the baseline of the pruning);
- recall@10 of PostgreSQL's top-k (HNSW) against the exact ranking (numpy over the same vectors).

The server: ``--dsn`` (a database where the pgvector extension exists), else a cluster started
like the tests' (tests/pg_server.py; PostgreSQL 15 and pgvector must be installed) with SETTINGS:
a throw-away one, or with ``--keep DIR`` one kept in DIR with its filled store, so a second run
with the same DIR and --chunks skips the fill and the HNSW build (their times come from the first).

Usage: .venv/bin/python bench/pg_search.py [--quick] [--chunks N] [--queries N] [--dsn DSN | --keep DIR]
       [--no-sqlite] [--settings "-c name=value ..."] [--prewarm] [--timeline] [--cpu] [--statements]
       [--ef-per-result 2,4,5]

``--statements`` (the cluster started with ``-c shared_preload_libraries=pg_stat_statements`` in
``--settings``) runs the searches once more with every read on the search's own thread, so each
statement's execution time is the server CPU it costs, and prints them per search, largest first.

``--cpu`` runs the searches once back to back and divides the CPU time spent by this process and by
the cluster's processes (a local cluster: ``/proc``) by the searches: what one search costs on each
side, beside its wall time (the machine's cores bound how far the two overlap).

``--timeline`` times every statement of the PostgreSQL searches (a wrapper around the store's one
statement runner), by the thread that ran it: what sits on the search's own thread is its critical
path; the chunk-level BM25 runs on a worker beside it past services/finding/beside.py's threshold.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from _common import REPO, machine, median, pct, save, table, temp_home, verdict
from search_latency import PER_NOTE, Corpus, fill_store, timed

BAR_MS = 30.0  # PostgreSQL search p50 at 1,000,000 chunks (issue 27)
# the started cluster's memory (the defaults, 128 MB / 64 MB, hold neither a 1M-chunk HNSW graph
# while it is built nor its pages while it is searched)
SETTINGS = "-c shared_buffers=2GB -c maintenance_work_mem=4GB"


def server(dsn: str | None, keep: Path | None, settings: str = SETTINGS) -> tuple[str, Any]:
    if dsn is not None:
        return dsn, None
    sys.path.insert(0, str(REPO / "tests"))
    import pg_server

    reason = pg_server.missing()
    if reason:
        sys.exit(f"error: {reason}")
    started = pg_server.start(None if keep is None else keep / "data", settings)
    return started.dsn, started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10,000 chunks, 50 queries")
    ap.add_argument("--chunks", type=int, default=None, help="chunks in each store (100,000)")
    ap.add_argument("--queries", type=int, default=None, help="timed queries (200)")
    ap.add_argument("--dsn", default=None, help="an existing database (default: a throw-away cluster)")
    ap.add_argument(
        "--keep", type=Path, default=None, help="keep the cluster and its store in DIR; reuse them"
    )
    ap.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only (no ratio)")
    ap.add_argument("--settings", default=SETTINGS, help=f"the started cluster's options ({SETTINGS})")
    ap.add_argument(
        "--prewarm",
        action="store_true",
        help="load what searches read (indexes, chunk and note rows) into shared buffers first (pg_prewarm)",
    )
    ap.add_argument(
        "--timeline",
        action="store_true",
        help="also each search statement's time by thread (the search's own or the lexical worker's)",
    )
    ap.add_argument(
        "--cpu",
        action="store_true",
        help="also the CPU one search costs this process and the local cluster's processes",
    )
    ap.add_argument(
        "--statements",
        action="store_true",
        help="also each statement's server time per search, run serially (needs pg_stat_statements loaded)",
    )
    ap.add_argument(
        "--ef-per-result",
        default="",
        help="also recall and top-k time at these HNSW beams per result (2,4,5)",
    )
    args = ap.parse_args()
    if args.keep is not None and args.dsn is not None:
        sys.exit("error: --keep starts its own cluster; not with --dsn")
    n_chunks = args.chunks or (10_000 if args.quick else 100_000)
    n_queries = args.queries or (50 if args.quick else 200)

    tmp = temp_home("pg-search")
    if args.keep is not None:
        args.keep = args.keep.resolve()
        args.keep.mkdir(parents=True, exist_ok=True)
    dsn, started = server(args.dsn, args.keep, args.settings)
    try:
        if args.prewarm:
            prewarm(dsn)
        run(args, n_chunks, n_queries, Path(tmp.name), dsn)
    finally:
        if started is not None:
            import pg_server

            pg_server.stop(started, keep=args.keep is not None)


def run(args: argparse.Namespace, n_chunks: int, n_queries: int, tmp: Path, dsn: str) -> None:
    from vaultlens.config.settings import SearchSettings
    from vaultlens.index import bm25_top
    from vaultlens.index.lexical import query_terms
    from vaultlens.index.postgres import PostgresBackend
    from vaultlens.index.sqlite.store import SQLiteStore
    from vaultlens.services.finding.search import NOTE_CANDIDATES, group_notes, score_chunks

    search = SearchSettings()
    limit, sections, k = search.limit, search.sections, search.candidates
    stores: dict[str, Any] = {}
    build: dict[str, dict[str, float]] = {}
    backends = ["postgres"] if args.no_sqlite else ["postgres", "sqlite"]
    vault_id = "bench-kept" if args.keep else f"bench-{time.time_ns()}"
    kept = None if args.keep is None else args.keep / f"build-{n_chunks}.json"
    for name in backends:
        corpus = Corpus(n_chunks)  # the same seed: the same notes in both stores
        print(
            f"building a {name} store of {n_chunks:,} chunks ({n_chunks // PER_NOTE:,} notes) ...", flush=True
        )
        if name == "sqlite":
            store = SQLiteStore(tmp / "sqlite")
            build[name] = fill_store(store, corpus)
            build[name]["matrix_cache_s"] = timed(store.matrix)[0] / 1000
        else:
            location = (args.keep or tmp) / "pg"
            if kept is not None and kept.is_file():  # filled by an earlier run
                build[name] = json.loads(kept.read_text(encoding="utf-8"))
            else:
                loader = PostgresBackend(dsn, vault_id, exact_below=10**12).open(location)
                build[name] = fill_store(loader, corpus)
                build[name]["hnsw_build_s"] = timed(loader.ensure_ann)[0] / 1000
                loader.close()
                if kept is not None:
                    kept.write_text(json.dumps(build[name]), encoding="utf-8")
            # as a reader opens it, with search.ann_threshold below the size: top-k from HNSW
            store = PostgresBackend(dsn, vault_id, exact_below=0).open(location, create=False)
            build[name]["size_mb"] = store.size_bytes() / 1e6
        print("  " + ", ".join(f"{key} {v:.1f}" for key, v in build[name].items()), flush=True)
        stores[name] = store

    source = Corpus(n_chunks)  # the stores' words and clusters; its own draws of them
    queries = [source.query() for _ in range(n_queries)]
    keys_exact, vecs = stores["sqlite" if "sqlite" in stores else "postgres"].matrix()
    mem = np.asarray(vecs, dtype=np.float32)

    def full(store: Any, text: str, q: np.ndarray) -> Any:
        with store.snapshot():
            return group_notes(store, score_chunks(store, q, text, search, None, limit), limit, sections)

    if args.timeline:
        statements = timeline(stores["postgres"], full, queries)
    if args.cpu:
        cpu = cpu_per_search(stores["postgres"], full, queries)
    if args.statements:
        serial = statement_costs(stores["postgres"], full, queries, dsn)
    parts = ["search", "top_k", "lexical", "lexical_unpruned"]
    times: dict[str, dict[str, list[float]]] = {n: {part: [] for part in parts} for n in stores}
    recalls: list[float] = []
    for text, q in queries[:3]:  # warm-up: caches, pages, connections
        for store in stores.values():
            full(store, text, q)
    for i, (text, q) in enumerate(queries):
        order = list(stores) if i % 2 else list(reversed(stores))  # alternate: drift hits both alike
        for name in order:
            store = stores[name]
            times[name]["search"].append(timed(full, store, text, q)[0])
            ms, (keys, _) = timed(store.top_k, q, k)
            times[name]["top_k"].append(ms)
            times[name]["lexical"].append(timed(store.lexical, query_terms(text), k, NOTE_CANDIDATES)[0])
            bm25_top.PRUNE_FROM_ROWS, pruned_from = 10**12, bm25_top.PRUNE_FROM_ROWS  # every row scored
            times[name]["lexical_unpruned"].append(
                timed(store.lexical, query_terms(text), k, NOTE_CANDIDATES)[0]
            )
            bm25_top.PRUNE_FROM_ROWS = pruned_from
            if name == "postgres":
                exact = keys_exact[np.argsort(-(mem @ q))[:10]]
                got = keys[np.argsort(-stores[name].scores(q, keys))[:10]]
                recalls.append(len(set(exact.tolist()) & set(got.tolist())) / 10)
    rows = [("backend / part", "p50 ms", "p95 ms", "ratio p50 vs sqlite")]
    result: dict[str, Any] = {"chunks": n_chunks, "queries": n_queries, "build": build, "machine": machine()}
    for name in stores:
        for part, values in times[name].items():
            base = times.get("sqlite", {}).get(part)
            ratio = f"{median(values) / median(base):.2f}" if base else "-"
            rows.append((f"{name} {part}", f"{median(values):.2f}", f"{pct(values, 0.95):.2f}", ratio))
            result[f"{name}_{part}_p50_ms"] = round(median(values), 3)
            result[f"{name}_{part}_p95_ms"] = round(pct(values, 0.95), 3)
    result["postgres_recall_at_10"] = round(float(np.mean(recalls)), 4)
    print(table(rows))
    p50 = result["postgres_search_p50_ms"]
    print(f"\nPostgreSQL recall@10 of top-k vs exact: {result['postgres_recall_at_10']:.3f}")
    print(f"{n_chunks:,} chunks: PostgreSQL search p50 {p50:.2f} ms; bar < {BAR_MS:.0f} ms at 1M -> "
          f"{verdict(p50 < BAR_MS)}")  # fmt: skip
    if args.timeline:
        result["timeline"] = statements
    if args.cpu:
        result["cpu_per_search_ms"] = cpu
    if args.statements:
        result["statements_serial"] = serial
    if args.ef_per_result:
        result["ef_sweep"] = ef_sweep(stores["postgres"], queries, keys_exact, mem, k, args.ef_per_result)
    for store in stores.values():
        store.close()
    print(f"result: {save('pg_search', result)}")


def timeline(store: Any, full: Any, queries: list[tuple[str, np.ndarray]]) -> dict[str, Any]:
    """Each statement's p50 ms and count per search, by thread and by what it reads, over ``queries``
    (searched once each, before the timed passes); and per search the milliseconds spent in statements
    on the search's own thread and on workers."""
    seen: list[tuple[str, str, float]] = []  # (thread, statement, ms)
    real = type(store)._rows

    def timed_rows(self: Any, sql: str, params: Any = None, **kw: Any) -> Any:
        t = time.perf_counter()
        try:
            return real(self, sql, params, **kw)
        finally:
            name = "search" if threading.current_thread() is threading.main_thread() else "worker"
            tables = "+".join(dict.fromkeys(re.findall(r"(?:FROM|JOIN)\s+(\w+)", sql)))
            head = " ".join(sql.split()[:3])[:32] + (" (HNSW)" if "<=>" in sql else "")
            seen.append((name, f"{head} .. {tables}"[:80], (time.perf_counter() - t) * 1000))

    type(store)._rows = timed_rows
    per_search: dict[str, list[float]] = defaultdict(list)
    try:
        for text, q in queries:
            before = len(seen)
            started = time.perf_counter()
            full(store, text, q)
            per_search["whole"].append((time.perf_counter() - started) * 1000)
            for thread in ("search", "worker"):
                per_search[thread].append(sum(ms for t, _, ms in seen[before:] if t == thread))
    finally:
        type(store)._rows = real
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for thread, what, ms in seen:
        groups[(thread, what)].append(ms)
    rows = [("thread", "statement (reads)", "per search", "p50 ms", "sum ms per search")]
    out: dict[str, Any] = {k: round(median(v), 2) for k, v in per_search.items()}
    for (thread, what), values in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
        rows.append((thread, what, f"{len(values) / len(queries):.1f}", f"{median(values):.2f}",
                     f"{sum(values) / len(queries):.2f}"))  # fmt: skip
        out[f"{thread}: {what}"] = round(sum(values) / len(queries), 2)
    print(table(rows))
    print(
        "per search, p50 ms: " + ", ".join(f"{k} {median(v):.1f}" for k, v in per_search.items()), flush=True
    )
    return out


def server_cpu_s() -> float:
    """CPU seconds (user + system) of every process named postgres on this machine, from /proc."""
    import os

    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone meanwhile
            continue
        if text[text.index("(") + 1 : text.rindex(")")].startswith("postgres"):
            fields = text[text.rindex(")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def cpu_per_search(store: Any, full: Any, queries: list[tuple[str, np.ndarray]]) -> dict[str, float]:
    """The searches once, back to back (after a warm-up of three): wall p50 and the CPU each search
    cost this process (all its threads) and the cluster's processes."""
    for text, q in queries[:3]:
        full(store, text, q)
    walls = []
    client, server = time.process_time(), server_cpu_s()
    for text, q in queries:
        walls.append(timed(full, store, text, q)[0])
    n = len(queries)
    out = {
        "wall_p50": round(median(walls), 2),
        "client": round((time.process_time() - client) * 1000 / n, 2),
        "server": round((server_cpu_s() - server) * 1000 / n, 2),
    }
    print(f"per search: wall p50 {out['wall_p50']} ms; CPU: this process {out['client']} ms, "
          f"the cluster {out['server']} ms", flush=True)  # fmt: skip
    return out


def statement_costs(
    store: Any, full: Any, queries: list[tuple[str, np.ndarray]], dsn: str
) -> list[dict[str, Any]]:
    """The searches run serially (no part beside: services/finding/beside.py's threshold out of reach), with
    pg_stat_statements reset first: each statement's calls and execution ms per search, largest first."""
    import psycopg

    from vaultlens.services.finding import beside

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        beside.BESIDE_FROM_CHUNKS, threshold = 10**15, beside.BESIDE_FROM_CHUNKS
        try:
            for text, q in queries[:3]:
                full(store, text, q)
            conn.execute("SELECT pg_stat_statements_reset()")
            for text, q in queries:
                full(store, text, q)
        finally:
            beside.BESIDE_FROM_CHUNKS = threshold
        found = conn.execute(
            "SELECT calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 90)"
            " FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat_statements%%'"
            " ORDER BY total_exec_time DESC LIMIT 12"
        ).fetchall()
    n = len(queries)
    out = [{"calls_per_search": c / n, "ms_per_search": t / n, "statement": sql} for c, t, sql in found]
    rows = [("per search", "ms", "statement")]
    rows += [(f"{o['calls_per_search']:.2f}", f"{o['ms_per_search']:.2f}", o["statement"]) for o in out]
    print(table(rows))
    return out


def prewarm(dsn: str) -> None:
    """What a search reads, of every vault, loaded into shared buffers: the chunk and posting tables'
    indexes, and the heaps of the chunks, notes and term counts (a long-running server's state: a fresh
    cluster otherwise reads the HNSW graph, the postings and the rows each search returns from the OS a
    page at a time during the timed queries). Posting tables are read through their indexes alone."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        relations = conn.execute(
            "SELECT quote_ident(schemaname) || '.' || quote_ident(indexname) FROM pg_indexes"
            " WHERE tablename IN ('chunks', 'chunks_postings', 'files_postings')"
            " UNION ALL SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables"
            " WHERE tablename IN ('chunks', 'files', 'term_stats')"
        ).fetchall()
        for (name,) in relations:
            t = time.perf_counter()
            (pages,) = conn.execute("SELECT pg_prewarm(%s::regclass)", (name,)).fetchone() or (0,)
            print(f"  prewarmed {name}: {pages:,} pages in {time.perf_counter() - t:.1f} s", flush=True)


def ef_sweep(
    store: Any, queries: list[Any], keys_exact: Any, mem: Any, k: int, per_result: str
) -> list[dict[str, float]]:
    """recall@10 (the top-k re-scored, as searches use it) and top-k p50 / p95 with HNSW's candidate
    list at each of ``per_result`` ("2,4,5") times k, each setting twice in turn (the first pass of
    each warms its pages)."""
    from vaultlens.index.postgres import vectors as pg_vectors

    truths = [keys_exact[np.argsort(-(mem @ q))[:10]] for _, q in queries]
    out = []
    default = pg_vectors.EF_PER_RESULT
    try:
        for per in [int(x) for x in per_result.split(",")] * 2:
            pg_vectors.EF_PER_RESULT = per
            recalls, ms = [], []
            for (_, q), exact in zip(queries, truths, strict=True):
                t, (keys, _) = timed(store.top_k, q, k)
                ms.append(t)
                got = keys[np.argsort(-store.scores(q, keys))[:10]]
                recalls.append(len(set(exact.tolist()) & set(got.tolist())) / 10)
            row = {"ef_per_result": per, "recall_at_10": round(float(np.mean(recalls)), 4),
                   "top_k_p50_ms": round(median(ms), 2), "top_k_p95_ms": round(pct(ms, 0.95), 2)}  # fmt: skip
            print(row, flush=True)
            out.append(row)
    finally:
        pg_vectors.EF_PER_RESULT = default
    return out


if __name__ == "__main__":
    main()
