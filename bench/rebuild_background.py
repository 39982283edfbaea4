"""Searches during `vaultlens rebuild --background`: failures (bar: 0) and latency vs. at rest.

A seeded vault (5,000 notes, two sections each; --quick 500) is indexed in embedding space A, both
spaces served by the scripted loopback server in its own process (each answer delayed a little, as
a fast local provider would be). Then, in this process, searches of the live index (space A) run:
first at rest, then in a loop while a `vaultlens rebuild --background` child builds space B next to
it, until the child switches. A search is failed when it raises anything but the expected
SpaceMismatch after the switch (this searcher is configured for the old space), or when it misses
the note its rare word names. Latency includes the query embedding (one loopback HTTP call).

Usage: .venv/bin/python bench/rebuild_background.py [--quick] [--notes N] [--delay S]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import cli, machine, median, pct, save, table, temp_home, verdict
from _spaces import env_for, space, start_server, write_notes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

DIMS = 256
SEED = 7


def timed_search(app: Any, i: int) -> tuple[float, bool]:
    import vaultlens as services

    started = time.perf_counter()
    hits = services.search(app, f"unique{i} river", limit=5)
    return (time.perf_counter() - started) * 1000, bool(hits) and hits[0].path.endswith(f"note{i:05d}.md")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="500 notes")
    ap.add_argument("--notes", type=int, default=None)
    ap.add_argument("--delay", type=float, default=0.01, help="seconds the server waits per request")
    args = ap.parse_args()
    n = args.notes or (500 if args.quick else 5000)

    from vaultlens.config.paths import index_dir
    from vaultlens.errors import SpaceMismatch
    from vaultlens.index.backends import get_backend
    from vaultlens.index.lifecycle import IndexHome
    from vaultlens.services.app import App

    with temp_home("rebuild") as tmp:
        vault = Path(tmp) / "vault"
        write_notes(vault, n, SEED)
        server, url = start_server(DIMS, args.delay)
        try:
            old, new = space(url, "space-a", DIMS), space(url, "space-b", DIMS)
            t0 = time.monotonic()
            subprocess.run(
                [cli(), "index", "--vault", str(vault)], env=env_for(old), check=True, capture_output=True
            )
            build_s = time.monotonic() - t0
            app = App.open(vault, old)
            at_rest = [timed_search(app, i % n) for i in range(100)]

            child = subprocess.Popen(
                [cli(), "rebuild", "--background", "--json", "--vault", str(vault)],
                env=env_for(new),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            t0 = time.monotonic()
            during: list[tuple[float, bool]] = []
            failures: list[str] = []
            after_switch = 0
            i = 0
            while child.poll() is None:
                i += 1
                try:
                    during.append(timed_search(app, i % n))
                except SpaceMismatch:
                    after_switch += 1
                    home = IndexHome(index_dir(vault), get_backend())
                    if home.live_dir() == home.root:  # no `current` pointer yet: not switched
                        failures.append("space mismatch before the switch")
                except Exception as exc:  # noqa: BLE001 - every other failure of a searcher is counted and reported
                    failures.append(repr(exc))
            rebuild_s = time.monotonic() - t0
            out, err = child.communicate()
            if child.returncode != 0:
                sys.exit(f"error: the rebuild failed: {err.strip()}")
            stats: dict[str, Any] = json.loads(out)
        finally:
            server.kill()
            server.wait()

    missed = sum(1 for _, ok in during if not ok) + sum(1 for _, ok in at_rest if not ok)
    failed = len(failures) + missed
    rest_ms = [ms for ms, _ in at_rest]
    during_ms = [ms for ms, _ in during]
    result = {
        "machine": machine(),
        "notes": n,
        "server_delay_s": args.delay,
        "initial_index_s": round(build_s, 1),
        "rebuild_s": round(rebuild_s, 1),
        "chunks_embedded": stats["chunks_embedded"],
        "searches_during": len(during),
        "searches_after_switch": after_switch,
        "failed_searches": failed,
        "failures": failures[:5],
        "latency_ms": {
            "rest_median": round(median(rest_ms), 2),
            "rest_p95": round(pct(rest_ms, 0.95), 2),
            "during_median": round(median(during_ms), 2) if during_ms else None,
            "during_p95": round(pct(during_ms, 0.95), 2) if during_ms else None,
        },
        "pass": failed == 0 and len(during) > 0,
    }
    lat = result["latency_ms"]
    print(
        table(
            [
                ("", "searches", "median ms", "p95 ms"),
                ("at rest", str(len(rest_ms)), f"{lat['rest_median']:.1f}", f"{lat['rest_p95']:.1f}"),
                ("during rebuild", str(len(during_ms)), f"{lat['during_median']}", f"{lat['during_p95']}"),
            ]
        )
    )
    print(
        f"{n} notes, {stats['chunks_embedded']} chunks re-embedded in {rebuild_s:.1f}s; "
        f"failed searches: {failed} (bar 0) -> {verdict(bool(result['pass']))}"
    )
    print(f"results: {save('rebuild_background' + ('_quick' if args.quick else ''), result)}")


if __name__ == "__main__":
    main()
