"""Where a search past the ANN threshold spends its time, on a store kept by bench/ann_scale.py.

Modes (each in this process, on ``--keep DIR`` of ``ann_scale.py --chunks N``, its tier file present):

* ``recall``: recall@10 against the exact scan and ``top_k`` p50 / p95 for several (candidates re-scored,
  ef_search) settings, the same 200 queries as ann_scale.py for every row (``ANN_CANDIDATES`` and the
  tier's ``expansion_search`` set in turn);
* ``stages``: whole searches (``score_chunks`` + ``group_notes`` in one snapshot, the query embedding
  excluded) on fresh queries, each store call timed: p50 per part;
* ``profile``: the same searches twice, the second pass under cProfile (cumulative and own time);
* ``cache``: the same searches with the store's vector cache off (``VECTOR_CACHE`` = 0) and on, the arms
  alternating per query: p50 / p95 of each, their ratio, and whether both return the same hits;
* ``vecfile``: the same searches with the vectors read from SQLite (no vector file taken) and from the
  vector cache file (index/vector_file.py), the arms alternating per query, after one warm-up pass of
  both: p50 / p95 of the whole search and of ``vectors_of`` in each, and whether the hits are the same;
* ``lexsql``: the lexical stage's SQL statements timed one by one (warm: each query run once before),
  p50 per statement shape per query and the share of the stage;
* ``timeline``: the same searches (warm: each run once before) with the start and end of each stage marked
  from the search's start, the worker's chunk rows included: p50 of each mark, in order (the critical
  path of a search with part of it beside, services/finding/beside.py);
* ``beside``: the same searches with the lexical stage on the search's thread and on a worker beside the
  dense stage (services/finding/beside.py), the arms alternating per query after a warm-up pass of both.

Usage: .venv/bin/python bench/ann_parts.py DIR MODE [--chunks 1000000] [--queries 40] [--seed 7]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import pct
from _vectors import recall
from ann_scale import ModelShapedCorpus

STORE_CALLS = ["top_k", "lexical", "scores", "vectors_of", "_doc_freqs", "chunk_paths", "note_chunk_keys"]


def load() -> float:
    return round(os.getloadavg()[0], 2)


def fresh_queries(corpus: ModelShapedCorpus, n: int, seed: int) -> Iterator[tuple[str, np.ndarray]]:
    """Query texts and vectors from the corpus's clusters, not the ones ann_scale.py times."""
    corpus.rng = np.random.default_rng(seed)
    for i in range(n):
        text, _ = corpus.query()
        yield f"{text} {i}", corpus.shaped.queries(1, seed=seed * 1000 + i)[0]


def search(store: Any, text: str, q: np.ndarray) -> list[Any]:
    from vaultlens.config.settings import SearchSettings
    from vaultlens.services.finding import search as se

    with store.snapshot():
        return se.group_notes(store, se.score_chunks(store, q, text, SearchSettings(), None, exact=10), 10, 3)


def timed(store: Any, totals: dict[str, float]) -> None:
    """Wrap each of the store's STORE_CALLS so its wall time adds to ``totals`` (nested calls count in both)."""

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                totals[name] += (time.perf_counter() - t) * 1000

        return call

    for name in STORE_CALLS:
        setattr(store, name, wrap(name, getattr(store, name)))


def alternating(
    store: Any,
    queries: list[tuple[str, np.ndarray]],
    arms: dict[str, Callable[[], None]],
    totals: dict[str, float] | None = None,
) -> tuple[dict[str, list[float]], dict[str, list[float]], int]:
    """Whole searches under two arms (each set up by its call), alternating per query after a warm-up
    pass of both: (ms per arm, ``vectors_of`` ms per arm from ``totals``, queries with the same hits)."""
    first, second = arms
    ms: dict[str, list[float]] = {arm: [] for arm in arms}
    vec_ms: dict[str, list[float]] = {arm: [] for arm in arms}
    same = 0
    for warm in (True, False):
        for i, (text, q) in enumerate(queries):
            hits = []
            for arm in [first, second] if i % 2 == 0 else [second, first]:
                arms[arm]()
                store._vec_cache.clear()
                if totals is not None:
                    totals.clear()
                t = time.perf_counter()
                hits.append(search(store, text, q))
                if not warm:
                    ms[arm].append((time.perf_counter() - t) * 1000)
                    vec_ms[arm].append(totals["vectors_of"] if totals is not None else 0.0)
            same += not warm and hits[0] == hits[1]
    return ms, vec_ms, same


TIMELINE_CALLS = ["top_k", "chunk_paths", "lexical_notes", "lexical_chunks", "note_chunk_keys"]


