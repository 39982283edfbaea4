"""`vaultlens serve` under load while the vault changes, and `vaultlens search` with and without it.

A vault of short notes (5,000; 500 with --quick) is generated (seeded) and indexed with the
bundled model, then `vaultlens serve` runs as a subprocess (default settings: the real model,
the watcher in the same process). 50 clients (asyncio + httpx, one connection each) search for
random word pairs while an editor appends a unique word to a random note every 2 s (longer than
the watcher's 1.5 s debounce, so each edit is its own flush; every tenth edit creates a note),
so the watcher re-indexes throughout: 10 s of warm-up, then 30 s measured. Measured: failed
requests (any non-200 or exception; bar: 0), latency p50 / p99 as the clients see it (baseline:
one client alone, 20 searches in a row, before the load), requests per second, flushes the watcher logged, and the server's resident memory (VmRSS) after the
warm-up and at the end (bar: end within 20% of start), sampled every 2 s in between. At the end
the last edit must be searchable (the watcher kept up).

Then the one-shot CLI: `vaultlens search --json` end to end (process start to exit) with the
server running (it answers; no model load) and after it stopped (the CLI loads the model),
interleaved, with the same output checked; reported as the ratio of medians.

``--contention``: instead, the query path on a busy machine (issue 26). `serve --no-watch` on a
500-note vault, one client, 200 searches in a row quiet, then 200 while another process keeps both
cores busy (numpy matrix products on 2 BLAS threads); once with ``embedding.query_threads=0`` (a
search runs on ``embedding.threads`` = all cores) and once with the default (1), and with ``--src
DIR`` once more with the default served from another checkout's ``src`` (e.g. ``git archive main
src``), alternating A B C / C B A. Bar: loaded p95 <= 3x quiet p95 of the same server.

Usage: .venv/bin/python bench/serve_load.py [--quick] [--notes N] [--clients N] [--seconds S] [--warmup S]
       [--cli-runs N] [--edit-every S]
       .venv/bin/python bench/serve_load.py --contention [--rounds 2] [--queries 200] [--src DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from _common import cli, machine, median, pct, save, table, verdict
from watch_latency import WORDS, indexed_vault, proc_stat

BAR_MEMORY_GROWTH = 0.20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(encoding="utf-8", errors="replace"):
            return
        if proc.poll() is not None:
            sys.exit("error: `vaultlens serve` exited:\n" + log.read_text(encoding="utf-8", errors="replace"))
        time.sleep(0.05)
    sys.exit(f"error: `vaultlens serve` did not print {text!r} within {timeout:.0f}s")


async def load(
    base: str, clients: int, seconds: float, rng: random.Random
) -> tuple[list[float], list[str], int]:
    """(latencies in ms, error descriptions, requests) of ``clients`` searching for ``seconds``."""
    latencies: list[float] = []
    errors: list[str] = []
    stop_at = time.monotonic() + seconds
    queries = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(1000)]

    async def client(k: int) -> None:
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as http:
            i = k
            while time.monotonic() < stop_at:
                q = queries[i % len(queries)]
                i += clients
                t0 = time.perf_counter()
                try:
                    reply = await http.get("/v1/search", params={"q": q, "limit": 10})
                    if reply.status_code != 200:
                        errors.append(f"{reply.status_code}: {reply.text[:200]}")
                        continue
                    reply.json()
                except (httpx.HTTPError, ValueError) as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                latencies.append((time.perf_counter() - t0) * 1000)

    await asyncio.gather(*(client(k) for k in range(clients)))
    return latencies, errors, len(latencies) + len(errors)


def editor(
    vault: Path, n_notes: int, every_s: float, stop: threading.Event, edits: list[tuple[str, str]]
) -> None:
    """Append a unique word to a random note every ``every_s``; every tenth edit creates a note."""
    if every_s <= 0:  # --edit-every 0: no edits (to tell the cost of the watcher's commits apart)
        return
    rng = random.Random(7)
    i = 0
    while not stop.wait(every_s):
        marker = f"vlload{i}x{rng.randrange(10**6)}"
        if i % 10 == 9:
            rel = f"new/Load note {i:04d}.md"
            (vault / "new").mkdir(exist_ok=True)
            (vault / rel).write_text(f"# Load note {i}\n\nWritten under load: {marker}.\n", encoding="utf-8")
        else:
            k = rng.randrange(n_notes)
            rel = f"area {k % 50:02d}/Note {k:05d}.md"
            with (vault / rel).open("a", encoding="utf-8") as fh:
                fh.write(f"\nEdited under load: {marker}.\n")
        edits.append((rel, marker))
        i += 1


def cli_search(vault: Path, query: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [cli(), "search", query, "--json", "-n", "5", "--vault", str(vault)],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=300,
    )
    if done.returncode != 0:
        sys.exit(f"error: vaultlens search failed:\n{done.stderr}")
    return time.perf_counter() - t0, done.stdout


BAR_CONTENTION = 3.0
HOG = """
import numpy as np
a = np.random.rand(600, 600)
while True:
    a = a @ a.T
    a /= np.abs(a).max()
