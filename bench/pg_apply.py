"""The PostgreSQL store's write path: `apply` of a synthetic corpus, timed, in one cluster.

Fills search_latency.py's corpus (seeded, 10 chunks per note, 1,000 notes per `apply`) into a new
store per round, through the store's own `apply`, and reports the seconds spent in `apply` (corpus
generation excluded). With ``--triggers-off`` each round fills a second store with the tables' user
triggers disabled (the document-frequency bookkeeping off), alternating which goes first: the
triggers' cost, same code, same run. To compare two versions of the store, run this script with each
one's ``src`` on PYTHONPATH against the same ``--dsn``, alternating.

Usage: .venv/bin/python bench/pg_apply.py [--chunks N] [--rounds N] [--dsn DSN] [--triggers-off]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from _common import machine, median, save, temp_home
from pg_search import server
from search_latency import Corpus, fill_store


def fill(dsn: str, location: Path, n_chunks: int, triggers: bool) -> float:
    """Seconds in `apply` for ``n_chunks`` chunks into a new store at ``location``."""
    from vaultlens.index.postgres import PostgresBackend

    store = PostgresBackend(dsn, f"apply-{time.time_ns()}", exact_below=10**12).open(location)
    try:
        if not triggers:
            with store.transaction() as db:  # type: ignore[attr-defined]
                for table in ("chunks", "files"):
                    db.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        return fill_store(store, Corpus(n_chunks))["apply_s"]
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=20_000, help="chunks per store (20,000)")
    ap.add_argument("--rounds", type=int, default=2, help="stores filled per variant (2)")
    ap.add_argument("--dsn", default=None, help="an existing database (default: a throw-away cluster)")
    ap.add_argument("--triggers-off", action="store_true", help="also fill with user triggers disabled")
    args = ap.parse_args()
    tmp = temp_home("pg-apply")
    dsn, started = server(args.dsn, None)
    variants = [True, False] if args.triggers_off else [True]
    times: dict[bool, list[float]] = {v: [] for v in variants}
    try:
        for i in range(args.rounds):
            for triggers in variants if i % 2 == 0 else list(reversed(variants)):
                s = fill(dsn, Path(tmp.name) / f"s{i}-{int(triggers)}", args.chunks, triggers)
                times[triggers].append(s)
                print(f"round {i}: triggers {'on' if triggers else 'off'}: apply {s:.1f} s", flush=True)
    finally:
        if started is not None:
            import pg_server

            pg_server.stop(started)
    result: dict[str, Any] = {"chunks": args.chunks, "rounds": args.rounds, "machine": machine()}
    for triggers, values in times.items():
        name = "apply_s" if triggers else "apply_triggers_off_s"
        result[name] = [round(v, 2) for v in values]
        print(f"{name}: median {median(values):.2f} s of {values}")
    print(f"result: {save('pg_apply', result)}")


if __name__ == "__main__":
    main()
