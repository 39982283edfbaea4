"""What a remote quality tier (``embedding.tier = "ollama:MODEL"``) costs a search and an index run
when its server answers, is down, or is slow, against the bundled model alone in the same run.

The tier's server is the scripted loopback server (tests/scripted_server.py) in its own process,
always on the same port, so the index's tier vectors stay valid across its states: up (answers at
once: what vaultlens itself adds), down (nothing listens: connection refused), slow (every answer
waits longer than ``embedding.tier_timeout_s``). Searches run in this process through the
``search`` verb with the real bundled model; each state's queries are timed after a warm-up, and
"off" (the tier switched off on the same index) is the baseline. Index: one added note, the tier
down, with the default retries, against the same with the tier off.

Usage: .venv/bin/python bench/tier_remote.py [--notes N] [--queries N] [--timeout S]
"""

from __future__ import annotations

import argparse
import socket
import time
from collections.abc import Callable
from pathlib import Path

import vaultlens as services
from _common import machine, median, pct, save, table, temp_home, verdict
from _spaces import WORDS, start_server, write_notes
from vaultlens.services.app import App


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(run: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        run()
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=0.5, help="embedding.tier_timeout_s for the slow state")
    args = ap.parse_args()
    with temp_home("tier-remote") as tmp:
        vault = Path(tmp) / "vault"
        write_notes(vault, args.notes, seed=7)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        tier = {"embedding.tier": "ollama:bench-model", "embedding.tier_endpoint": url}
        slow_tier = {**tier, "embedding.tier_timeout_s": str(args.timeout)}
        queries = [f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7 + 3) % len(WORDS)]}" for i in range(args.queries)]
        ms: dict[str, list[float]] = {}

        def searches(name: str, overrides: dict[str, str], n: int) -> None:
            app = App.open(vault, overrides)
            services.search(app, "warm up")  # the model and the first connection
            hits = services.search(app, queries[0])
            print(f"{name}: notices {list(hits.notices)[:1]}")
            ms[name] = [t for q in queries[:n] for t in timed(lambda q=q: services.search(app, q), 1)]
            app.close()

        proc, _ = start_server(dims=64, delay=0.0, port=port)
        try:
            started = time.perf_counter()
            services.index(App.open(vault, tier))
            first_index_s = time.perf_counter() - started
            searches("off", {"embedding.tier": "off"}, args.queries)
            searches("up", tier, args.queries)
        finally:
            proc.kill()
            proc.wait()
        searches("down", tier, args.queries)
        proc, _ = start_server(dims=64, delay=args.timeout * 4, port=port)
        try:
            searches("slow", slow_tier, max(3, args.queries // 5))
        finally:
            proc.kill()
            proc.wait()

        index_s: dict[str, float] = {}
        for name, overrides in (("off", {"embedding.tier": "off"}), ("down", tier)):
            (vault / f"added-{name}.md").write_text(f"# Added\n\nA note added with the tier {name}.\n")
            app = App.open(vault, overrides)
            started = time.perf_counter()
            stats = services.index(app)
            index_s[name] = time.perf_counter() - started
            print(f"index, tier {name}: {index_s[name]:.2f} s, tier_error {stats.tier_error!r}")
            app.close()

    base = median(ms["off"])
    rows = [("search", "p50 ms", "p95 ms", "x off")]
    for name in ("off", "up", "down", "slow"):
        rows.append(
            (name, f"{median(ms[name]):.1f}", f"{pct(ms[name], 0.95):.1f}", f"{median(ms[name]) / base:.2f}")
        )
    print(table(rows))
    print(f"index of one added note: off {index_s['off']:.2f} s, tier server down {index_s['down']:.2f} s")
    bounded = median(ms["slow"]) < args.timeout * 1000 + base + 100
    print(f"slow server bounded by tier_timeout_s ({args.timeout} s): {verdict(bounded)}")
    save(
        "tier_remote",
        {
            "machine": machine(),
            "notes": args.notes,
            "first_index_s": round(first_index_s, 2),
            "search_ms": {
                k: {"p50": round(median(v), 2), "p95": round(pct(v, 0.95), 2)} for k, v in ms.items()
            },
            "index_one_note_s": {k: round(v, 2) for k, v in index_s.items()},
            "tier_timeout_s": args.timeout,
        },
    )


if __name__ == "__main__":
    main()
