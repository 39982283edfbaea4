"""Edit-to-searchable latency and the idle cost of `vaultlens watch` on a generated vault.

A vault of short notes (5,000; 500 with --quick) is generated (seeded) and indexed, then
`vaultlens watch` runs as a subprocess with the default settings. Each round saves one note
with a unique new word and polls search in this process (`services.search`, the same store
reads as `vaultlens search`, run whenever the store's generation moved) until that note is a
hit: the time from the save to the hit is the edit-to-searchable latency (bar: median <=
debounce + 500 ms). Before and after the edits the watcher sits idle: its resident memory
(VmRSS) and its CPU time over 20 s (utime + stime from /proc/PID/stat) are read (bars:
< 300 MB, near-zero CPU, here < 1 % of one core).

Usage: .venv/bin/python bench/watch_latency.py [--quick] [--notes N] [--edits N] [--idle-s S]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import vaultlens as services
from _common import cli, machine, median, pct, save, table, temp_home, verdict
from vaultlens.services.app import App

BAR_EXTRA_MS = 500
BAR_RSS_MB = 300
BAR_IDLE_CPU_PCT = 1.0
WORDS = [
    "garden",
    "tomato",
    "bread",
    "starter",
    "flour",
    "water",
    "river",
    "mountain",
    "train",
    "ticket",
    "budget",
    "invoice",
    "backup",
    "restore",
    "index",
    "query",
    "cache",
    "latency",
    "request",
    "server",
    "token",
    "policy",
    "header",
    "browser",
    "coffee",
    "kettle",
    "lamp",
    "window",
    "хлеб",
    "мука",
    "вода",
    "река",
    "гора",
    "поезд",
    "бюджет",
    "сад",
    "кэш",
    "запрос",
    "сервер",
]


def indexed_vault(
    prefix: str, n_notes: int, rng: random.Random
) -> tuple[tempfile.TemporaryDirectory[str], Path, App, float]:
    """A throw-away home with a seeded vault of ``n_notes``, indexed: (tmp, vault, app, index seconds)."""
    tmp = temp_home(prefix)
    vault = Path(tmp.name) / "vault"
    write_vault(vault, n_notes, rng)
    t0 = time.monotonic()
    app = App.open(vault)
    services.index(app)
    return tmp, vault, app, time.monotonic() - t0


def write_vault(root: Path, n: int, rng: random.Random) -> None:
    for i in range(n):
        folder = root / f"area {i % 50:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        body = " ".join(rng.choice(WORDS) for _ in range(30))
        (folder / f"Note {i:05d}.md").write_text(f"# Note {i:05d}\n\n{body}.\n", encoding="utf-8")


def proc_stat(pid: int) -> tuple[float, float]:
    """(resident MB, CPU seconds used so far) of a process, from /proc."""
    rss_kb = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss_kb = int(line.split()[1])
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14, 15 of the full line)
    return rss_kb / 1024, cpu


def wait_for(log: Path, text: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(encoding="utf-8", errors="replace"):
            return
        if proc.poll() is not None:
            sys.exit("error: `vaultlens watch` exited:\n" + log.read_text(encoding="utf-8", errors="replace"))
        time.sleep(0.05)
    sys.exit(f"error: `vaultlens watch` did not print {text!r} within {timeout:.0f}s")


def idle(pid: int, seconds: float) -> tuple[float, float]:
    """(resident MB at the end, % of one core) over ``seconds`` of doing nothing."""
    _, cpu0 = proc_stat(pid)
    t0 = time.monotonic()
    time.sleep(seconds)
    rss, cpu1 = proc_stat(pid)
    return rss, 100 * (cpu1 - cpu0) / (time.monotonic() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="500 notes instead of 5,000")
    ap.add_argument("--notes", type=int, default=None)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--idle-s", type=float, default=20.0)
    ap.add_argument("--settle-s", type=float, default=5.0, help="wait before the idle measurement")
    args = ap.parse_args()
    n_notes = args.notes or (500 if args.quick else 5000)
    rng = random.Random(20240917)

    tmp, vault, app, index_s = indexed_vault("watch", n_notes, rng)
    debounce_ms = app.settings.watch.debounce_ms
    print(
        f"indexed {n_notes} notes in {index_s:.1f}s; starting `vaultlens watch` (debounce {debounce_ms} ms)"
    )

    log = Path(tmp.name) / "watch.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [cli(), "watch", "--vault", str(vault)], stdout=out, stderr=subprocess.STDOUT, env=os.environ
        )
    try:
        wait_for(log, "Watching", proc, timeout=600)
        time.sleep(args.settle_s)
        rss_start, cpu_start = idle(proc.pid, args.idle_s)

        latencies: list[float] = []
        # a lease without a snapshot: its generation is the latest commit (as app.store() was);
        # each search below takes its own lease and snapshot, as `vaultlens search` does
        with app.live.lease() as store:
            for i in range(args.edits):
                k = rng.randrange(n_notes)
                rel = f"area {k % 50:02d}/Note {k:05d}.md"
                marker = f"vlmark{i}x{rng.randrange(10**6)}"
                path = vault / rel
                saved = time.monotonic()
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(f"\nToday I wrote about {marker} in this note.\n")
                found = None
                seen = -1
                while time.monotonic() - saved < 30:
                    # a full search only when a commit happened: polling with searches would load the
                    # CPU the watcher needs and measure the poll more than the watcher
                    gen = store.generation
                    if gen != seen:
                        seen = gen
                        if any(h.path == rel for h in services.search(app, marker, limit=5)):
                            found = time.monotonic() - saved
                            break
                    time.sleep(0.01)
                if found is None:
                    sys.exit(f"error: edit {i} ({rel}) was not searchable within 30 s")
                latencies.append(found * 1000)
                print(f"  edit {i + 1:>2}: {found * 1000:6.0f} ms  {rel}")
                time.sleep(0.5)

        time.sleep(args.settle_s)
        rss_idle, cpu_idle = idle(proc.pid, args.idle_s)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        app.close()

    lat_median = median(latencies)
    bar_ms = debounce_ms + BAR_EXTRA_MS
    ok_lat = lat_median <= bar_ms
    ok_rss = max(rss_start, rss_idle) < BAR_RSS_MB
    ok_cpu = max(cpu_start, cpu_idle) < BAR_IDLE_CPU_PCT
    rows = [
        ("measure", "value", "bar", "verdict"),
        ("edit-to-searchable median", f"{lat_median:.0f} ms", f"<= {bar_ms} ms", verdict(ok_lat)),
        ("edit-to-searchable p90", f"{pct(latencies, 0.9):.0f} ms", "", ""),
        ("edit-to-searchable max", f"{max(latencies):.0f} ms", "", ""),
        (
            "idle RSS before edits",
            f"{rss_start:.0f} MB",
            f"< {BAR_RSS_MB} MB",
            verdict(rss_start < BAR_RSS_MB),
        ),
        ("idle RSS after edits", f"{rss_idle:.0f} MB", f"< {BAR_RSS_MB} MB", verdict(rss_idle < BAR_RSS_MB)),
        (
            "idle CPU before edits",
            f"{cpu_start:.2f} %",
            f"< {BAR_IDLE_CPU_PCT} %",
            verdict(cpu_start < BAR_IDLE_CPU_PCT),
        ),
        (
            "idle CPU after edits",
            f"{cpu_idle:.2f} %",
            f"< {BAR_IDLE_CPU_PCT} %",
            verdict(cpu_idle < BAR_IDLE_CPU_PCT),
        ),
    ]
    print(f"\n{n_notes} notes, {len(latencies)} edits, idle windows of {args.idle_s:.0f} s\n")
    print(table(rows))
    path = save(
        "watch_latency_quick" if args.quick else "watch_latency",
        {
            "machine": machine(),
            "notes": n_notes,
            "index_s": round(index_s, 1),
            "debounce_ms": debounce_ms,
            "latency_ms": [round(x) for x in latencies],
            "latency_median_ms": round(lat_median),
            "latency_p90_ms": round(pct(latencies, 0.9)),
            "latency_bar_ms": bar_ms,
            "idle_rss_mb": {"before_edits": round(rss_start, 1), "after_edits": round(rss_idle, 1)},
            "idle_cpu_pct": {"before_edits": round(cpu_start, 3), "after_edits": round(cpu_idle, 3)},
            "idle_window_s": args.idle_s,
            "pass": {"latency": ok_lat, "rss": ok_rss, "cpu": ok_cpu},
        },
    )
    print(f"\nsaved {path}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
