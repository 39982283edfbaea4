#!/usr/bin/env python3
"""Measure search on this repository's labelled query sets and record the figures.

    PYTHONPATH=src python eval/quality.py                      # print: every set, both configurations
    PYTHONPATH=src python eval/quality.py --write              # also write each set's recorded.json
    PYTHONPATH=src python eval/quality.py --set personal --config off

Each set is a queries file in the ``eval queries`` form plus a ``split`` field: ``personal`` and
``examples`` in ``eval/<set>/``, ``shared`` the ru-wiki and kepano set in ``../shared/eval/`` (its
lines have no split: the 1st, 3rd, ... line is tune, as ``eval queries`` reads "half 1"). Its
figures go to ``eval/<set>/recorded.json``. Each vault is indexed under a fresh ``VAULTLENS_HOME`` with the default settings and no user
config, once per configuration (``auto``: the defaults, ``embedding.tier = auto``; ``off``:
``embedding.tier = off``), and each query is searched as ``vaultlens eval queries`` searches it.
The figures are hit counts (hit@1, hit@3, hit@5) and MRR per split (tune, held, all) and group
(en→en, ru→ru, en→ru, ru→en, all), plus each query's rank, so a later run can be compared query
by query. tests/test_quality_floor.py reads the recorded counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

EVAL = Path(__file__).resolve().parent
QUERIES = {
    "personal": EVAL / "personal" / "queries.jsonl",
    "examples": EVAL / "examples" / "queries.jsonl",
    "shared": EVAL.parent.parent / "shared" / "eval" / "queries.jsonl",
}
SETS = tuple(QUERIES)
CONFIGS: dict[str, dict[str, str]] = {"auto": {"embedding.tier": "auto"}, "off": {"embedding.tier": "off"}}
GROUPS = ("en→en", "ru→ru", "en→ru", "ru→en", "all")
SPLITS = ("tune", "held", "all")
DEPTH = 20  # notes a query asks for, as `eval queries` does


def queries_of(name: str) -> tuple[Path, list[dict[str, Any]]]:
    path = QUERIES[name]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for position, q in enumerate(rows):
        q.setdefault("split", "held" if position % 2 else "tune")
    return path, rows


def direction(q: dict[str, Any]) -> str:
    from vaultlens.services.inspecting.evaluation import note_language

    return f"{q['lang']}→{note_language(q)}"


def ranks(name: str, overrides: dict[str, str]) -> dict[str, int | None]:
    """Each query's rank of its first relevant note (1-based; None past ``DEPTH``), on a vault
    indexed under the caller's VAULTLENS_HOME."""
    from vaultlens.services.app import App
    from vaultlens.services.verbs.finding import search
    from vaultlens.services.verbs.indexing import index

    path, rows = queries_of(name)
    apps: dict[str, App] = {}
    found: dict[str, int | None] = {}
    for q in rows:
        if q["vault"] not in apps:
            apps[q["vault"]] = App.open(path.parent.parent / q["vault"], dict(overrides))
            index(apps[q["vault"]])
        hits = [h.path for h in search(apps[q["vault"]], q["query"], DEPTH, sections=1)]
        found[q["id"]] = next((i + 1 for i, p in enumerate(hits) if p in q["relevant"]), None)
    return found


def fresh_ranks(name: str, overrides: dict[str, str]) -> dict[str, int | None]:
    """``ranks`` in a fresh VAULTLENS_HOME, with no user config file and no VAULTLENS_* setting."""
    for var in [v for v in os.environ if v.startswith("VAULTLENS_")]:
        del os.environ[var]
    with tempfile.TemporaryDirectory(prefix="vaultlens-quality-") as home:
        os.environ["VAULTLENS_HOME"] = home
        os.environ["VAULTLENS_CONFIG"] = str(Path(home) / "absent.toml")
        return ranks(name, overrides)


def figures(name: str, found: dict[str, int | None]) -> dict[str, dict[str, dict[str, float]]]:
    """split → group → n, hit@1, hit@3, hit@5 (counts) and mrr (mean, 4 places)."""
    _, rows = queries_of(name)
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for split in SPLITS:
        for group in GROUPS:
            picked = [
                found[q["id"]]
                for q in rows
                if split in ("all", q["split"]) and group in ("all", direction(q))
            ]
            out[split][group] = {
                "n": len(picked),
                **{f"hit@{k}": sum(1 for r in picked if r is not None and r <= k) for k in (1, 3, 5)},
                "mrr": round(sum(1 / r for r in picked if r) / len(picked), 4) if picked else 0.0,
            }
    return dict(out)


def main_commit() -> str:
    """The main commit this tree stands on (HEAD where there is no main branch)."""
    for args in (["merge-base", "HEAD", "main"], ["rev-parse", "HEAD"]):
        try:
            return subprocess.run(
                ["git", *args], cwd=EVAL, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            continue
    return "unknown"


def table(name: str, config: str, figs: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = [f"{name} / {config}", "split  group   n   hit@1  hit@3  hit@5  MRR"]
    for split, groups in figs.items():
        for group, f in groups.items():
            n = f["n"] or 1
            lines.append(
                f"{split:<6} {group:<6} {f['n']:>3}  {f['hit@1'] / n:.3f}  {f['hit@3'] / n:.3f}  "
                f"{f['hit@5'] / n:.3f}  {f['mrr']:.3f}"
            )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", dest="sets", action="append", choices=SETS, help="a set (default: all)")
    parser.add_argument("--config", dest="configs", action="append", choices=list(CONFIGS))
    parser.add_argument("--write", action="store_true", help="write eval/<set>/recorded.json")
    args = parser.parse_args()
    for name in args.sets or [s for s in SETS if QUERIES[s].is_file()]:
        record: dict[str, Any] = {
            "what": "search quality on this set: hits counts and n per configuration, split and group",
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "commit": main_commit(),
            "command": f"PYTHONPATH=src python eval/quality.py --set {name} --write",
            "queries": os.path.relpath(QUERIES[name], EVAL.parent),
            "configs": {},
        }
        for config in args.configs or list(CONFIGS):
            started = time.monotonic()
            found = fresh_ranks(name, CONFIGS[config])
            figs = figures(name, found)
            print(table(name, config, figs), f"\n({time.monotonic() - started:.0f} s)\n", flush=True)
            record["configs"][config] = {"overrides": CONFIGS[config], "splits": figs, "ranks": found}
        if args.write:
            out = EVAL / name / "recorded.json"
            out.parent.mkdir(exist_ok=True)
            if out.exists() and (args.configs or args.sets):  # keep the configurations not re-run
                kept = json.loads(out.read_text(encoding="utf-8"))["configs"]
                record["configs"] = {**kept, **record["configs"]}
            out.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
