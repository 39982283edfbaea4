"""`duplicates` and `similar` at 100,000 notes, on a synthetic index with planted near-duplicates.

How the index is made (the embedding model's speed is not what this measures, so vectors are synthetic):
* shaped like the bundled model's vectors (measured on ru-wiki + kepano: a shared mean of norm ~0.45,
  the top 32 of 512 principal directions holding ~60% of the variance): Gaussian noise with a 1/i
  spectrum in a random orthonormal basis ("spectral" below);
* 2,000 cluster centres: normalise(shared mean + 0.9 * spectral);
* every note belongs to one random centre and has 1-3 chunks; each chunk vector is
  normalise(centre + spectral), so chunks of one cluster are related (cosine ~0.5) and the closest
  ordinary neighbour of any chunk stays far below 0.95;
* planted pairs (1% of the notes): note B copies note A's chunk count and text length and each of its
  chunk vectors is normalise(a_i + eps * unit(spectral)) with eps uniform in [0.08, 0.25], i.e. cosine
  ~0.97-0.997 with A's chunk, so the pair's coverage is >= 0.95;
* every chunk has its own synthetic text (unique words, > 32 letters) so no note is an exact copy and
  every note passes the minimum-text rule.
The notes are written straight into a real SQLiteStore through ``SQLiteStore.apply`` (FileRecord,
NoteUpdate, IndexedChunk, vectors dict) in batches of 2,000 notes, the same path the indexer uses.

Measured, each in its own subprocess (so the generator's memory is not counted; peak RSS = VmHWM):
* `report.duplicates(store, 0.95, 10**6, min_chars)` twice: cold (the .npy matrix cache is built from
  SQLite first, as after a fresh index) and warm; wall time, peak RSS, recall of the planted pairs.
  The limit is raised above the default 100 so that every planted pair can be counted.
* the same call with the pair finder replaced by a naive all-pairs scan (V @ V.T in blocks of
  512 rows, every pair scored in 512-d) at --naive-notes notes, next to ours at the same size; ours
  must find >= 95% of the naive scan's pairs and nothing it does not (above 30,000 sections ours
  scores pairs inside k-means partitions, which is approximate).
* `discover.similar` for 50 random notes in one process after one warm-up call (median, p95).

Usage: .venv/bin/python bench/duplicates_scale.py [--quick] [--notes N] [--naive-notes N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import machine, save, table, verdict
from vaultlens.config.settings import Settings

DIMS = 512
CENTRES = 2000
PLANTED_FRACTION = 0.01
BAR_SECONDS = 60.0
BAR_RSS_MB = 2048.0
BAR_RECALL = 0.95
BAR_SIMILAR_MS = 100.0
MIN_CHARS = Settings().discover.min_chars  # the default minimum-text rule of `duplicates` and `similar`
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "theta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
    "river",
    "stone",
    "cloud",
]


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _text(note: int, ordinal: int, rng: random.Random) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(8))
    return f"Synthetic note {note} section {ordinal}: {words}."


def generate(directory: Path, n_notes: int, seed: int = 7) -> dict[str, Any]:
    """Write an index of ``n_notes`` notes with planted near-duplicate pairs; returns its description."""
    from vaultlens.chunking.chunker import Chunk
    from vaultlens.embedding.base import EmbeddingSpace
    from vaultlens.index.sqlite.store import SQLiteStore
    from vaultlens.index.store import FileRecord, IndexedChunk, NoteUpdate

    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    prng = random.Random(seed)
    # the real model's vectors are anisotropic (a shared mean of norm ~0.45; the top 32 of 512 principal
    # directions hold ~60% of the variance on ru-wiki + kepano): a 1/i spectrum in a random basis mimics that
    lam = 1.0 / np.arange(1, DIMS + 1)
    basis = (np.linalg.qr(rng.standard_normal((DIMS, DIMS)))[0] * np.sqrt(lam / lam.sum())).astype(np.float32)
    shared = _unit(rng.standard_normal(DIMS)) * 0.45

    def spectral(m: int) -> np.ndarray:
        return rng.standard_normal((m, DIMS)).astype(np.float32) @ basis.T

    centres = _unit(shared + 0.9 * spectral(CENTRES))
    n_planted = int(n_notes * PLANTED_FRACTION)
    n_base = n_notes - n_planted
    cluster = rng.integers(0, CENTRES, n_base)
    n_chunks = rng.integers(1, 4, n_base)
    originals = rng.choice(n_base, n_planted, replace=False)
    store = SQLiteStore(directory)
    store.set_space(EmbeddingSpace("synthetic", "clustered-512", "", DIMS))
    note_vecs: dict[int, np.ndarray] = {}
    planted: list[tuple[str, str]] = []

    def path(i: int) -> str:
        return f"n{i // 1000:03d}/note-{i:06d}.md"

    def updates_for(ids: range) -> tuple[list[NoteUpdate], dict[str, np.ndarray]]:
        ups: list[NoteUpdate] = []
        vecs: dict[str, np.ndarray] = {}
        for i in ids:
            if i < n_base:
                k = int(n_chunks[i])
                v = _unit(centres[cluster[i]][None, :] + spectral(k))
                if i in original_set:
                    note_vecs[i] = v
            else:
                src = int(originals[i - n_base])
                a = note_vecs.pop(src)
                eps = rng.uniform(0.08, 0.25, (a.shape[0], 1))
                v = _unit(a + eps * _unit(spectral(a.shape[0])))
                planted.append((path(src), path(i)))
            chunks = []
            offset = 0
            for o in range(v.shape[0]):
                text = _text(i, o, prng)
                h = hashlib.sha256(f"{i}:{o}".encode()).hexdigest()
                chunk = Chunk(
                    f"{path(i)}#{o}",
                    path(i),
                    o,
                    (f"Section {o}",),
                    text,
                    h,
                    offset,
                    offset + len(text),
                    o,
                    o + 1,
                )
                offset += len(text) + 1
                chunks.append(IndexedChunk(chunk, h, text))
                vecs[h] = v[o]
            rec = FileRecord(
                path(i), "note", offset, 0, f"hash-{i}", "indexed", title=f"Note {i}", n_chunks=len(chunks)
            )
            ups.append(NoteUpdate(rec, chunks))
        return ups, vecs

    original_set = set(int(x) for x in originals)
    batch = 2000
    for start in range(0, n_notes, batch):
        ups, vecs = updates_for(range(start, min(n_notes, start + batch)))
        store.apply(updates=ups, vectors=vecs)
    chunks = store.counts().chunks
    store.close()
    info = {
        "notes": n_notes,
        "chunks": chunks,
        "planted": planted,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (directory / "planted.json").write_text(json.dumps(info))
    return info


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _naive_pairs(matrix: np.ndarray, subset: np.ndarray, floor: float) -> Any:
    """Every pair of ``subset`` scored in the full space, 512 rows at a time (the all-pairs baseline)."""
    vecs = np.asarray(matrix[subset], dtype=np.float32)
    n = vecs.shape[0]
    for start in range(0, n - 1, 512):
        stop = min(n, start + 512)
        g = vecs[start:stop] @ vecs[start:].T
        rows, cols = np.nonzero(g >= floor)
        keep = cols > rows
        rows, cols = rows[keep], cols[keep]
        yield subset[rows + start], subset[cols + start], g[rows, cols].astype(np.float32)


def measure_duplicates(directory: Path, naive: bool) -> dict[str, Any]:
    from vaultlens.index.sqlite.store import SQLiteStore
    from vaultlens.services.finding.duplicates import report as dups
    from vaultlens.services.finding.duplicates import vector_pairs

    if naive:
        vector_pairs.close_pairs = _naive_pairs  # type: ignore[assignment]
    t0 = time.perf_counter()
    store = SQLiteStore(directory)
    report = dups.duplicates(store, 0.95, 10**6, MIN_CHARS)
    seconds = time.perf_counter() - t0
    info = json.loads((directory / "planted.json").read_text())
    planted = {frozenset(p) for p in info["planted"]}
    found = {frozenset((p.a, p.b)) for p in report.pairs}
    digest = hashlib.sha256(json.dumps([(p.a, p.b, p.score) for p in report.pairs]).encode()).hexdigest()[:16]
    return {
        "seconds": round(seconds, 2),
        "peak_rss_mb": round(_peak_mb(), 1),
        "pairs": len(report.pairs),
        "planted": len(planted),
        "recall": round(len(planted & found) / max(1, len(planted)), 4),
        "extra_pairs": len(found - planted),
        "report_digest": digest,
        "pair_list": sorted(sorted((p.a, p.b)) for p in report.pairs),
    }


def measure_similar(directory: Path, samples: int = 50) -> dict[str, Any]:
    from vaultlens.index.sqlite.store import SQLiteStore
    from vaultlens.services.finding import discover

    store = SQLiteStore(directory)
    paths = sorted(p for p, r in store.file_records().items() if r.status == "indexed")
    picks = random.Random(1).sample(paths, samples + 1)
    t0 = time.perf_counter()
    first = discover.similar(store, picks[0], 10, MIN_CHARS)
    cold = time.perf_counter() - t0
    times = []
    planted = {a: b for a, b in json.loads((directory / "planted.json").read_text())["planted"]}
    planted.update({b: a for a, b in list(planted.items())})
    top_ok = n_planted = 0
    for p in picks[1:]:
        t = time.perf_counter()
        res = discover.similar(store, p, 10, MIN_CHARS)
        times.append((time.perf_counter() - t) * 1000)
        if p in planted:
            n_planted += 1
            top_ok += int(bool(res.results) and res.results[0].path == planted[p])
    times.sort()
    return {
        "first_call_ms": round(cold * 1000, 1),
        "median_ms": round(times[len(times) // 2], 1),
        "p95_ms": round(times[int(len(times) * 0.95) - 1], 1),
        "samples": samples,
        "first_results": len(first.results),
        "planted_partner_top1": f"{top_ok}/{n_planted}",
        "peak_rss_mb": round(_peak_mb(), 1),
    }


def _sub(mode: str, directory: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--measure", mode, str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        sys.exit(f"measurement {mode} failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _drop_cache(directory: Path) -> None:
    for p in directory.glob("matrix-*.npy"):
        p.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10,000 notes (naive comparison at 5,000).")
    ap.add_argument("--notes", type=int, default=None)
    ap.add_argument("--naive-notes", type=int, default=None)
    ap.add_argument("--keep", type=Path, default=None, help="Keep (and re-use) the generated indexes here.")
    ap.add_argument("--measure", nargs=2, metavar=("MODE", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        mode, d = args.measure
        fn = {
            "ours": lambda: measure_duplicates(Path(d), False),
            "naive": lambda: measure_duplicates(Path(d), True),
            "similar": lambda: measure_similar(Path(d)),
        }[mode]
        print(json.dumps(fn()))
        return

    n = args.notes or (10_000 if args.quick else 100_000)
    n_naive = args.naive_notes or (5_000 if args.quick else 20_000)
    tmp = None
    if args.keep:
        root = args.keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="vaultlens-dupscale-")
        root = Path(tmp.name)
    try:
        dirs = {}
        for size in sorted({n, n_naive}):
            d = root / f"index-{size}"
            if not (d / "planted.json").exists():
                if d.exists():
                    shutil.rmtree(d)
                info = generate(d, size)
                print(
                    f"generated {size:,} notes / {info['chunks']:,} chunks in {info['seconds']} s", flush=True
                )
            dirs[size] = d

        _drop_cache(dirs[n])
        cold = _sub("ours", dirs[n])
        warm = _sub("ours", dirs[n])
        sim = _sub("similar", dirs[n])
        _sub("ours", dirs[n_naive])  # build the matrix cache so both sides read the same input
        ours_small = _sub("ours", dirs[n_naive])
        naive_small = _sub("naive", dirs[n_naive])
        naive_set = {tuple(p) for p in naive_small["pair_list"]}
        ours_set = {tuple(p) for p in ours_small["pair_list"]}
        agree = len(naive_set & ours_set) / max(1, len(naive_set))
        same = agree >= 0.95 and not (ours_set - naive_set)
        chunks = json.loads((dirs[n] / "planted.json").read_text())["chunks"]
    finally:
        if tmp is not None:
            tmp.cleanup()

    rows: list[tuple[str, ...]] = [("measure", "value", "bar", "verdict")]
    worst_s = max(cold["seconds"], warm["seconds"])
    worst_mb = max(cold["peak_rss_mb"], warm["peak_rss_mb"])
    rows.append(
        (
            f"duplicates wall, {n:,} notes, cold cache",
            f"{cold['seconds']:.1f} s",
            f"< {BAR_SECONDS:.0f} s",
            verdict(cold["seconds"] < BAR_SECONDS),
        )
    )
    rows.append(
        (
            f"duplicates wall, {n:,} notes, warm cache",
            f"{warm['seconds']:.1f} s",
            f"< {BAR_SECONDS:.0f} s",
            verdict(warm["seconds"] < BAR_SECONDS),
        )
    )
    rows.append(
        (
            "duplicates peak RSS (cold / warm)",
            f"{cold['peak_rss_mb']:.0f} / {warm['peak_rss_mb']:.0f} MB",
            "< 2048 MB",
            verdict(worst_mb < BAR_RSS_MB),
        )
    )
    rows.append(
        (
            "planted pairs found",
            f"{warm['recall']:.1%} of {warm['planted']:,}",
            ">= 95%",
            verdict(warm["recall"] >= BAR_RECALL),
        )
    )
    rows.append(("other pairs reported", str(warm["extra_pairs"]), "-", "-"))
    rows.append(
        (
            f"naive all-pairs / ours, {n_naive:,} notes",
            f"{naive_small['seconds']:.1f} s / {ours_small['seconds']:.1f} s = {naive_small['seconds'] / max(ours_small['seconds'], 1e-9):.1f}x",
            "report",
            "-",
        )
    )
    rows.append(
        (
            f"pairs of the naive scan that ours finds, {n_naive:,} notes",
            f"{agree:.1%}",
            ">= 95%, none extra",
            verdict(same),
        )
    )
    rows.append(
        (
            f"similar median / p95, {n:,} notes",
            f"{sim['median_ms']:.1f} / {sim['p95_ms']:.1f} ms",
            f"< {BAR_SIMILAR_MS:.0f} ms",
            verdict(sim["median_ms"] < BAR_SIMILAR_MS),
        )
    )
    rows.append(("similar first call (loads the matrix)", f"{sim['first_call_ms']:.0f} ms", "-", "-"))
    rows.append(("similar: planted partner ranked first", sim["planted_partner_top1"], "-", "-"))
    print(
        f"\n{n:,} notes, {chunks:,} chunks, {DIMS}-d, {CENTRES:,} clusters, {warm['planted']:,} planted pairs"
    )
    print(table(rows))
    ok = (
        worst_s < BAR_SECONDS
        and worst_mb < BAR_RSS_MB
        and warm["recall"] >= BAR_RECALL
        and same
        and sim["median_ms"] < BAR_SIMILAR_MS
    )
    out = save(
        "duplicates_scale" + ("_quick" if args.quick else ""),
        {
            "machine": machine(),
            "notes": n,
            "chunks": chunks,
            "cold": cold,
            "warm": warm,
            "similar": sim,
            "naive_notes": n_naive,
            "ours_at_naive_size": ours_small,
            "naive": naive_small,
            "naive_equal": same,
            "pass": ok,
        },
    )
    print(f"\nresults: {out}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