"""


def sequential(base: str, queries: list[str]) -> list[float]:
    """Latency in ms of each query, one after another from one client."""
    out = []
    with httpx.Client(base_url=base, timeout=120) as http:
        for q in queries:
            t0 = time.perf_counter()
            http.get("/v1/search", params={"q": q, "limit": 10}).raise_for_status()
            out.append((time.perf_counter() - t0) * 1000)
    return out


def contention(rounds: int, n_queries: int, before: Path | None) -> None:
    """The query path quiet and while another process loads both cores, for two query settings
    (and the default of another checkout's ``src``, ``before``)."""
    rng = random.Random(7)
    tmp, vault, app, _ = indexed_vault("contention", 500, rng)
    app.close()
    queries = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(n_queries)]
    # label -> (embedding.query_threads, the src folder serve runs from: None = this checkout)
    settings: dict[str, tuple[str, Path | None]] = {
        "query_threads=0 (all cores)": ("0", None),
        "query_threads=1 (the default)": ("1", None),
    }
    if before is not None:
        settings[f"query_threads=1, {before}"] = ("1", before)
    runs: list[dict[str, Any]] = []
    for r in range(rounds):
        for label, (value, src) in settings.items() if r % 2 == 0 else reversed(settings.items()):
            port = free_port()
            log = Path(tmp.name) / f"serve-{r}-{len(runs)}.log"
            env = {**os.environ, "COLUMNS": "200"}
            if src is not None:
                env["PYTHONPATH"] = str(src)
            with log.open("ab") as out:
                proc = subprocess.Popen(
                    [
                        cli(),
                        "serve",
                        "--no-watch",
                        "--vault",
                        str(vault),
                        "--port",
                        str(port),
                        "--set",
                        f"embedding.query_threads={value}",
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            try:
                wait_for(log, "Serving ", proc, timeout=600)
                base = f"http://127.0.0.1:{port}"
                sequential(base, queries[:20])  # warm-up
                load_q = os.getloadavg()[0]
                quiet = sequential(base, queries)
                hog = subprocess.Popen(
                    [sys.executable, "-c", HOG], env={**os.environ, "OPENBLAS_NUM_THREADS": "2"}
                )
                try:
                    time.sleep(2)
                    load_l = os.getloadavg()[0]
                    loaded = sequential(base, queries)
                finally:
                    hog.kill()
                    hog.wait()
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
            run = {
                "setting": label,
                "round": r + 1,
                "load_quiet": load_q,
                "load_loaded": load_l,
                "quiet_p50": pct(quiet, 0.5),
                "quiet_p95": pct(quiet, 0.95),
                "loaded_p50": pct(loaded, 0.5),
                "loaded_p95": pct(loaded, 0.95),
            }
            run["ratio_p95"] = run["loaded_p95"] / run["quiet_p95"]
            runs.append(run)
            print(
                f"  round {r + 1} {label:44} quiet p50 {run['quiet_p50']:6.1f} p95 {run['quiet_p95']:6.1f} ms"
                f" (load {load_q:.1f}) | loaded p50 {run['loaded_p50']:6.1f} p95 {run['loaded_p95']:6.1f} ms"
                f" (load {load_l:.1f}) | p95 ratio {run['ratio_p95']:.2f}",
                flush=True,
            )
    rows: list[tuple[str, ...]] = [
        ("setting", "quiet p50/p95 ms", "loaded p50/p95 ms", "loaded/quiet p95", "bar")
    ]
    for label in settings:
        mine = [x for x in runs if x["setting"] == label]
        qp50, qp95 = median([x["quiet_p50"] for x in mine]), median([x["quiet_p95"] for x in mine])
        lp50, lp95 = median([x["loaded_p50"] for x in mine]), median([x["loaded_p95"] for x in mine])
        rows.append(
            (
                label,
                f"{qp50:.1f} / {qp95:.1f}",
                f"{lp50:.1f} / {lp95:.1f}",
                f"{lp95 / qp95:.2f}",
                f"<= {BAR_CONTENTION}: {verdict(lp95 / qp95 <= BAR_CONTENTION)}",
            )
        )
    print()
    print(table(rows))
    print(f"result: {save('serve_contention', {'machine': machine(), 'queries': n_queries, 'runs': runs})}")
    tmp.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="500 notes, 10 s of load, 3 CLI runs")
    ap.add_argument("--notes", type=int, default=None)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=None)
    ap.add_argument("--cli-runs", type=int, default=None)
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds of load and edits before measuring")
    ap.add_argument(
        "--edit-every",
        type=float,
        default=2.0,
        help="seconds between edits (default 2: each flushed; 0: none)",
    )
    ap.add_argument("--contention", action="store_true", help="the query path quiet and on busy cores")
    ap.add_argument("--rounds", type=int, default=2, help="--contention: rounds of both settings")
    ap.add_argument("--queries", type=int, default=200, help="--contention: queries per phase")
    ap.add_argument("--src", type=Path, default=None, help="--contention: also serve from this src folder")
    args = ap.parse_args()
    if args.contention:
        contention(args.rounds, args.queries, args.src.resolve() if args.src else None)
        return
    n_notes = args.notes or (500 if args.quick else 5000)
    seconds = args.seconds or (10.0 if args.quick else 30.0)
    cli_runs = args.cli_runs or (3 if args.quick else 5)
    rng = random.Random(20240917)

    tmp, vault, app, index_s = indexed_vault("serve", n_notes, rng)
    provider = app.settings.embedding.provider
    app.close()
    print(f"indexed {n_notes} notes in {index_s:.1f}s with the {provider!r} provider")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = Path(tmp.name) / "serve.log"

    def start() -> subprocess.Popen[bytes]:
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [cli(), "serve", "--vault", str(vault), "--port", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "COLUMNS": "200"},
            )
        return proc

    def stop(proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    proc = start()
    try:
        wait_for(log, "reconciled at start", proc, timeout=600)
        rss_loaded, _ = proc_stat(proc.pid)
        # baseline in the same run: one client alone, searches one after another
        alone_ms = []
        with httpx.Client(base_url=base, timeout=120) as http:
            for q in [f"{WORDS[i]} {WORDS[-i - 1]}" for i in range(20)]:
                t0 = time.perf_counter()
                http.get("/v1/search", params={"q": q, "limit": 10}).raise_for_status()
                alone_ms.append((time.perf_counter() - t0) * 1000)
        # warm-up: the same load and edits, so every worker thread, the watcher's embedding batches
        # and the caches exist before the memory at the start is read
        stop_edits = threading.Event()
        edits: list[tuple[str, str]] = []
        writer = threading.Thread(
            target=editor, args=(vault, n_notes, args.edit_every, stop_edits, edits), daemon=True
        )
        writer.start()
        _, warm_err, _ = asyncio.run(load(base, args.clients, args.warmup, random.Random(1)))
        rss_start, _ = proc_stat(proc.pid)
        flushes_before = log.read_text(encoding="utf-8", errors="replace").count("embedded")
        edits_before = len(edits)
        samples: list[tuple[float, float]] = []
        sampling = threading.Event()

        def sample() -> None:
            t = time.monotonic()
            while not sampling.wait(2.0):
                samples.append((round(time.monotonic() - t, 1), round(proc_stat(proc.pid)[0], 1)))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t_load = time.monotonic()
        latencies, errors, requests = asyncio.run(load(base, args.clients, seconds, rng))
        load_s = time.monotonic() - t_load
        stop_edits.set()
        sampling.set()
        writer.join()
        sampler.join()
        rss_end, _ = proc_stat(proc.pid)
        flushes = log.read_text(encoding="utf-8", errors="replace").count("embedded") - flushes_before
        # the last edit becomes searchable: the watcher kept up while serving
        rel, marker = edits[-1] if edits else ("", "")
        deadline = time.monotonic() + 30
        caught_up = None
        while edits and time.monotonic() < deadline:
            hits = httpx.get(base + "/v1/search", params={"q": marker, "limit": 3}, timeout=60).json()
            if any(h["path"] == rel for h in hits):
                caught_up = time.monotonic() - (t_load + load_s)
                break
            time.sleep(0.2)

        # one-shot CLI through the running server, vs. on its own (interleaved)
        query = "bread starter flour"
        served_s, plain_s = [], []
        served_out = plain_out = ""
        for _ in range(cli_runs):
            s, served_out = cli_search(vault, query)
            served_s.append(s)
        stop(proc)
        for _ in range(cli_runs):
            s, plain_out = cli_search(vault, query)
            plain_s.append(s)
        proc = start()
        wait_for(log, "Serving", proc, timeout=600)
        served2, _ = cli_search(vault, query)
        served_s.append(served2)
    finally:
        if proc.poll() is None:
            stop(proc)

    same_output = json.loads(served_out) == json.loads(plain_out)
    growth = (rss_end - rss_start) / rss_start
    ok_errors = not errors and not warm_err
    ok_memory = abs(growth) <= BAR_MEMORY_GROWTH
    ratio = median(plain_s) / median(served_s)
    rows = [
        ("measure", "value", "bar", "verdict"),
        ("failed requests", f"{len(errors)} of {requests}", "0", verdict(ok_errors)),
        ("one client alone, p50", f"{median(alone_ms):.0f} ms", "baseline", ""),
        ("search p50", f"{pct(latencies, 0.5):.0f} ms", "", ""),
        ("search p99", f"{pct(latencies, 0.99):.0f} ms", "", ""),
        ("throughput", f"{len(latencies) / load_s:.1f} req/s", "", ""),
        ("watcher flushes during load", f"{flushes} ({len(edits) - edits_before} edits)", "", ""),
        ("last edit searchable after load", "never" if caught_up is None else f"{caught_up:.1f} s", "", ""),
        ("RSS after model load", f"{rss_loaded:.0f} MB", "", ""),
        ("RSS after warm-up = start", f"{rss_start:.0f} MB", "", ""),
        ("RSS max while loaded", f"{max([rss_start, *(m for _, m in samples)]):.0f} MB", "", ""),
        ("RSS at load end", f"{rss_end:.0f} MB", f"within {BAR_MEMORY_GROWTH:.0%}", verdict(ok_memory)),
        ("`vaultlens search` via serve", f"{median(served_s):.2f} s", "", ""),
        ("`vaultlens search` alone", f"{median(plain_s):.2f} s", "", ""),
        ("ratio alone / via serve", f"{ratio:.1f} x", "same output", verdict(same_output)),
    ]
    print(f"\n{n_notes} notes, {args.clients} clients for {seconds:.0f} s, provider {provider!r}\n")
    print(table(rows))
    if errors:
        print("\nfirst errors:\n  " + "\n  ".join(errors[:5]))
    result: dict[str, Any] = {
        "machine": machine(),
        "notes": n_notes,
        "provider": provider,
        "clients": args.clients,
        "seconds": seconds,
        "index_s": round(index_s, 1),
        "requests": requests,
        "errors": len(errors) + len(warm_err),
        "latency_ms": {
            "p50": round(pct(latencies, 0.5)),
            "p90": round(pct(latencies, 0.9)),
            "p99": round(pct(latencies, 0.99)),
            "max": round(max(latencies)),
        },
        "throughput_rps": round(len(latencies) / load_s, 1),
        "alone_ms": {"p50": round(median(alone_ms)), "p90": round(pct(alone_ms, 0.9))},
        "edits": len(edits) - edits_before,
        "warmup_s": args.warmup,
        "rss_samples_mb": samples,
        "watcher_flushes": flushes,
        "last_edit_searchable_s": None if caught_up is None else round(caught_up, 2),
        "rss_mb": {"loaded": round(rss_loaded), "start": round(rss_start), "end": round(rss_end)},
        "rss_growth": round(growth, 3),
        "cli_served_s": [round(x, 3) for x in served_s],
        "cli_alone_s": [round(x, 3) for x in plain_s],
        "cli_ratio": round(ratio, 1),
        "cli_same_output": same_output,
        "pass": {"errors": ok_errors, "memory": ok_memory, "cli_same_output": same_output},
    }
    path = save("serve_load_quick" if args.quick else "serve_load", result)
    print(f"\nsaved {path}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
