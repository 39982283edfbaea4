"""usearch vs hnswlib for the embedded store's ANN tier, on synthetic clustered 512-d vectors.

Measured per library and storage type, each in its own subprocess (RSS after building minus
RSS before it: the index alone, not the other library): build time for
``--n`` vectors (2 threads), recall@10 against an exact scan for 200 queries drawn from the same
clusters, p50 / p95 of one single-threaded query, a one-note edit (remove 5 vectors, add 5) and the
saved file's size and load time. Vectors are synthetic (bench/_vectors.py): this measures the
index, not the model.

Usage: .venv/bin/python bench/ann_choice.py [--n 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, pct, save, table
from _vectors import DIMS, Clustered, exact_top, recall

VARIANTS = ["usearch-f32", "usearch-f16", "usearch-i8", "hnswlib-f32"]
M, EF_ADD, EF_SEARCH = 16, 128, 64


def _rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(variant: str, n: int, n_queries: int) -> dict[str, Any]:
    data = Clustered(n)
    vecs = np.concatenate([b for _, b in data.blocks()])
    queries = data.queries(n_queries)
    truth = exact_top(iter([(0, vecs)]), queries, 10)
    keys = np.arange(n, dtype=np.int64)
    base = _rss_mb()
    lib, dtype = variant.split("-")
    t0 = time.perf_counter()
    if lib == "usearch":
        from usearch.index import Index

        index: Any = Index(
            ndim=DIMS,
            metric="ip",
            dtype=dtype,
            connectivity=M,
            expansion_add=EF_ADD,
            expansion_search=EF_SEARCH,
        )
        index.add(keys, vecs, threads=2)

        def search(q: np.ndarray, k: int) -> np.ndarray:
            return np.asarray(index.search(q, k, threads=1).keys)

        def edit(old: np.ndarray, new_keys: np.ndarray, new: np.ndarray) -> None:
            index.remove(old)
            index.add(new_keys, new, threads=1)

        def persist(path: Path) -> float:
            index.save(str(path))
            t = time.perf_counter()
            again = Index.restore(str(path))
            assert again is not None and len(again) == len(index)
            return time.perf_counter() - t
    else:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=DIMS)
        index.init_index(max_elements=n + 1000, ef_construction=EF_ADD, M=M, allow_replace_deleted=True)
        index.add_items(vecs, keys, num_threads=2)
        index.set_ef(EF_SEARCH)
        index.set_num_threads(1)

        def search(q: np.ndarray, k: int) -> np.ndarray:
            return np.asarray(index.knn_query(q, k)[0][0])

        def edit(old: np.ndarray, new_keys: np.ndarray, new: np.ndarray) -> None:
            for key in old.tolist():
                index.mark_deleted(key)
            index.add_items(new, new_keys, replace_deleted=True)

        def persist(path: Path) -> float:
            index.save_index(str(path))
            t = time.perf_counter()
            again = hnswlib.Index(space="ip", dim=DIMS)
            again.load_index(str(path), max_elements=n + 1000, allow_replace_deleted=True)
            return time.perf_counter() - t

    build_s = time.perf_counter() - t0
    held_mb = _rss_mb() - base  # the index (the vectors were counted in base)
    found, times = [], []
    for q in queries:
        t = time.perf_counter()
        found.append(search(q, 10))
        times.append((time.perf_counter() - t) * 1000)
    edits = []
    for i in range(20):
        old = keys[i * 5 : i * 5 + 5]
        new_keys = np.arange(n + i * 5, n + i * 5 + 5, dtype=np.int64)
        t = time.perf_counter()
        edit(old, new_keys, vecs[old])
        edits.append((time.perf_counter() - t) * 1000)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index.bin"
        load_s = persist(path)
        file_mb = path.stat().st_size / 2**20
    return {
        "variant": variant,
        "n": n,
        "build_s": round(build_s, 1),
        "recall_at_10": round(recall(np.array(found), truth), 4),
        "query_p50_ms": round(pct(times, 0.5), 3),
        "query_p95_ms": round(pct(times, 0.95), 3),
        "edit_p50_ms": round(pct(edits, 0.5), 3),
        "rss_mb": round(held_mb, 1),
        "file_mb": round(file_mb, 1),
        "load_s": round(load_s, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.n, args.queries)))
        return
    rows = []
    for variant in VARIANTS:
        out = subprocess.run(
            [sys.executable, __file__, "--one", variant, "--n", str(args.n), "--queries", str(args.queries)],
            capture_output=True, text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "2"},
        )  # fmt: skip
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    cols = list(rows[0])
    print(table([tuple(cols), *[tuple(str(r[c]) for c in cols) for r in rows]]))
    save(
        "ann_choice",
        {"machine": machine(), "params": {"M": M, "ef_add": EF_ADD, "ef_search": EF_SEARCH}, "rows": rows},
    )


if __name__ == "__main__":
    main()
