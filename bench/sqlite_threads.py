"""FTS5 queries on one thread and on two at once, with SQLite's memory statistics on (Python's default)
and off (index/sqlite/threads.py): the statistics' process-wide mutex makes two threads slower
together than one after the other.

Each mode runs in its own interpreter (the switch is once per process), on a store kept by
``bench/ann_scale.py --keep DIR`` (its chunk texts are model-shaped: the queries are the lexical
stage's plain chunk query for fresh query texts). Prints ms per query for 1 and 2 threads in each mode,
interleaved, and the 2-thread / 1-thread ratio (1.0 = no gain from the second core, 0.5 = all of it).

Usage: .venv/bin/python bench/sqlite_threads.py DIR [--queries 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

SQL = (
    "SELECT rowid, -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?"
    " ORDER BY bm25(chunks_fts) LIMIT 200"
)


def child(db: Path, mode: str, queries: int) -> None:
    import sqlite3

    from vaultlens.index.sqlite import threads

    if mode == "off" and not threads.free_threads():
        raise SystemExit("the statistics could not be turned off here")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ann_parts import fresh_queries
    from ann_scale import ModelShapedCorpus
    from vaultlens.index.lexical import query_terms

    corpus = ModelShapedCorpus(1_000_000)
    texts = [" OR ".join(f'"{w}"' for w in query_terms(t)) for t, _ in fresh_queries(corpus, queries, 21)]

    def work() -> None:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
        for q in texts:
            conn.execute(SQL, (q,)).fetchall()
        conn.close()

    work()  # warm the file cache
    out = {}
    for n in (1, 2):
        t = time.perf_counter()
        pool = [threading.Thread(target=work) for _ in range(n)]
        for th in pool:
            th.start()
        for th in pool:
            th.join()
        out[n] = (time.perf_counter() - t) * 1000 / (n * len(texts))
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("keep", type=Path)
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", choices=["on", "off"])
    args = ap.parse_args()
    db = args.keep / "index.sqlite"
    if args.child:
        child(db, args.child, args.queries)
        return
    for r in range(args.rounds):
        for mode in ("on", "off"):
            cmd = [sys.executable, __file__, str(args.keep), "--queries", str(args.queries), "--child", mode]
            ms = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            print(
                f"round {r} statistics {mode:3}: 1 thread {ms['1']:.1f} ms/query, 2 threads {ms['2']:.1f}"
                f" ms/query (2 / 1: {ms['2'] / ms['1']:.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
