#!/usr/bin/env python3
"""Search quality on every labelled set, the default against each lever, in one run (issue 44).

    PYTHONPATH=src .venv/bin/python bench/quality_levers.py                  # every set but SciFact
    PYTHONPATH=src .venv/bin/python bench/quality_levers.py --scifact        # SciFact too (minutes)
    PYTHONPATH=src .venv/bin/python bench/quality_levers.py --set docs --lever default --lever "tier across 0.5"
    PYTHONPATH=src .venv/bin/python bench/quality_levers.py --json out.json  # also every query's rank

Sets: ``personal`` and ``examples`` (this repository's eval/, their own tune/held split), ``shared``
(ru-wiki and kepano, ../shared/eval/queries.jsonl) and ``docs`` (fastapi-docs,
../shared/eval/queries-docs.jsonl), whose lines carry no split: the 1st, 3rd, ... line is tune, as
``eval queries`` reads "half 1"; ``scifact`` (../shared/bench/scifact, BEIR) with ``--scifact``, and
``cranfield`` (../shared/bench/cranfield, BEIR: 1,400 aeronautics abstracts, 225 queries, graded
judgements) only when named with ``--set``.

Each vault is indexed once with the default settings (``embedding.tier = auto`` fills the tier it
picks) under a kept VAULTLENS_HOME (bench/results/cache/quality_levers; indexing is incremental, so a
second run only searches), then every lever searches the same index: a lever is query-time only, a
search setting changed (``search.max_lexical_weight = 0``: lexical off), the tier left out of the
search, or one rule of the fusion switched off (a constant or function of its module replaced for the
lever's searches: the rules have no setting of their own). ``coverage off`` and ``script rule off``
act only where a query's candidates are in both languages, ``everyday words off`` only in a vault
written in both (services/finding/evidence.py): elsewhere they rank as the default. Each query is
searched as ``vaultlens eval queries`` searches it (20 notes, one section each; BEIR: 100) through
:func:`vaultlens.services.finding.search.rank_notes`, the function ``search`` calls, with the lever's
settings.

Printed: one Markdown table per set and group, a row per lever: hit@1 / hit@3 / hit@5 and MRR on the
whole group, hit@1 / hit@3 / hit@5 on each split, and ``weak``: the right first answers flagged weak, of all
right first answers; a BEIR set: nDCG@10 (and per half), Recall@100, MRR@10.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _common import REPO, SHARED, cached_home
from vaultlens.index.indexing.tier_fill import stored_scripts
from vaultlens.services.app import App
from vaultlens.services.finding import evidence
from vaultlens.services.finding.search import NoteHit, rank_notes
from vaultlens.services.inspecting import evaluation
from vaultlens.services.verbs.indexing import index

QUERY_SETS = {
    "personal": REPO / "eval" / "personal" / "queries.jsonl",
    "examples": REPO / "eval" / "examples" / "queries.jsonl",
    "shared": SHARED / "eval" / "queries.jsonl",
    "docs": SHARED / "eval" / "queries-docs.jsonl",
}
BEIR_SETS = {"scifact": SHARED / "bench" / "scifact", "cranfield": SHARED / "bench" / "cranfield"}
DEPTH = 20  # notes a labelled query asks for, as `eval queries` does
BEIR_DEPTH = 100


@dataclasses.dataclass(frozen=True)
class Lever:
    """One way of searching the same index: search settings, the tier on or off, and module constants."""

    search: dict[str, Any] = dataclasses.field(default_factory=dict)  # SearchSettings fields
    tier: bool = True
    patches: dict[str, Any] = dataclasses.field(default_factory=dict)  # "module:NAME" -> value
    # SearchSettings fields set only in a vault written in one language (evidence.two_languages false)
    one_language: dict[str, Any] = dataclasses.field(default_factory=dict)


LEVERS: dict[str, Lever] = {
    "default": Lever(),
    "lexical off": Lever(search={"max_lexical_weight": 0.0}),
    "tier off": Lever(tier=False),
    "everyday words off": Lever(patches={"vaultlens.index.lexical:COMMON_WORDS": 0}),
    # the rule before it was gated by the vault's languages (services/finding/evidence.py, two_languages)
    "everyday words in every vault": Lever(
        patches={"vaultlens.services.finding.evidence:two_languages": lambda _: True}
    ),
    "coverage off": Lever(patches={"vaultlens.services.finding.evidence:BILINGUAL_SHARE": 2.0}),
    "script rule off": Lever(patches={"vaultlens.services.finding.evidence:PASSING_SHARE": 0.0}),
    "tier across 0.25": Lever(search={"tier_weight_across": 0.25}),
    "tier across 0.5": Lever(search={"tier_weight_across": 0.5}),
    "tier within 0.25": Lever(search={"tier_weight": 0.25}),
    "tier within 0.65": Lever(search={"tier_weight": 0.65}),
    "tier within 0.8": Lever(search={"tier_weight": 0.8}),
    # the tier's weight within a language by the vault: more in a vault of one language, 0.5 in one
    # written in both (not adopted: e5 on Russian documentation lost docs en→ru hit@5; docs/benchmarks.md)
    "tier within 0.65 in one language": Lever(one_language={"tier_weight": 0.65}),
    "tier within 0.8 in one language": Lever(one_language={"tier_weight": 0.8}),
    # a tier of one language (minilm-en) has its own weight, search.one_language_tier_weight (0.65)
    "one-language tier 0.5": Lever(search={"one_language_tier_weight": 0.5}),
    "one-language tier 0.8": Lever(search={"one_language_tier_weight": 0.8}),
    # the lexical part's maximum beside such a tier, search.one_language_max_lexical_weight (0.6; 0.8 before,
    # search.max_lexical_weight's value: measured against the bundled model alone)
    "one-language lexical 0.8": Lever(search={"one_language_max_lexical_weight": 0.8}),
    "one-language lexical 0.7": Lever(search={"one_language_max_lexical_weight": 0.7}),
    "one-language lexical 0.5": Lever(search={"one_language_max_lexical_weight": 0.5}),
    # the same maximum in every vault of one language, whatever its tier (e5 on fastapi-docs/ru too)
    "lexical 0.6 in one-language vault": Lever(one_language={"max_lexical_weight": 0.6}),
    "candidates 400": Lever(search={"candidates": 400}),
}


@contextlib.contextmanager
def patched(patches: dict[str, Any]) -> Iterator[None]:
    """Module constants set for the duration, then put back; caches that read them are cleared."""
    saved = []
    for target, value in patches.items():
        module_name, name = target.split(":")
        module = importlib.import_module(module_name)
        if not hasattr(module, name):
            raise SystemExit(f"error: lever patch {target}: {module_name} has no {name} (the code moved?)")
        saved.append((module, name, getattr(module, name)))
        setattr(module, name, value)
    _clear_caches()
    try:
        yield
    finally:
        for module, name, value in reversed(saved):
            setattr(module, name, value)
        _clear_caches()


def _clear_caches() -> None:
    from vaultlens.index import lexical

    for fn in vars(lexical).values():
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()


class Vault:
    """One indexed vault, searched with a lever's settings."""

    def __init__(self, path: Path) -> None:
        self.app = App.open(path, {})
        started = time.monotonic()
        index(self.app)
        print(f"  indexed {path} ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)

    def search(self, lever: Lever, query: str, limit: int) -> list[NoteHit]:
        app = self.app
        with app.reading() as store:
            one = lever.one_language if not evidence.two_languages(stored_scripts(store)) else {}
            tier = app.search_tier(store) if lever.tier else None
            s = dataclasses.replace(app.settings.search, **lever.search, **one)
            return rank_notes(store, app.provider(), query, s, limit, 1, tier)


def groups_of(q: dict[str, Any], several_vaults: bool) -> list[str]:
    direction = f"{q['lang']}→{evaluation.note_language(q)}"
    label = f"{evaluation.vault_label(q['vault'])} {direction}" if several_vaults else direction
    return [label, "all"]


def run_queries(name: str, lever: Lever, vaults: dict[str, Vault]) -> list[dict[str, Any]]:
    """Each query of set ``name`` with its split, groups, rank of the first relevant note (None past
    DEPTH) and whether a right first answer was flagged weak."""
    path = QUERY_SETS[name]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    several = len({evaluation.vault_label(q["vault"]) for q in rows}) > 1
    out = []
    for position, q in enumerate(rows):
        if q["vault"] not in vaults:
            vaults[q["vault"]] = Vault(path.parent.parent / q["vault"])
        hits = vaults[q["vault"]].search(lever, q["query"], DEPTH)
        ranked = [h.path for h in hits]
        rank = next((i + 1 for i, p in enumerate(ranked) if p in q["relevant"]), None)
        out.append(
            {
                "id": q.get("id", str(position)),
                "split": q.get("split") or ("held" if position % 2 else "tune"),
                "groups": groups_of(q, several),
                "rank": rank,
                "weak": bool(rank == 1 and hits[0].weak),
            }
        )
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    ranks = [r["rank"] for r in rows]

    def hit(k: int, part: list[int | None]) -> float:
        return sum(1 for r in part if r is not None and r <= k) / len(part) if part else 0.0

    by_split = {s: [r["rank"] for r in rows if r["split"] == s] for s in ("tune", "held")}
    return {
        "n": n,
        **{f"hit@{k}": hit(k, ranks) for k in (1, 3, 5)},
        "mrr": sum(1 / r for r in ranks if r) / n if n else 0.0,
        **{f"{s} hit@{k}": hit(k, part) for s, part in by_split.items() for k in (1, 3, 5)},
        **{f"{s} n": len(part) for s, part in by_split.items()},
        "weak": sum(r["weak"] for r in rows),
        "right first": sum(1 for r in ranks if r == 1),
    }


def split_cells(f: dict[str, Any], split: str) -> str:
    return " / ".join(f"{f[f'{split} hit@{k}']:.2f}" for k in (1, 3, 5))


def query_tables(name: str, results: dict[str, list[dict[str, Any]]]) -> str:
    groups = list(dict.fromkeys(g for rows in results.values() for r in rows for g in r["groups"]))
    groups.sort(key=lambda g: (g == "all", g))
    out = []
    for group in groups:
        first = summary([r for r in next(iter(results.values())) if group in r["groups"]])
        out += [
            f"\n{name}, {group} (n {first['n']}: tune {first['tune n']}, held {first['held n']})\n",
            "| lever | hit@1 | hit@3 | hit@5 | MRR | tune hit@1 / 3 / 5 | held hit@1 / 3 / 5 | weak |",
            "|---|---:|---:|---:|---:|---|---|---|",
        ]
        for lever, rows in results.items():
            f = summary([r for r in rows if group in r["groups"]])
            out.append(
                f"| {lever} | {f['hit@1']:.3f} | {f['hit@3']:.3f} | {f['hit@5']:.3f} | {f['mrr']:.3f} | "
                f"{split_cells(f, 'tune')} | {split_cells(f, 'held')} | "
                f"{f['weak']}/{f['right first']} |"
            )
    return "\n".join(out)


def run_beir(name: str, lever: Lever, vaults: dict[str, Vault], work: Path) -> dict[str, float]:
    def open_vault(folder: Path) -> Callable[[str, int], list[NoteHit]]:
        if name not in vaults:
            vaults[name] = Vault(folder)
        return lambda query, limit: vaults[name].search(lever, query, limit)

    (score,) = evaluation.eval_beir(BEIR_SETS[name], work, open_vault)
    return score.metrics


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", dest="sets", action="append", choices=[*QUERY_SETS, *BEIR_SETS])
    parser.add_argument("--scifact", action="store_true", help="also SciFact (300 queries, 5,183 notes)")
    parser.add_argument("--lever", dest="levers", action="append", choices=list(LEVERS))
    parser.add_argument("--fresh", action="store_true", help="index every vault again from nothing")
    parser.add_argument("--json", type=Path, help="write every query's rank per set and lever here")
    args = parser.parse_args()
    home = cached_home("quality_levers", args.fresh)
    sets = args.sets or [s for s, p in QUERY_SETS.items() if p.is_file()] + (["scifact"] * args.scifact)
    levers = {name: LEVERS[name] for name in (args.levers or LEVERS)}
    print(f"# bench/quality_levers.py, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, home {home}")
    record: dict[str, Any] = {}
    for name in sets:
        vaults: dict[str, Vault] = {}
        results: dict[str, Any] = {}
        for lever_name, lever in levers.items():
            started = time.monotonic()
            with patched(lever.patches):
                if name in BEIR_SETS:
                    results[lever_name] = run_beir(name, lever, vaults, home / "eval")
                else:
                    results[lever_name] = run_queries(name, lever, vaults)
            print(f"  {name} / {lever_name}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        if name in BEIR_SETS:
            print(f"\n{name} (BEIR test split; h1 / h2: the queries of odd / even lines of qrels)\n")
            print("| lever | nDCG@10 | nDCG@10 h1 / h2 | Recall@100 | MRR@10 |\n|---|---:|---|---:|---:|")
            for lever_name, m in results.items():
                print(
                    f"| {lever_name} | {m['ndcg@10']:.3f} | {m['ndcg@10 h1']:.3f} / {m['ndcg@10 h2']:.3f} | "
                    f"{m['recall@100']:.3f} | {m['mrr@10']:.3f} |"
                )
        else:
            print(query_tables(name, results), flush=True)
        record[name] = results
        for vault in vaults.values():
            vault.app.close()
    if args.json:
        args.json.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
