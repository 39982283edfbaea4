"""The PostgreSQL store's write path: `apply` of a synthetic corpus, timed, versions alternating.

Fills search_latency.py's corpus (seeded, 10 chunks per note, 1,000 notes per `apply`) into a new
store per round, through the store's own `apply`, and reports the seconds spent in `apply` (corpus
generation excluded). Each ``--src DIR`` is a version of vaultlens's ``src`` (default: this
checkout's); every round fills one store with each version, in a child process with that ``src`` on
its path, alternating which goes first, all in one cluster: versions compared in the same run.

Usage: .venv/bin/python bench/pg_apply.py [--chunks N] [--rounds N] [--dsn DSN] [--src DIR ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import REPO, machine, median, save, temp_home
from pg_search import server


def fill(dsn: str, location: Path, n_chunks: int) -> float:
    """Seconds in `apply` for ``n_chunks`` chunks into a new store at ``location`` (this process's vaultlens)."""
    from search_latency import Corpus, fill_store
    from vaultlens.index.postgres import PostgresBackend

    store = PostgresBackend(dsn, f"apply-{time.time_ns()}", exact_below=10**12).open(location)
    try:
        return fill_store(store, Corpus(n_chunks))["apply_s"]
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=20_000, help="chunks per store (20,000)")
    ap.add_argument("--rounds", type=int, default=2, help="stores filled per version (2)")
    ap.add_argument("--dsn", default=None, help="an existing database (default: a throw-away cluster)")
    ap.add_argument("--src", type=Path, action="append", help="a vaultlens src dir (repeat to compare)")
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # child: fill one store there, print s
    args = ap.parse_args()
    if args.one is not None:
        print(fill(args.dsn, args.one, args.chunks))
        return
    srcs = [p.resolve() for p in args.src or [REPO / "src"]]
    for src in srcs:
        if not (src / "vaultlens").is_dir():
            sys.exit(f"error: {src} holds no vaultlens package")
    tmp = temp_home("pg-apply")
    dsn, started = server(args.dsn, None)
    times: dict[str, list[float]] = {str(s): [] for s in srcs}
    try:
        for i in range(args.rounds):
            for j, src in enumerate(srcs if i % 2 == 0 else list(reversed(srcs))):
                env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{REPO / 'bench'}"}
                out = subprocess.run(
                    [sys.executable, __file__, "--one", str(Path(tmp.name) / f"s{i}-{j}"), "--dsn", dsn,
                     "--chunks", str(args.chunks)], env=env, check=True, capture_output=True, text=True,
                )  # fmt: skip
                seconds = float(out.stdout.split()[-1])
                times[str(src)].append(seconds)
                print(f"round {i}: {src}: apply {seconds:.1f} s", flush=True)
    finally:
        if started is not None:
            import pg_server

            pg_server.stop(started)
    result: dict[str, Any] = {"chunks": args.chunks, "rounds": args.rounds, "machine": machine()}
    for src, values in times.items():
        result[f"apply_s {src}"] = [round(v, 2) for v in values]
        print(f"{src}: apply median {median(values):.2f} s of {[round(v, 1) for v in values]}")
    print(f"result: {save('pg_apply', result)}")


if __name__ == "__main__":
    main()
