"""The e5 quality tier's speed beside the bundled model, on the same chunk texts (issue 26 item 2).

The index's chunk texts of the first --docs SciFact abstracts, embedded in one process by the
bundled model (the provider, its batches) and by ``E5Tier`` at several batch sizes and text cuts
(characters kept: e5's cost grows with its tokens), the arms alternating A B C / C B A, the load
average beside each pass. Prints docs/s (chunks/s) per arm and the ratio to the bundled model.
A shorter cut is only a speed figure here: its effect on ranking is measured with `vaultlens eval`.

    cd bench && PYTHONPATH=../src ../.venv/bin/python e5_speed.py --docs 100 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from _common import machine, need_shared, save, table, temp_home


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100, help="SciFact abstracts (100)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batches", default="16,64", help="e5 batch sizes (16,64)")
    ap.add_argument("--cuts", default="2000,1000", help="e5 characters kept per text (2000,1000)")
    args = ap.parse_args()

    from index_overhead import Texts, write_vault
    from vaultlens.embedding.registry import make_provider
    from vaultlens.embedding.tiers.e5 import E5Tier
    from vaultlens.services.app import App

    tmp = temp_home("e5-speed")
    vault = Path(tmp.name) / "scifact"
    write_vault(need_shared("bench", "scifact", "corpus.jsonl"), vault, args.docs)
    settings = App.open(vault).settings
    texts = list(Texts(vault, settings).all().values())
    bundled = make_provider(settings.embedding)
    tier = E5Tier()
    tier.embed(["warm-up"])
    bundled.embed(["warm-up"])

    def in_batches(embed: Any, size: int, cut: int) -> None:
        for i in range(0, len(texts), size):
            embed([t[:cut] for t in texts[i : i + size]])

    arms: dict[str, Any] = {"bundled model": lambda: in_batches(bundled.embed, bundled.batch_size, 10**9)}
    for b in (int(x) for x in args.batches.split(",")):
        for c in (int(x) for x in args.cuts.split(",")):
            arms[f"e5, batch {b}, cut {c}"] = lambda b=b, c=c: in_batches(tier.embed, b, c)
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in arms}
    for r in range(args.rounds):
        for name in list(arms) if r % 2 == 0 else list(arms)[::-1]:
            load = os.getloadavg()[0]
            w, c = time.perf_counter(), time.process_time()
            arms[name]()
            runs[name].append(
                {"wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c, "load": load}
            )
            print(
                f"  round {r + 1} {name:26} wall {runs[name][-1]['wall_s']:6.1f}s load {load:.1f}", flush=True
            )
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
