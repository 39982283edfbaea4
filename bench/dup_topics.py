"""`duplicates` on a vault of tight topics and no copies: time and peak memory by size.

The index is bench/search_latency.py's corpus (256 topics, each chunk at cosine ~0.6 to its topic's
centre, 10 chunks a note), written into a SQLite store. No two notes are near-copies, but at 1,000,000
chunks many same-topic sections share a k-means partition of the projections and pass its distance
filter; before 222a6ac every such pair was kept in a set (9.1 GB at 300,000 chunks, killed at 20 GB
at 1,000,000). Each measurement runs in its own process (peak RSS = VmHWM), the store kept in DIR.

``--pairs`` times only the candidate pairs (``vector_pairs.partitioned_pairs`` at the section floor
`duplicates` uses, 0.85 by default) on the corpus's vectors held in memory, no store: with the dense
partitions scored as one product (the default) and, with ``--compare``, a pair at a time (the path
before f2d35b5), and whether both give the same pairs.

Usage: .venv/bin/python bench/dup_topics.py [--chunks 300000 ...] [--keep DIR] [--pairs [--compare]]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, save
from duplicates_scale import _peak_mb


def measure(directory: Path) -> dict[str, Any]:
    from vaultlens.config.settings import DiscoverSettings
    from vaultlens.index.sqlite.store import SQLiteStore
    from vaultlens.services.finding.duplicates import report as dups

    s = DiscoverSettings()
    store = SQLiteStore(directory, create=False, ann_threshold=10**12)  # nothing but the scan is built
    t0 = time.perf_counter()
    report = dups.duplicates(store, s.duplicate_threshold, s.duplicate_limit, s.min_chars, settings=s)
    return {
        "seconds": round(time.perf_counter() - t0, 1),
        "peak_rss_mb": round(_peak_mb(), 1),
        "pairs": report.total_pairs,
        "shared_passages": report.total_shared_passages,
    }


def pairs_only(n: int, floor: float, compare: bool) -> dict[str, Any]:
    """Seconds and pairs of ``partitioned_pairs`` on ``n`` of the corpus's vectors, by path."""
    import numpy as np

    from search_latency import Corpus
    from vaultlens.services.finding.duplicates import vector_pairs

    corpus = Corpus(n)
    vecs = np.concatenate([corpus.vectors(s, min(n, s + 50_000)) for s in range(0, n, 50_000)])
    out: dict[str, Any] = {"rows": n, "floor": floor}
    found: dict[str, set[tuple[int, int]]] = {}
    dense = vector_pairs.DENSE_SHARE
    for name, share in [("dense", dense), ("pair_at_a_time", 2.0)][: 2 if compare else 1]:
        vector_pairs.DENSE_SHARE = share  # 2.0: no partition is ever dense
        t0 = time.perf_counter()
        got = found[name] = set()
        for a, b, _ in vector_pairs.partitioned_pairs(vecs, np.arange(n, dtype=np.int64), floor):
            got.update(zip(a.tolist(), b.tolist(), strict=True))
        out[f"{name}_s"], out[f"{name}_pairs"] = round(time.perf_counter() - t0, 1), len(got)
    vector_pairs.DENSE_SHARE = dense
    if compare:
        out["differ"] = len(found["dense"] ^ found["pair_at_a_time"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, nargs="+", default=[300_000])
    ap.add_argument("--keep", type=Path, default=Path("/tmp/vaultlens-dup-topics"))
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--pairs", action="store_true", help="time only the candidate pairs, in memory")
    ap.add_argument("--compare", action="store_true", help="with --pairs: also a pair at a time")
    ap.add_argument("--floor", type=float, default=0.85, help="with --pairs: the section floor")
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure)))
        return
    if args.pairs:
        rows = [pairs_only(n, args.floor, args.compare) for n in args.chunks]
        for row in rows:
            print(row, flush=True)
        save("dup_topics_pairs", {"machine": machine(), "rows": rows})
        return
    from search_latency import Corpus, build_store

    rows = []
    for n in args.chunks:
        directory = args.keep / f"index-{n}"
        if not (directory / "built.json").exists():
            built = build_store(directory, Corpus(n))
            (directory / "built.json").write_text(json.dumps(built))
            print(f"built {n:,} chunks: {built}", flush=True)
        out = subprocess.run(
            [sys.executable, __file__, "--measure", str(directory)],
            capture_output=True, text=True, check=True, env=os.environ,
        )  # fmt: skip
        row = {"chunks": n, **json.loads(out.stdout.strip().splitlines()[-1]), "load": os.getloadavg()[0]}
        print(row, flush=True)
        rows.append(row)
    save("dup_topics", {"machine": machine(), "rows": rows})


if __name__ == "__main__":
    main()
