"""Quality of `vaultlens duplicates` on the labelled pairs of ../shared/eval/dup_pairs.jsonl.

Each vault named in the file (ru-wiki, kepano, dup-vault) is indexed with the bundled model into a
cache under bench/results/cache/dup-home (re-used on later runs: indexing is incremental), then
`duplicates` runs once per vault and threshold (sweep from --floor to 1.00 by 0.01) with no practical limit. A labelled pair counts
as *reported at threshold t* when its score is >= t, or when both notes are in the same exact group
(exact groups are reported whatever the threshold). Precision is computed on labelled pairs only
(label duplicate = positive; related and unrelated = negative); reported pairs that carry no label
are counted separately. The best threshold is the one with the highest F1 (ties: the higher t).

Usage: .venv/bin/python bench/duplicates_quality.py [--fresh] [--floor 0.6]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import RESULTS, machine, need_shared, save, table, verdict

DEFAULT_T = 0.95
Found = tuple[dict[frozenset[str], float], dict[frozenset[str], str]]


def load_pairs() -> list[dict[str, Any]]:
    path = need_shared("eval", "dup_pairs.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_vault(vault: Path, thresholds: list[float]) -> dict[float, Found]:
    """Index ``vault`` (incrementally), then run `duplicates` once per threshold.

    One run per threshold, not one low run filtered afterwards: a section that misses the
    threshold's floor counts as 0 in a note's coverage, so a pair's score depends on the threshold.
    """
    from vaultlens.services import app as services

    app = services.App.open(vault)
    out: dict[float, Found] = {}
    try:
        services.index(app)
        for t in thresholds:
            report = services.duplicates(app, threshold=t, limit=10**9)
            scores = {frozenset((p.a, p.b)): p.score for p in report.pairs}
            exact: dict[frozenset[str], str] = {}
            for g in report.exact:
                for a in g.paths:
                    for b in g.paths:
                        if a < b:
                            exact[frozenset((a, b))] = g.kind
            out[t] = (scores, exact)
    finally:
        app.close()
    return out


def evaluate(
    pairs: list[dict[str, Any]],
    found: dict[str, Found],
    t: float,
) -> dict[str, Any]:
    per_kind: dict[str, dict[str, int]] = defaultdict(lambda: {"n": 0, "reported": 0})
    tp = fp = fn = 0
    labelled: dict[str, set[frozenset[str]]] = defaultdict(set)
    wrong: list[str] = []
    for p in pairs:
        scores, exact = found[p["vault"]]
        key = frozenset((p["a"], p["b"]))
        labelled[p["vault"]].add(key)
        hit = key in exact or scores.get(key, -1.0) >= t
        k = per_kind[f"{p['label']}:{p['kind']}"]
        k["n"] += 1
        k["reported"] += int(hit)
        if p["label"] == "duplicate":
            tp += int(hit)
            fn += int(not hit)
        elif hit:
            fp += 1
            wrong.append(f"{p['label']}:{p['kind']} {p['a']} | {p['b']} ({scores.get(key, 'exact')})")
    unlabelled = sum(
        1
        for v, (scores, exact) in found.items()
        for key in {*(k for k, s in scores.items() if s >= t), *exact}
        if key not in labelled[v]
    )
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "threshold": t,
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "unlabelled_reported": unlabelled,
        "per_kind": dict(sorted(per_kind.items())),
        "false_positives": wrong,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh", action="store_true", help="Rebuild the cached indexes from scratch.")
    ap.add_argument("--floor", type=float, default=0.6, help="Lowest threshold asked of `duplicates`.")
    args = ap.parse_args()

    home = RESULTS / "cache" / "dup-home"
    if args.fresh and home.exists():
        shutil.rmtree(home)
    os.environ["VAULTLENS_HOME"] = str(home)
    for var in ("VAULTLENS_CONFIG", "VAULTLENS_VAULT"):
        os.environ.pop(var, None)

    pairs = load_pairs()
    sweep = [round(args.floor + 0.01 * i, 2) for i in range(int(round((1.0 - args.floor) / 0.01)) + 1)]
    if DEFAULT_T not in sweep:
        sweep.append(DEFAULT_T)
    runs = {v: run_vault(need_shared(*v.split("/")), sweep) for v in sorted({p["vault"] for p in pairs})}
    results = {t: evaluate(pairs, {v: r[t] for v, r in runs.items()}, t) for t in sweep}
    default = results[DEFAULT_T]
    best = max(results.values(), key=lambda r: (r["f1"], r["threshold"]))
    low = {v: r[min(sweep)] for v, r in runs.items()}  # scores at the lowest threshold, for margins
    found = {v: r[DEFAULT_T] for v, r in runs.items()}

    # every labelled pair's score, to see margins
    print(f"Labelled pairs and their scores at threshold {min(sweep)} (exact = in an exact group):")
    for p in sorted(pairs, key=lambda p: (p["label"], p["kind"])):
        scores, exact = low[p["vault"]]
        key = frozenset((p["a"], p["b"]))
        s = f"exact:{exact[key]}" if key in exact else (f"{scores[key]:.3f}" if key in scores else "-")
        print(f"  {p['label']:<9} {p['kind']:<34} {s:>16}  {p['vault'].split('/')[-1]}: {p['a']} | {p['b']}")

    kinds = sorted(default["per_kind"])
    rows: list[tuple[str, ...]] = [
        ("label:kind", "n", f"reported@{DEFAULT_T}", f"reported@{best['threshold']}")
    ]
    for k in kinds:
        d, b = default["per_kind"][k], best["per_kind"][k]
        rows.append((k, str(d["n"]), str(d["reported"]), str(b["reported"])))
    print()
    print(table(rows))
    print()
    summary = [("threshold", "precision", "recall", "F1", "TP", "FP", "FN", "unlabelled reported")]
    for r in (default, best):
        summary.append(
            (
                f"{r['threshold']:.2f}" + (" (default)" if r is default else " (best F1)"),
                f"{r['precision']:.3f}",
                f"{r['recall']:.3f}",
                f"{r['f1']:.3f}",
                str(r["tp"]),
                str(r["fp"]),
                str(r["fn"]),
                str(r["unlabelled_reported"]),
            )
        )
    print(table(summary))
    for r in (default, best):
        for w in r["false_positives"]:
            print(f"  false positive @{r['threshold']}: {w}")

    # the bars
    dv = found["eval/dup-vault"]
    copies = [
        p for p in pairs if p["vault"] == "eval/dup-vault" and p["kind"] in ("exact_copy", "crlf_bom_copy")
    ]
    copies_ok = all(frozenset((p["a"], p["b"])) in dv[1] for p in copies)
    unrelated_reported = sum(
        v["reported"] for k, v in default["per_kind"].items() if k.startswith("unrelated:")
    )
    trans = [p for p in pairs if p["kind"] == "translation_en"]
    trans_scores = [low[p["vault"]][0].get(frozenset((p["a"], p["b"])), 0.0) for p in trans]
    trans_default = results[DEFAULT_T]["per_kind"].get("duplicate:translation_en", {}).get("reported", 0)
    trans_at = max(
        (
            t
            for t in sweep
            if results[t]["per_kind"].get("duplicate:translation_en", {}).get("reported") == len(trans)
        ),
        default=0.0,
    )
    print()
    print(f"every exact and CRLF/BOM copy in dup-vault in an exact group: {verdict(copies_ok)}")
    print(f"no pair labelled unrelated reported at {DEFAULT_T}: {verdict(unrelated_reported == 0)}")
    print(
        f"translations found: {trans_default}/{len(trans)} at {DEFAULT_T}; all {len(trans)} at threshold "
        f"<= {trans_at:.2f} (scores {', '.join(f'{s:.3f}' for s in trans_scores)})"
    )
    out = save(
        "duplicates_quality",
        {
            "machine": machine(),
            "default": default,
            "best": best,
            "sweep": {
                str(t): {k: r[k] for k in ("precision", "recall", "f1", "fp", "fn")}
                for t, r in results.items()
            },
            "copies_found": copies_ok,
            "unrelated_reported_at_default": unrelated_reported,
            "translation_scores": trans_scores,
        },
    )
    print(f"\nresults: {out}")


if __name__ == "__main__":
    main()
