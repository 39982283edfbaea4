"""minilm-en's batching and threads on this machine: SciFact abstracts (title and text, as the
indexer embeds them) through ``MiniLMTier`` at several token budgets and thread counts, A B C ...
repeated, each pass's texts/s beside the load average and as a ratio to the first configuration
(one text per run, 2 threads) measured in the same round::

    cd bench && ../.venv/bin/python tier_speed.py               # 400 abstracts, 3 rounds
    cd bench && ../.venv/bin/python tier_speed.py --docs 200 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import time

from _common import machine, need_shared, save, table

CONFIGS = [(256, 2), (2048, 2), (4096, 2), (8192, 2), (2048, 1)]  # (token budget, threads); first = baseline


def abstracts(limit: int) -> list[str]:
    out = []
    with need_shared("bench", "scifact", "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            out.append(f"{doc.get('title', '')}\n{doc['text']}")
            if len(out) >= limit:
                break
    return out


def main() -> None:
    from vaultlens.embedding.tiers.minilm import MiniLMTier

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    texts = abstracts(args.docs)
    tiers = {
        (budget, threads): MiniLMTier(threads=threads, token_budget=budget) for budget, threads in CONFIGS
    }
    for tier in tiers.values():
        tier.embed(texts[:8])  # load the model and warm the session up
    rows: list[tuple[str, ...]] = [("round", "token budget", "threads", "texts/s", "x baseline", "load")]
    results: dict[str, list[float]] = {f"{b} tokens, {t} threads": [] for b, t in CONFIGS}
    for r in range(args.rounds):
        base = 0.0
        for (budget, threads), tier in tiers.items():
            load = os.getloadavg()[0]
            started = time.perf_counter()
            tier.embed(texts)
            rate = len(texts) / (time.perf_counter() - started)
            base = base or rate
            results[f"{budget} tokens, {threads} threads"].append(rate)
            rows.append(
                (str(r + 1), str(budget), str(threads), f"{rate:.1f}", f"{rate / base:.2f}x", f"{load:.1f}")
            )
            print(rows[-1], flush=True)
    print(table(rows))
    save("tier_speed", {"machine": machine(), "docs": len(texts), "texts_per_s": results})


if __name__ == "__main__":
    main()
