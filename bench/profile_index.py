"""Where `vaultlens index` spends its time, against the provider's raw ``embed`` of the same texts.

Two vaults: a synthetic one (bench/audit_structure.py's generator, about 3.9 chunks a note) and
SciFact abstracts written as notes (bench/index_overhead.py's writer). For each, in one process:
index and raw embedding alternate (A B A B) with wall and CPU seconds (and, for each index run, how
long the model was busy in it and its gaps: :func:`timeline`), then one cProfile of each,
its time sorted into buckets: tokenizer (sentencepiece), forward pass
(numpy), store (SQLite and FTS writes), notes (scan, read, parse, chunk), other::

    .venv/bin/python bench/profile_index.py --notes 300 --scifact 500 --rounds 2
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import machine, need_shared, save, table, temp_home
from audit_structure import generate
from index_overhead import Texts, run_inproc, run_raw, write_vault

BUCKETS = (
    ("tokenizer", ("pure_tokenizer.py", "sentencepiece")),
    # the fast path's workers are not profiled: the main thread's wait for them is their time
    (
        "forward pass",
        (
            "backends/numpy.py",
            "use_fast.py",
            "embedding/local.py",
            "numpy",
            "threadpoolctl",
            "futures",
            "_thread.lock",
        ),
    ),
    ("store", ("sqlite/store.py", "sqlite3", "index/store.py", "lexical.py")),
    ("notes", ("vault/", "chunking/", "markdown_it", "yaml", "index/indexing/texts.py", "fsutil.py")),
)


def bucket_of(filename: str) -> str:
    for name, keys in BUCKETS:
        if any(k in filename for k in keys):
            return name
    return "other"


def profile(fn: Any) -> dict[str, float]:
    """Self time (tottime) of every function run by ``fn``, summed per bucket."""
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof)
    out: dict[str, float] = {}
    for (filename, _, func), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        key = bucket_of(f"{filename}:{func}")
        out[key] = out.get(key, 0.0) + tottime
    return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


@contextmanager
def model_calls(cls: Any) -> Iterator[list[tuple[float, float]]]:
    """(start, end) of every ``cls.embed`` call made in the block, whichever instance makes it."""
    calls: list[tuple[float, float]] = []
    real = cls.embed

    def timed_embed(self: Any, texts: Any) -> Any:
        started = time.perf_counter()
        try:
            return real(self, texts)
        finally:
            calls.append((started, time.perf_counter()))

    cls.embed = timed_embed
    try:
        yield calls
    finally:
        cls.embed = real


def timeline(calls: list[tuple[float, float]], started: float, wall: float) -> dict[str, float]:
    """Where an index run's wall went against its model: when the first call started, how long the
    model was busy (some call running), the gaps between calls and after the last one. A model busy the whole run means
    nothing in it is serial with the model; busy longer than the raw embedding, that it ran slower."""
    if not calls:
        return {}
    busy: list[list[float]] = []  # the calls' union: the indexer keeps two in flight
    for start, end in sorted(calls):
        if busy and start <= busy[-1][1]:
            busy[-1][1] = max(busy[-1][1], end)
        else:
            busy.append([start, end])
    return {
        "first_call_at_s": round(busy[0][0] - started, 3),
        "model_busy_s": round(sum(end - start for start, end in busy), 2),
        "gaps_between_calls_s": round(sum(busy[i + 1][0] - busy[i][1] for i in range(len(busy) - 1)), 3),
        "after_last_call_s": round(started + wall - busy[-1][1], 3),
    }


def measure(label: str, vault: Path, root: Path, rounds: int, profiled: bool = True) -> dict[str, Any]:
    """Index against raw embedding, alternating; each index run with its model timeline (:func:`timeline`)."""
    from vaultlens.embedding.registry import make_provider
    from vaultlens.services.app import App

    settings = App.open(vault).settings
    texts = list(Texts(vault, settings).all().values())
    warm = make_provider(settings.embedding)
    warm.embed(["warm-up"])  # the model is loaded once for both sides
    raw: list[dict[str, float]] = []
    idx: list[dict[str, Any]] = []
    for r in range(rounds):
        for what in ("raw", "index") if r % 2 == 0 else ("index", "raw"):
            load = os.getloadavg()[0]
            if what == "raw":
                raw.append({**run_raw(lambda: make_provider(settings.embedding), texts), "load": load})
            else:
                with model_calls(type(warm)) as calls:
                    started = time.perf_counter()
                    run = run_inproc(vault, root / f"home-{label}-{r}")
                idx.append({**run, **timeline(calls, started, run["wall_s"]), "load": load})
            last = raw[-1] if what == "raw" else idx[-1]
            busy = f" model busy {last['model_busy_s']:6.1f}s" if "model_busy_s" in last else ""
            print(
                f"  {label} round {r + 1} {what:5}: wall {last['wall_s']:6.1f}s cpu {last['cpu_s']:6.1f}s{busy}"
                f" load {load:.1f}",
                flush=True,
            )
    prof_raw: dict[str, float] = {}
    prof_idx: dict[str, float] = {}
    if profiled:
        prof_raw = profile(lambda: run_raw(lambda: make_provider(settings.embedding), texts))
        prof_idx = profile(lambda: run_inproc(vault, root / f"home-{label}-prof"))
    wall = sum(x["wall_s"] for x in idx) / sum(x["wall_s"] for x in raw)
    cpu = sum(x["cpu_s"] for x in idx) / sum(x["cpu_s"] for x in raw)
    return {
        "chunks": len(texts),
        "raw": raw,
        "index": idx,
        "ratio_wall": round(wall, 3),
        "ratio_cpu": round(cpu, 3),
        "profile_raw": prof_raw,
        "profile_index": prof_idx,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=2000, help="synthetic notes (2000)")
    ap.add_argument("--scifact", type=int, default=5183, help="SciFact abstracts (all 5,183)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    tmp = temp_home("profile")
    root = Path(tmp.name)
    synth = root / "synthetic"
    synth.mkdir()
    generate(synth, args.notes)
    sci = root / "scifact"
    write_vault(need_shared("bench", "scifact", "corpus.jsonl"), sci, args.scifact)
    results = {}
    for label, vault in (("synthetic", synth), ("scifact", sci)):
        results[label] = res = measure(label, vault, root, args.rounds)
        rows: list[tuple[str, ...]] = [("bucket", "raw embed s", "index s")]
        for key in dict.fromkeys([*res["profile_index"], *res["profile_raw"]]):
            rows.append(
                (key, f"{res['profile_raw'].get(key, 0):.1f}", f"{res['profile_index'].get(key, 0):.1f}")
            )
        print(
            f"\n{label}: {res['chunks']} chunks; index / raw: wall {res['ratio_wall']}, cpu {res['ratio_cpu']}"
        )
        print(table(rows), flush=True)
    print(f"result: {save('profile_index', {'machine': machine(), 'args': vars(args), **results})}")
    tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
