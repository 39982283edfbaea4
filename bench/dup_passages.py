"""Shared passages and every other kind of `vaultlens duplicates`: recall and precision per kind.

Sets, each indexed with the bundled model under bench/results/cache/dup-passages-home (indexing is
incremental, so later runs re-use it):

* bench/dup_passages_vault with bench/dup_passages_pairs.jsonl: importer pages that share the same
  install-and-run steps (verbatim and with small edits, in English and in Russian), a copied paragraph
  and a copied quote, beside an exact copy, a light edit, a contained note and a translation, among
  topically close notes that copy nothing. The vault is labelled whole: a reported pair that is not
  a labelled positive is a false one. A passage's lines are *right* when, on both sides, the reported
  passages cover at least LINES_MIN_COVER of the copied block's lines and reach at most LINES_SLACK
  lines past it.
* ../shared/eval/dup-vault with ../shared/eval/dup_pairs.jsonl (label `duplicate` a positive found
  as an exact group or a whole-note kind; `related` and `unrelated` reported as any kind are false);
  its pairs nobody labelled are listed.
* ../shared/vaults kepano, ru-wiki and fastapi-docs: pairs per kind, for reading (`--show` prints them).

Usage: .venv/bin/python bench/dup_passages.py [--fresh] [--show]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _common import REPO, cached_home, machine, need_shared, save, table, verdict

VAULT = REPO / "bench" / "dup_passages_vault"
LABELS = REPO / "bench" / "dup_passages_pairs.jsonl"
WHOLE = {"near_duplicate", "contained", "translation"}
LINES_MIN_COVER = 0.8
LINES_SLACK = 3
Lines = tuple[int, int]
Reported = dict[frozenset[str], tuple[str, dict[str, list[Lines]]]]


def run(vault: Path) -> Reported:
    """Every pair `duplicates` reports (exact groups as pairs), with its kind and, for a shared
    passage, the passages' lines in each note."""
    import vaultlens as services

    app = services.App.open(vault)
    try:
        services.index(app, consent=True)
        report = services.duplicates(app, limit=10**9)
    finally:
        app.close()
    out: Reported = {}
    for g in report.exact:
        for i, a in enumerate(g.paths):
            for b in g.paths[i + 1 :]:
                out[frozenset((a, b))] = ("exact", {})
    for p in report.pairs:
        out[frozenset((p.a, p.b))] = (p.kind, {})
    for p in report.shared_passages:
        lines = {
            p.a: [(q.a.start_line, q.a.end_line) for q in p.passages],
            p.b: [(q.b.start_line, q.b.end_line) for q in p.passages],
        }
        out[frozenset((p.a, p.b))] = ("shared_passage", lines)
    return out


def lines_right(want: Lines, got: list[Lines]) -> bool:
    size = want[1] - want[0] + 1
    covered = sum(max(0, min(want[1], hi) - max(want[0], lo) + 1) for lo, hi in got)
    low = min((lo for lo, _ in got), default=want[0])
    high = max((hi for _, hi in got), default=want[1])
    return (
        covered / size >= LINES_MIN_COVER and low >= want[0] - LINES_SLACK and high <= want[1] + LINES_SLACK
    )


def score_own(reported: Reported) -> dict[str, Any]:
    """Recall per labelled kind (and lines right, for passages); precision per reported kind."""
    labels = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    positives = {frozenset((p["a"], p["b"])): p for p in labels if p["expect"] != "none"}
    per_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for key, p in positives.items():
        kind, lines = reported.get(key, ("-", {}))
        c = per_kind[f"{p['expect']}: {p['kind']}"]
        c["n"] += 1
        c["found"] += kind == p["expect"]
        if kind == "shared_passage" == p["expect"]:
            c["lines"] += lines_right(tuple(p["lines_a"]), lines[p["a"]]) and lines_right(
                tuple(p["lines_b"]), lines[p["b"]]
            )
    per_reported: dict[str, Counter[str]] = defaultdict(Counter)
    false: list[str] = []
    for key, (kind, _) in reported.items():
        ok = key in positives and positives[key]["expect"] == kind
        per_reported[kind]["tp" if ok else "fp"] += 1
        if not ok:
            false.append(f"{kind}: {' | '.join(sorted(key))}")
    return {
        "per_kind": {k: dict(v) for k, v in sorted(per_kind.items())},
        "per_reported": {k: dict(v) for k, v in sorted(per_reported.items())},
        "false": sorted(false),
    }


