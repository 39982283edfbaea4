"""Where an index run's wall time goes against its model: each provider call timed inside `index`.

In one process: the bundled model loaded and warmed, then an in-process `index` of a synthetic vault
(bench/audit_structure.py's generator; the quality tier off) with the provider's ``embed`` wrapped to
record every call, and the raw ``embed`` of the same chunk texts in the same batches, alternating.
Printed per index run: when the first model call started, how long the model was busy, the gaps
between its calls and after the last one, beside the raw embedding's wall. A model busy for the whole
run means nothing in the run is serial with it; a busy time above the raw embedding's means the model
ran slower beside the indexer's own work::

    cd bench && PYTHONPATH=../src ../.venv/bin/python index_timeline.py --notes 2000 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from _common import machine, save, temp_home
from audit_structure import generate
from index_overhead import Texts, run_raw


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    import vaultlens as services
    from vaultlens.embedding.registry import make_provider
    from vaultlens.services.app import App

    tmp = temp_home("index-timeline")
    root = Path(tmp.name)
    vault = root / "vault"
    vault.mkdir()
    generate(vault, args.notes)
    overrides = {"embedding.tier": "off"}
    settings = App.open(vault, overrides).settings
    texts = list(Texts(vault, settings).all().values())
    provider = make_provider(settings.embedding)
    provider.embed(["warm-up"])
    calls: list[tuple[float, float]] = []
    real = type(provider).embed

    def timed_embed(self: Any, batch: Any) -> Any:
        started = time.perf_counter()
        out = real(self, batch)
        calls.append((started, time.perf_counter()))
        return out

    type(provider).embed = timed_embed  # type: ignore[method-assign]
    runs: list[dict[str, Any]] = []
    for r in range(args.rounds):
        calls.clear()
        raw = run_raw(lambda: provider, texts)["wall_s"]
        calls.clear()
        os.environ["VAULTLENS_HOME"] = str(root / f"home-{r}")
        t0 = time.perf_counter()
        app = App.open(vault, overrides, provider=provider)
        try:
            services.index(app)
        finally:
            app.close()
        wall = time.perf_counter() - t0
        run = {
            "index_wall_s": round(wall, 2),
            "raw_embed_wall_s": round(raw, 2),
            "model_calls": len(calls),
            "first_call_at_s": round(calls[0][0] - t0, 3),
            "model_busy_s": round(sum(e - s for s, e in calls), 2),
            "gaps_between_calls_s": round(
                sum(calls[i + 1][0] - calls[i][1] for i in range(len(calls) - 1)), 3
            ),
            "after_last_call_s": round(t0 + wall - calls[-1][1], 3),
            "load": round(os.getloadavg()[0], 2),
        }
        runs.append(run)
        print(run, flush=True)
    print(f"result: {save('index_timeline', {'machine': machine(), 'notes': args.notes, 'runs': runs})}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
