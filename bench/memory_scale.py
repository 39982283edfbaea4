"""Memory at 50,000 notes: a first `index`, and `serve` with its watcher answering searches.

The vault: 50,000 seeded notes of 4 sections each (~3,700 characters, 4 chunks a note: 200,000
chunks, past the default ``search.ann_threshold`` of 100,000, so `serve` searches through the ANN
tier). Embeddings come from vaultlens.testing's hashing provider (``embedding.provider = fake``,
512 dimensions like the bundled model): the bundled model would need hours for 200,000 chunks on this
shared machine, and what is measured is the index's and the server's memory, not the model's (the
model's own ~100 MB is not in these figures; add it for a real run).

* ``index``: `vaultlens index` in a child process, peak RSS (VmHWM) and wall time;
* ``serve``: `vaultlens serve` (watcher on) in a child process; 50 searches over HTTP after it is
  ready (the first builds the ANN tier, then saved); RSS after them, split into anonymous memory
  (the process's own) and file-backed pages (the memory-mapped matrix cache and ANN graph: the
  kernel's to drop under pressure, not pinned), and the resident MB of each mapping (/proc/PID/smaps).

Usage: .venv/bin/python bench/memory_scale.py [--notes 50000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import contextlib

from _common import machine, save

SETTINGS = ["--set", "embedding.provider=fake", "--set", "embedding.dimensions=512"]
RUN = [
    sys.executable,
    "-c",
    "import sys, vaultlens.testing; from vaultlens.cli.main import main; sys.exit(main())",
]
WORDS = [
    "bread",
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
    "garden",
    "tomato",
    "marathon",
    "chess",
]


def write_vault(root: Path, n: int) -> None:
    rng = random.Random(7)
    for i in range(n):
        folder = root / f"area {i % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        parts = [f"# Note {i:05d}", ""]
        for s in range(4):
            parts += [f"## Part {s}", "", " ".join(rng.choice(WORDS) for _ in range(150)) + ".", ""]
        (folder / f"Note {i:05d}.md").write_text("\n".join(parts), encoding="utf-8")


def status(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = round(int(line.split()[1]) / 1024, 1)
    return out


def mapped(pid: int, top: int = 8) -> dict[str, float]:
    """Resident MB per mapping of ``pid`` from /proc/PID/smaps: the largest file-backed ones by name
    (the ANN graph, the matrix cache, the libraries), all anonymous memory together."""
    rss: dict[str, float] = {}
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split(maxsplit=5)
        if len(first) >= 5 and "-" in first[0] and not first[0].endswith(":"):
            name = first[5] if len(first) == 6 and first[5].startswith("/") else "[anonymous]"
        elif first and first[0] == "Rss:":
            rss[name] = rss.get(name, 0.0) + int(first[1]) / 1024
    files = sorted(((v, k) for k, v in rss.items() if k != "[anonymous]"), reverse=True)
    out = {Path(k).name: round(v, 1) for v, k in files[:top]}
    out["other files"] = round(sum(v for v, _ in files[top:]), 1)
    out["[anonymous]"] = round(rss.get("[anonymous]", 0.0), 1)
    return out


def peak_of(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of a child process, polled from /proc until it exits."""
    t = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0.0
    while proc.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            peak = max(peak, status(proc.pid).get("VmHWM", 0.0))
        time.sleep(0.2)
    if proc.returncode != 0:
        sys.exit(f"{cmd} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return time.monotonic() - t, peak


def main() -> None:
    import httpx

    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=50_000)
    ap.add_argument("--keep", type=Path, default=Path("/tmp/vaultlens-memory-scale"))
    ap.add_argument("--searches", type=int, default=50)
    args = ap.parse_args()
    vault, home = args.keep / "vault", args.keep / "home"
    env = {**os.environ, "VAULTLENS_HOME": str(home), "COLUMNS": "200"}
    out: dict[str, Any] = {"notes": args.notes, "load_start": round(os.getloadavg()[0], 2)}
    if not vault.exists():
        write_vault(vault, args.notes)
    if not any(home.rglob("index.sqlite")):
        seconds, peak = peak_of([*RUN, "index", "--vault", str(vault), *SETTINGS], env)
        out["index"] = {
            "seconds": round(seconds, 1),
            "peak_rss_mb": peak,
            "load": round(os.getloadavg()[0], 2),
        }
        print("index", out["index"], flush=True)
    port = 8700 + os.getpid() % 200
    log = args.keep / "serve.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [*RUN, "serve", "--vault", str(vault), "--port", str(port), *SETTINGS],
            env=env,
            stdout=fh,
            stderr=fh,
        )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=1800) as http:
            deadline = time.monotonic() + 600
            while True:
                try:
                    if http.get("/v1/status").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or proc.poll() is not None:
                    sys.exit("serve did not come up: " + log.read_text()[-2000:])
                time.sleep(1)
            out["serve_ready"] = status(proc.pid)
            t = time.monotonic()
            http.get("/v1/status")
            out["status_ms"] = round((time.monotonic() - t) * 1000, 1)
            rng = random.Random(3)
            times = []
            for _ in range(args.searches):
                q = " ".join(rng.choice(WORDS) for _ in range(3))
                t = time.monotonic()
                assert http.get("/v1/search", params={"q": q}).status_code == 200
                times.append(time.monotonic() - t)
            out["first_search_s"] = round(times[0], 1)
            out["search_median_ms"] = round(sorted(times[1:])[len(times) // 2] * 1000, 1)
            out["serve_after_searches"] = status(proc.pid)
            out["serve_mappings_mb"] = mapped(proc.pid)
            out["load_end"] = round(os.getloadavg()[0], 2)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    print(out, flush=True)
    save("memory_scale", {"machine": machine(), **out})


if __name__ == "__main__":
    main()