def score_dup_vault(reported: Reported) -> dict[str, Any]:
    labels = [
        json.loads(line)
        for line in need_shared("eval", "dup_pairs.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip() and json.loads(line)["vault"] == "eval/dup-vault"
    ]
    per_kind: dict[str, Counter[str]] = defaultdict(Counter)
    per_reported: dict[str, Counter[str]] = defaultdict(Counter)
    labelled = set()
    false: list[str] = []
    for p in labels:
        key = frozenset((p["a"], p["b"]))
        labelled.add(key)
        kind = reported.get(key, ("-", {}))[0]
        c = per_kind[f"{p['label']}: {p['kind']}"]
        c["n"] += 1
        c[kind] += 1
        if kind != "-":
            good = p["label"] == "duplicate" and (kind in WHOLE or kind == "exact")
            per_reported[kind]["tp" if good else "fp"] += 1
            if not good:
                false.append(f"{p['label']}:{p['kind']} as {kind}: {p['a']} | {p['b']}")
    unlabelled = sorted(
        f"{k}: {' | '.join(sorted(key))}" for key, (k, _) in reported.items() if key not in labelled
    )
    positives = [p for p in labels if p["label"] == "duplicate"]
    found = sum(
        reported.get(frozenset((p["a"], p["b"])), ("-", {}))[0] in WHOLE | {"exact"} for p in positives
    )
    return {
        "recall": found / len(positives),
        "found": found,
        "positives": len(positives),
        "per_kind": {k: dict(v) for k, v in sorted(per_kind.items())},
        "per_reported": {k: dict(v) for k, v in sorted(per_reported.items())},
        "false": false,
        "unlabelled": unlabelled,
    }


def precision_rows(per_reported: dict[str, dict[str, int]]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("reported kind", "right", "wrong", "precision")]
    for kind, c in per_reported.items():
        tp, fp = c.get("tp", 0), c.get("fp", 0)
        rows.append((kind, str(tp), str(fp), f"{tp / (tp + fp):.3f}"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh", action="store_true", help="Rebuild the cached indexes from scratch.")
    ap.add_argument("--show", action="store_true", help="Print every pair reported on the real vaults.")
    args = ap.parse_args()
    cached_home("dup-passages-home", args.fresh)

    own = score_own(run(VAULT))
    print(f"{VAULT.relative_to(REPO)} ({LABELS.relative_to(REPO)}), recall per labelled kind:")
    rows: list[tuple[str, ...]] = [("expected: kind", "n", "found", "recall", "lines right")]
    for k, c in own["per_kind"].items():
        lines = f"{c.get('lines', 0)}/{c['n']}" if k.startswith("shared_passage") else "-"
        rows.append((k, str(c["n"]), str(c["found"]), f"{c['found'] / c['n']:.3f}", lines))
    print(table(rows))
    print("\nprecision per reported kind (every pair not labelled as that kind is wrong):")
    print(table(precision_rows(own["per_reported"])))
    for f in own["false"]:
        print(f"  false: {f}")

    dv = score_dup_vault(run(need_shared("eval", "dup-vault")))
    print(
        f"\n../shared/eval/dup-vault: recall of `duplicate` {dv['recall']:.3f} ({dv['found']}/{dv['positives']})"
    )
    rows = [("label: kind", "n", "reported as")]
    for k, c in dv["per_kind"].items():
        rows.append((k, str(c["n"]), ", ".join(f"{h} {n}" for h, n in sorted(c.items()) if h != "n")))
    print(table(rows))
    print(table(precision_rows(dv["per_reported"])))
    for f in dv["false"]:
        print(f"  false: {f}")
    for u in dv["unlabelled"]:
        print(f"  unlabelled: {u}")

    real: dict[str, dict[str, int]] = {}
    for name in ("kepano", "ru-wiki", "fastapi-docs"):
        reported = run(need_shared("vaults", name))
        real[name] = dict(Counter(k for k, _ in reported.values()))
        print(f"\n../shared/vaults/{name}: " + ", ".join(f"{k} {n}" for k, n in sorted(real[name].items())))
        if args.show:
            for key, (kind, lines) in sorted(reported.items(), key=lambda kv: (kv[1][0], sorted(kv[0]))):
                print(f"  {kind}: " + " | ".join(f"{p} {lines.get(p, '')}" for p in sorted(key)))

    passages = [c for k, c in own["per_kind"].items() if k.startswith("shared_passage")]
    recall = sum(c["found"] for c in passages) / sum(c["n"] for c in passages)
    lines_ok = sum(c.get("lines", 0) for c in passages) / sum(c["n"] for c in passages)
    dv_false = len(dv["false"])
    print()
    print(f"shared passages found on the dev vault: {recall:.3f}, with the right lines: {lines_ok:.3f}")
    print(f"no false pair on the dev vault: {len(own['false'])} {verdict(not own['false'])}")
    print(f"no labelled negative reported on dup-vault: {dv_false} {verdict(dv_false == 0)}")
    out = save(
        "dup_passages",
        {"machine": machine(), "own": own, "dup_vault": dv, "real": real, "passage_recall": recall},
    )
    print(f"\nresults: {out}")


if __name__ == "__main__":
    main()