def timeline(store: Any, queries: list[tuple[str, np.ndarray]]) -> None:
    """p50 of each stage's start and end (ms from the search's start; a stage called twice: its first
    start and its last end), on whichever thread it runs."""
    from vaultlens.services.finding import search as se

    start = [0.0]
    marks: dict[str, float] = {}

    def marked(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kw: Any) -> Any:
            marks.setdefault(f"{name} start", (time.perf_counter() - start[0]) * 1000)
            try:
                return fn(*args, **kw)
            finally:
                marks[f"{name} end"] = (time.perf_counter() - start[0]) * 1000

        return call

    for name in TIMELINE_CALLS:
        setattr(store, name, marked(name, getattr(store, name)))
    se.chunk_penalties = marked("penalties", se.chunk_penalties)  # type: ignore[assignment]
    se.score_chunks = marked("score_chunks", se.score_chunks)  # type: ignore[assignment]
    for text, q in queries:
        search(store, text, q)
    rows = []
    for text, q in queries:
        marks.clear()
        start[0] = time.perf_counter()
        search(store, text, q)
        marks["search end"] = (time.perf_counter() - start[0]) * 1000
        rows.append(dict(marks))
    names = {k for r in rows for k in r}
    for k in sorted(names, key=lambda k: pct([r[k] for r in rows if k in r], 0.5)):
        print(f"{k:22s} p50 {pct([r[k] for r in rows if k in r], 0.5):6.2f} ms")
    print("load", load())


def vecfile(store: Any, queries: list[tuple[str, np.ndarray]]) -> None:
    """Whole searches with the vectors from SQLite ("sqlite") and from the vector file ("file")."""
    with store.snapshot() as gen:
        assert store._vector_file(gen) is not None, "no usable vector file"
    reads = store._vector_file
    totals: dict[str, float] = defaultdict(float)
    timed(store, totals)

    def reads_from(arm: str) -> Callable[[], None]:
        return lambda: setattr(store, "_vector_file", (lambda gen: None) if arm == "sqlite" else reads)

    ms, vec_ms, same = alternating(store, queries, {a: reads_from(a) for a in ("sqlite", "file")}, totals)
    summary = {
        arm: {
            "search p50/p95": (round(pct(v, 0.5), 1), round(pct(v, 0.95), 1)),
            "vectors_of p50": round(pct(vec_ms[arm], 0.5), 2),
        }
        for arm, v in ms.items()
    }
    ratio = pct(ms["file"], 0.5) / pct(ms["sqlite"], 0.5)
    print(f"{summary}, file / sqlite p50 {ratio:.2f}, same hits {same}/{len(queries)}, load {load()}")


def beside(store: Any, queries: list[tuple[str, np.ndarray]]) -> None:
    """Whole searches with the lexical stage on the search's thread ("serial") and on a worker beside
    the dense stage ("beside")."""
    from vaultlens.services.finding import beside as lb

    def from_chunks(n: int) -> Callable[[], None]:
        return lambda: setattr(lb, "BESIDE_FROM_CHUNKS", n)

    ms, _, same = alternating(store, queries, {"serial": from_chunks(10**12), "beside": from_chunks(0)})
    summary = {arm: (round(pct(v, 0.5), 1), round(pct(v, 0.95), 1)) for arm, v in ms.items()}
    ratio = pct(ms["beside"], 0.5) / pct(ms["serial"], 0.5)
    print(
        f"search p50/p95 ms {summary}, beside / serial p50 {ratio:.2f}, same hits {same}/{len(queries)}, load {load()}"
    )


class FetchedRows(list[Any]):
    """Rows already fetched, answering like the cursor they came from."""

    def fetchall(self) -> list[Any]:
        return list(self)

    def fetchone(self) -> Any:
        return self[0] if self else None


