"""`duplicates` past the ANN threshold at the sizes given (``--notes 1000000``: the bar of 10 minutes
and 4 GB), with per-note slopes between the last two sizes.

The index is bench/duplicates_scale.py's (vectors shaped like the bundled model's, 1-3 chunks a
note, 1% planted near-copies at cosine 0.97-0.997, written through ``SQLiteStore.apply``). Each
measurement runs in its own process (peak RSS = VmHWM):

* ``tier``: the writer's ``refresh_ann`` (the ANN tier built from SQLite and saved) and ``ann_tier()``;
* ``ann``: ``duplicates(store, --threshold, ...)`` with ``search.ann_threshold`` = 1, so its candidate pairs
  come from ``Store.neighbours`` (the tier is loaded from its file, as in every run after the first);
* ``partitions``: the same call with the default ANN threshold (k-means partitions, today's path), at
  the same size, the baseline of the same run.

Recall is of the planted pairs. A mode named twice runs twice, the second time on what the first
kept (the vector cache file, the text scan). Generating a 1,000,000-note index took 655 s (2,001,015
chunks, 10 GB; 2026-12-07).

Usage: .venv/bin/python bench/dup_scale.py [--notes 100000 200000] [--modes ...] [--keep DIR] [--threshold 0.95]
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
from duplicates_scale import MIN_CHARS, _peak_mb, generate


def measure(mode: str, directory: Path, threshold: float = 0.95) -> dict[str, Any]:
    from vaultlens.index.progress import NoProgress
    from vaultlens.index.sqlite.store import SQLiteStore
    from vaultlens.services.finding.duplicates import report as dups

    ann_threshold = 10**12 if mode == "partitions" else 1
    t0 = time.perf_counter()
    store = SQLiteStore(directory, create=False, ann_threshold=ann_threshold)
    if mode == "tier":
        store.refresh_ann(NoProgress())  # the writer's build (an index run does it at its end)
        tier = store.ann_tier()
        assert tier is not None
        return {
            "seconds": round(time.perf_counter() - t0, 1),
            "peak_rss_mb": round(_peak_mb(), 1),
            "chunks": len(tier),
        }
    report = dups.duplicates(store, threshold, 10**6, MIN_CHARS)
    seconds = time.perf_counter() - t0
    planted = {frozenset(p) for p in json.loads((directory / "planted.json").read_text())["planted"]}
    found = {frozenset((p.a, p.b)) for p in report.pairs}
    return {
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(_peak_mb(), 1),
        "recall": round(len(planted & found) / max(1, len(planted)), 4),
        "extra_pairs": len(found - planted),
        "pairs": len(report.pairs),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, nargs="+", default=[100_000, 200_000])
    ap.add_argument("--keep", type=Path, default=Path("/tmp/vaultlens-dup-scale"))
    ap.add_argument("--modes", nargs="+", default=["tier", "ann", "partitions"])
    ap.add_argument(
        "--threshold", type=float, default=0.95, help="duplicates' threshold (the setting's default: 0.93)"
    )
    ap.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], Path(args.measure[1]), args.threshold)))
        return
    rows = []
    for n in args.notes:
        directory = args.keep / f"index-{n}"
        if not (directory / "planted.json").exists():
            t = time.perf_counter()
            generate(directory, n)
            print(f"generated {n} notes in {time.perf_counter() - t:.0f}s", flush=True)
        row: dict[str, Any] = {"notes": n}
        for mode in args.modes:
            out = subprocess.run(
                [sys.executable, __file__, "--measure", mode, str(directory), "--threshold", str(args.threshold)],
                capture_output=True, text=True, check=True, env=os.environ,
            )  # fmt: skip
            name = mode if mode not in row else f"{mode} again"  # a repeat: the kept caches' run
            row[name] = json.loads(out.stdout.strip().splitlines()[-1])
            row[name]["load"] = round(os.getloadavg()[0], 2)
            print(n, name, row[name], flush=True)
        rows.append(row)
    if len(rows) >= 2 and "ann" in rows[0]:
        (a, b) = rows[-2], rows[-1]
        slope_s = (b["ann"]["seconds"] - a["ann"]["seconds"]) / (b["notes"] - a["notes"])
        slope_mb = (b["ann"]["peak_rss_mb"] - a["ann"]["peak_rss_mb"]) / (b["notes"] - a["notes"])
        extrapolated = {
            "ann_seconds_1m": round(b["ann"]["seconds"] + slope_s * (1_000_000 - b["notes"]), 0),
            "ann_peak_mb_1m": round(b["ann"]["peak_rss_mb"] + slope_mb * (1_000_000 - b["notes"]), 0),
        }
        if "tier" in b and "tier" in a:
            per = b["tier"]["seconds"] / b["notes"]
            extrapolated["tier_build_seconds_1m_linear"] = round(per * 1_000_000, 0)
        print("extrapolated (linear in notes):", extrapolated)
        rows.append({"extrapolated": extrapolated})
    save("dup_scale", {"machine": machine(), "rows": rows})


if __name__ == "__main__":
    main()