class TimedConnection:
    """A connection whose ``execute`` adds its wall time (fetching included) under the statement's shape."""

    def __init__(self, conn: Any, totals: dict[str, float]) -> None:
        self.conn, self.totals = conn, totals

    def execute(self, sql: str, params: Any = ()) -> Any:
        shape = re.sub(r"\?(,\?)+", "...", " ".join(sql.split()))[:110]
        t = time.perf_counter()
        rows = self.conn.execute(sql, params).fetchall()
        self.totals[shape] += (time.perf_counter() - t) * 1000
        return FetchedRows(rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def lexsql(store: Any, queries: list[tuple[str, np.ndarray]]) -> None:
    from vaultlens.index.lexical import query_terms
    from vaultlens.index.sqlite import store as ss
    from vaultlens.services.finding.search import NOTE_CANDIDATES

    plain_db = ss.SQLiteStore.db
    totals: dict[str, float] = defaultdict(float)
    rows: list[dict[str, float]] = []
    ss.SQLiteStore.db = property(lambda self: TimedConnection(plain_db.fget(self), totals))  # type: ignore[assignment,attr-defined]
    try:
        for warm in (True, False):
            for text, _ in queries:
                totals.clear()
                t = time.perf_counter()
                store.lexical(query_terms(text), 200, NOTE_CANDIDATES)
                if not warm:
                    rows.append({"lexical": (time.perf_counter() - t) * 1000, **totals})
    finally:
        ss.SQLiteStore.db = plain_db  # type: ignore[method-assign]
    shapes = sorted({k for r in rows for k in r}, key=lambda k: -sum(r.get(k, 0.0) for r in rows))
    for k in shapes:
        ran = [r[k] for r in rows if k in r]
        print(
            f"{pct([r.get(k, 0.0) for r in rows], 0.5):7.2f} ms p50 ({len(ran)}/{len(rows)} queries, mean when run {np.mean(ran):.2f})  {k}"
        )
    print("load", load())


def main() -> None:
    from vaultlens.index.sqlite import store as ss
    from vaultlens.index.sqlite import vectors as sv

    ap = argparse.ArgumentParser()
    ap.add_argument("keep", type=Path)
    ap.add_argument(
        "mode", choices=["recall", "stages", "profile", "cache", "vecfile", "lexsql", "beside", "timeline"]
    )
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    store = ss.SQLiteStore(args.keep, create=False, ann_threshold=1)
    tier = store.ann_tier()
    assert tier is not None, "no tier file: run bench/ann_scale.py --keep DIR first"
    corpus = ModelShapedCorpus(args.chunks)
    print("load", load(), flush=True)
    if args.mode == "recall":
        exact = ss.SQLiteStore(args.keep, create=False, ann_threshold=10**12)
        queries = corpus.shaped.queries(200)
        truth = []
        for q in queries:
            keys, scores = exact.top_k(q, 10)
            truth.append(keys[np.argsort(-scores)])
        for cand, ef in [(200, 200), (200, 400), (300, 300), (400, 400), (200, 200)]:
            sv.ANN_CANDIDATES, tier.base.expansion_search = cand, ef
            found, ms = [], []
            for q in queries:
                store._vec_cache.clear()
                t = time.perf_counter()
                found.append(store.top_k(q, 10)[0])
                ms.append((time.perf_counter() - t) * 1000)
            print(
                f"candidates {cand} ef {ef}: recall@10 {recall(np.array(found), np.array(truth)):.4f}"
                f" p50 {pct(ms, 0.5):.2f} p95 {pct(ms, 0.95):.2f} ms load {load()}",
                flush=True,
            )
    elif args.mode == "stages":
        totals: dict[str, float] = defaultdict(float)
        timed(store, totals)
        rows = []
        for text, q in fresh_queries(corpus, args.queries, args.seed):
            totals.clear()
            t = time.perf_counter()
            search(store, text, q)
            rows.append({"search": (time.perf_counter() - t) * 1000, **totals})
        print({k: round(pct([r.get(k, 0.0) for r in rows], 0.5), 1) for k in ["search", *STORE_CALLS]})
    elif args.mode == "profile":
        queries = list(fresh_queries(corpus, args.queries, args.seed))
        for text, q in queries:
            search(store, text, q)
        prof = cProfile.Profile()
        prof.enable()
        for text, q in queries:
            search(store, text, q)
        prof.disable()
        stats = pstats.Stats(prof)
        stats.sort_stats("cumulative").print_stats(25)
        stats.sort_stats("tottime").print_stats(12)
    elif args.mode == "vecfile":
        vecfile(store, list(fresh_queries(corpus, args.queries, args.seed)))
    elif args.mode == "beside":
        beside(store, list(fresh_queries(corpus, args.queries, args.seed)))
    elif args.mode == "timeline":
        timeline(store, list(fresh_queries(corpus, args.queries, args.seed)))
    elif args.mode == "lexsql":
        lexsql(store, list(fresh_queries(corpus, args.queries, args.seed)))
    else:
        size, ms, same = sv.VECTOR_CACHE, {"off": [], "on": []}, 0
        for i, (text, q) in enumerate(fresh_queries(corpus, args.queries, args.seed)):
            hits = []
            for arm in ["off", "on"] if i % 2 == 0 else ["on", "off"]:
                sv.VECTOR_CACHE = size if arm == "on" else 0
                store._vec_cache.clear()
                t = time.perf_counter()
                hits.append(search(store, text, q))
                ms[arm].append((time.perf_counter() - t) * 1000)
            same += hits[0] == hits[1]
        summary = {arm: (round(pct(v, 0.5), 1), round(pct(v, 0.95), 1)) for arm, v in ms.items()}
        ratio = pct(ms["on"], 0.5) / pct(ms["off"], 0.5)
        print(
            f"p50 / p95 ms {summary}, on / off p50 {ratio:.2f}, same hits {same}/{args.queries}, load {load()}"
        )


if __name__ == "__main__":
    main()
