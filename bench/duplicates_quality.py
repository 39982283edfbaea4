"""Quality of `vaultlens duplicates` (and of `similar` against boilerplate), per kind, on both dev sets.

Vaults, each indexed with the bundled model into bench/results/cache/dup-home (re-used later: indexing
is incremental):

* the labelled pairs of ../shared/eval/dup_pairs.jsonl (dup-vault, ru-wiki, kepano): label `duplicate`
  is a positive, `related` and `unrelated` negatives;
* ../shared/vaults/fastapi-docs as ONE vault: `en/X` <-> `ru/X` are its 122 translation pairs; any other
  pair of pages is presumed distinct (each page documents its own feature);
* three copies built under /tmp by bench/fastapi_copies.py: Russian pages under Russian names; the
  same without the English `{ #anchor }` ids in the headings; and every other Russian page dropped
  (`fastapi-half`: 61 English pages have no translation, so whatever is paired with them is false).

`duplicates` runs once per vault and threshold (0.80 to 0.99) with no practical limit, then once per
translation threshold (0.00 and 0.40 to 0.90) at the default threshold. A labelled pair is *found* when it is in
an exact group or reported as a whole-note kind (near_duplicate, contained, translation); a
`shared_passage` is counted on its own. Precision counts every labelled negative reported as any kind.

Both defaults follow one rule, printed with its inputs: halfway between the highest-scoring negative
and the lowest-scoring labelled duplicate. For `duplicate_threshold` the negative side is the lowest
threshold at which no negative is reported (labelled negatives, and on the fastapi-docs vaults any
whole-note pair that is not a labelled translation); for `translation_threshold` it is the highest
score of a false translation at threshold 0 (mostly on `fastapi-half`).

Usage: .venv/bin/python bench/duplicates_quality.py [--fresh]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import cached_home, machine, need_shared, save, table, verdict
from fastapi_copies import build as build_copy

WHOLE = {"near_duplicate", "contained", "translation"}
SWEEP = [round(0.80 + 0.01 * i, 2) for i in range(20)]
TRANSLATION_SWEEP = [0.0] + [round(0.40 + 0.05 * i, 2) for i in range(11)]
DOCS = ("fastapi-docs", "fastapi-ru-names", "fastapi-ru-names-noanchor", "fastapi-half")


@dataclass
class Run:
    """One `duplicates` run: every reported pair with its kind and score, and the exact groups."""

    pairs: dict[frozenset[str], tuple[str, float, tuple[str | None, str | None]]] = field(
        default_factory=dict
    )
    passages: dict[frozenset[str], float] = field(default_factory=dict)
    exact: dict[frozenset[str], str] = field(default_factory=dict)
    truncated: bool = False

    def found(self, key: frozenset[str]) -> str:
        if key in self.exact:
            return "exact"
        if key in self.pairs:
            return self.pairs[key][0]
        return "shared_passage" if key in self.passages else "-"


def run(vault: Path, threshold: float, overrides: dict[str, str] | None = None) -> Run:
    import vaultlens as services

    app = services.App.open(vault, overrides)
    try:
        report = services.duplicates(app, threshold=threshold, limit=10**9)
    finally:
        app.close()
    out = Run(truncated=report.truncated)
    for p in report.pairs:
        out.pairs[frozenset((p.a, p.b))] = (p.kind, p.score, p.languages)
    for p in report.shared_passages:
        out.passages[frozenset((p.a, p.b))] = p.score
    for g in report.exact:
        for a in g.paths:
            for b in g.paths:
                if a < b:
                    out.exact[frozenset((a, b))] = g.kind
    return out


def index(vault: Path) -> None:
    import vaultlens as services

    app = services.App.open(vault)
    try:
        services.index(app, consent=True)
    finally:
        app.close()


def labelled_pairs(
    vaults: dict[str, Path], docs_pairs: dict[str, list[tuple[str, str]]]
) -> list[dict[str, Any]]:
    lines = need_shared("eval", "dup_pairs.jsonl").read_text(encoding="utf-8").splitlines()
    pairs = [json.loads(line) for line in lines if line.strip()]
    for p in pairs:
        p["vault"] = p["vault"].split("/")[-1]
    for name, tr in docs_pairs.items():
        pairs += [{"vault": name, "a": a, "b": b, "label": "duplicate", "kind": "translation"} for a, b in tr]
    return pairs


def score(pairs: list[dict[str, Any]], runs: dict[str, Run]) -> dict[str, Any]:
    """Recall and precision over the labelled pairs of ``runs``' vaults, per labelled and reported kind."""
    per_label: dict[str, Counter[str]] = defaultdict(Counter)
    per_reported: dict[str, Counter[str]] = defaultdict(Counter)
    tp = fn = fp = 0
    wrong: list[str] = []
    labelled: dict[str, set[frozenset[str]]] = defaultdict(set)
    for p in pairs:
        if p["vault"] not in runs:
            continue
        r, key = runs[p["vault"]], frozenset((p["a"], p["b"]))
        labelled[p["vault"]].add(key)
        how = r.found(key)
        per_label[f"{p['label']}:{p['kind']}"][how] += 1
        positive = p["label"] == "duplicate"
        if how != "-":
            per_reported[how]["tp" if positive else "fp"] += 1
        if positive:
            tp += how in WHOLE or how == "exact"
            fn += how not in WHOLE and how != "exact"
        elif how != "-":
            fp += 1
            wrong.append(f"{p['label']}:{p['kind']} {p['a']} | {p['b']} as {how}")
    # on the fastapi-docs vaults every pair is labelled: an unlabelled whole-note pair is a false one
    presumed: Counter[str] = Counter()
    for name, r in runs.items():
        if name in DOCS:
            for key, (kind, _, _) in r.pairs.items():
                if key not in labelled[name]:
                    presumed[kind] += 1
                    per_reported[kind]["fp"] += 1
    return {
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "tp": tp,
        "fn": fn,
        "fp": fp,
        "false_positives": wrong,
        "docs_other_whole_pairs": dict(presumed),
        "per_label": {k: dict(v) for k, v in sorted(per_label.items())},
        "per_reported": {k: dict(v) for k, v in sorted(per_reported.items())},
    }


def similar_ranks(
    vault: Path, cases: list[tuple[str, str]], overrides: dict[str, str] | None
) -> list[int | None]:
    """Rank (1-based) of the second note of each case in `similar` of the first, or None when absent."""
    import vaultlens as services

    app = services.App.open(vault, overrides)
    try:
        ranks: list[int | None] = []
        for note, other in cases:
            paths = [r.path for r in services.similar(app, note, limit=10**6).results]
            ranks.append(paths.index(other) + 1 if other in paths else None)
        return ranks
    finally:
        app.close()


def similar_check(vaults: dict[str, Path], pairs: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """`similar` with boilerplate weighted (default) or not (weight 1.0): the issue's ru-wiki example, and
    over the labelled pairs both ways: hit@10 and MRR of the other note, per label."""
    off = {"discover.boilerplate_weight": "1.0"}
    example = [
        ("forge/productivity/состояние потока.md", "forge/it/C4 model.md"),
        ("forge/it/C4 model.md", "forge/productivity/состояние потока.md"),
    ]
    rows: list[tuple[str, ...]] = [("similar(note) -> other", "rank, weight 1.0 (off)", "rank, default")]
    for (note, other), r_off, r_on in zip(
        example,
        similar_ranks(vaults["ru-wiki"], example, off),
        similar_ranks(vaults["ru-wiki"], example, None),
        strict=True,
    ):
        rows.append((f"{note} -> {other}", str(r_off or "-"), str(r_on or "-")))
    by_label: dict[str, dict[str, list[int | None]]] = defaultdict(lambda: {"off": [], "on": []})
    for name in sorted({p["vault"] for p in pairs if p["vault"] not in DOCS}):
        cases = [(a, b) for p in pairs if p["vault"] == name for a, b in ((p["a"], p["b"]), (p["b"], p["a"]))]
        labels = [p["label"] for p in pairs if p["vault"] == name for _ in (0, 1)]
        for key, overrides in (("off", off), ("on", None)):
            for label, rank in zip(labels, similar_ranks(vaults[name], cases, overrides), strict=True):
                by_label[label][key].append(rank)

    def summary(ranks: list[int | None]) -> str:
        hit = sum(1 for r in ranks if r is not None and r <= 10) / len(ranks)
        mrr = sum(1 / r for r in ranks if r is not None) / len(ranks)
        return f"hit@10 {hit:.3f}, MRR {mrr:.3f}"

    for label, got in sorted(by_label.items()):
        rows.append(
            (
                f"labelled {label} pairs, both ways (n={len(got['on'])})",
                summary(got["off"]),
                summary(got["on"]),
            )
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fresh", action="store_true", help="Rebuild the cached indexes from scratch.")
    args = ap.parse_args()

    cached_home("dup-home", args.fresh)
    from vaultlens.config.settings import DiscoverSettings

    default_t = DiscoverSettings().duplicate_threshold
    default_tt = DiscoverSettings().translation_threshold

    docs = need_shared("vaults", "fastapi-docs")
    vaults = {
        "dup-vault": need_shared("eval", "dup-vault"),
        "ru-wiki": need_shared("vaults", "ru-wiki"),
        "kepano": need_shared("vaults", "kepano"),
        "fastapi-docs": docs,
        "fastapi-ru-names": Path("/tmp/vaultlens-fastapi-ru-names"),
        "fastapi-ru-names-noanchor": Path("/tmp/vaultlens-fastapi-ru-names-noanchor"),
        "fastapi-half": Path("/tmp/vaultlens-fastapi-half"),
    }
    docs_pairs = {
        "fastapi-docs": [
            (f"en/{p}", f"ru/{p}")
            for p in (q.relative_to(docs / "en").as_posix() for q in sorted((docs / "en").rglob("*.md")))
        ],
        "fastapi-ru-names": build_copy(vaults["fastapi-ru-names"]),
        "fastapi-ru-names-noanchor": build_copy(vaults["fastapi-ru-names-noanchor"], strip_anchors=True),
        "fastapi-half": build_copy(vaults["fastapi-half"], russian_names=False, half=True),
    }
    pairs = labelled_pairs(vaults, docs_pairs)
    for v in vaults.values():
        index(v)
    sweep = sorted({*SWEEP, default_t})
    runs = {t: {name: run(v, t) for name, v in vaults.items()} for t in sweep}
    results = {t: score(pairs, runs[t]) for t in sweep}
    labelled = [p for p in pairs if p["vault"] not in DOCS]  # dup_pairs.jsonl alone
    results_l = {t: score(labelled, runs[t]) for t in sweep}

    # the threshold rule
    def negatives(t: float) -> int:
        r = results[t]
        return int(r["fp"]) + sum(r["docs_other_whole_pairs"].values())

    clean = [t for t in sweep if negatives(t) == 0]
    lowest_clean = min(clean) if clean else None
    # whole-note scores of the labelled duplicates (translations have their own threshold) in that run
    at_clean = runs[lowest_clean] if lowest_clean is not None else {}
    above = [
        at_clean[p["vault"]].pairs[key][1]
        for p in pairs
        if p["label"] == "duplicate"
        and (key := frozenset((p["a"], p["b"]))) in at_clean[p["vault"]].pairs
        and at_clean[p["vault"]].pairs[key][0] in ("near_duplicate", "contained")
    ]
    suggested = round((lowest_clean + min(above)) / 2, 2) if lowest_clean is not None and above else None

    rows: list[tuple[str, ...]] = [
        (
            "threshold",
            "recall (dup_pairs)",
            "recall (+ fastapi translations)",
            "precision",
            "labelled negatives",
            "fastapi other whole pairs",
        )
    ]
    for t in sweep:
        r = results[t]
        mark = " (default)" if t == default_t else ""
        rows.append(
            (
                f"{t:.2f}{mark}",
                f"{results_l[t]['recall']:.3f} ({results_l[t]['tp']}/{results_l[t]['tp'] + results_l[t]['fn']})",
                f"{r['recall']:.3f}",
                f"{r['precision']:.3f}",
                str(r["fp"]),
                str(sum(r["docs_other_whole_pairs"].values())),
            )
        )
    print(table(rows))
    print(
        f"\nlowest threshold with no negative reported: {lowest_clean}; lowest whole-note duplicate score above it:"
        f" {min(above) if above else None}; rule gives {suggested}; default {default_t}"
    )

    d = results[default_t]
    print(f"\nAt the default threshold {default_t} (translations {default_tt}), every labelled kind:")
    kinds: list[tuple[str, ...]] = [("label:kind", "n", "reported as")]
    for k, how in d["per_label"].items():
        kinds.append((k, str(sum(how.values())), ", ".join(f"{h} {n}" for h, n in sorted(how.items()))))
    print(table(kinds))
    print(
        "\nPrecision per reported kind (labelled pairs; on the fastapi-docs vaults also unlabelled whole-note pairs):"
    )
    rep: list[tuple[str, ...]] = [("reported kind", "labelled duplicate", "negative", "precision")]
    for k, c in d["per_reported"].items():
        n = c.get("tp", 0) + c.get("fp", 0)
        rep.append((k, str(c.get("tp", 0)), str(c.get("fp", 0)), f"{c.get('tp', 0) / n:.3f}" if n else "-"))
    print(table(rep))
    for w in d["false_positives"]:
        print(f"  false positive: {w}")

    # recall per labelled kind on dup-vault alone
    dv = score([p for p in pairs if p["vault"] == "dup-vault"], {"dup-vault": runs[default_t]["dup-vault"]})
    print(
        f"\ndup-vault alone: recall {dv['recall']:.3f} ({dv['tp']}/{dv['tp'] + dv['fn']}), precision {dv['precision']:.3f}"
    )

    # translations, and the translation threshold (every vault: a translation nobody labelled is a false one)
    print("\nTranslations per translation threshold, at the default threshold:")
    tr_rows: list[tuple[str, ...]] = [
        ("vault", "translation threshold", "recall", "precision", "other kinds reported")
    ]
    tr_results: dict[str, dict[str, Any]] = {}
    true_scores: list[float] = []
    false_scores: list[tuple[float, str, str]] = []
    for name, v in vaults.items():
        keys = {frozenset(p) for p in docs_pairs.get(name, [])} | {
            frozenset((p["a"], p["b"])) for p in pairs if p["vault"] == name and p["kind"] == "translation_en"
        }
        for tt in sorted({*TRANSLATION_SWEEP, default_tt}):
            r = run(v, default_t, {"discover.translation_threshold": str(tt)})
            reported = {k for k, (kind, _, _) in r.pairs.items() if kind == "translation"}
            hit = len(keys & reported)
            if tt == 0.0:
                true_scores += [r.pairs[k][1] for k in keys & reported]
                false_scores += [(r.pairs[k][1], name, " | ".join(sorted(k))) for k in reported - keys]
            other = Counter(kind for kind, _, _ in r.pairs.values() if kind != "translation")
            other["shared_passage"] = len(r.passages)
            mark = " (default)" if tt == default_tt else ""
            tr_rows.append(
                (
                    name,
                    f"{tt:.2f}{mark}",
                    f"{hit / len(keys):.3f} ({hit}/{len(keys)})" if keys else "-",
                    f"{hit / len(reported):.3f} ({hit}/{len(reported)})" if reported else "- (0 reported)",
                    ", ".join(f"{k} {n}" for k, n in sorted(other.items()) if n),
                )
            )
            if tt == default_tt:
                tr_results[name] = {"labelled": len(keys), "found": hit, "reported": len(reported)}
    print(table(tr_rows))
    worst = max(false_scores, default=None)
    print(
        f"false translations at threshold 0: {len(false_scores)}, highest {worst};"
        f" lowest true translation {min(true_scores):.4f};"
        f" rule gives {round((worst[0] + min(true_scores)) / 2, 2) if worst else '-'}; default {default_tt}"
    )
    dv_tr = [p for p in pairs if p["vault"] == "dup-vault" and p["kind"] == "translation_en"]
    dv_run = runs[default_t]["dup-vault"]
    tr_langs = [dv_run.pairs.get(frozenset((p["a"], p["b"])), ("-", 0.0, (None, None))) for p in dv_tr]
    print(
        "dup-vault translations: " + "; ".join(f"{k} {s:.3f} {lang[0]}/{lang[1]}" for k, s, lang in tr_langs)
    )

    print("\nsimilar, boilerplate not weighted (weight 1.0) and at the default weight:")
    sim = similar_check(vaults, pairs)
    print(table(sim))

    copies = [p for p in pairs if p["vault"] == "dup-vault" and p["kind"] in ("exact_copy", "crlf_bom_copy")]
    copies_ok = all(frozenset((p["a"], p["b"])) in dv_run.exact for p in copies)
    unrelated = sum(
        n
        for k, how in d["per_label"].items()
        if k.startswith("unrelated:")
        for h, n in how.items()
        if h != "-"
    )
    all_tr = all(k == "translation" for k, _, _ in tr_langs)
    print()
    print(f"dup-vault recall >= 0.85 at {default_t}: {dv['recall']:.3f} {verdict(dv['recall'] >= 0.85)}")
    print(f"every exact and CRLF/BOM copy in dup-vault in an exact group: {verdict(copies_ok)}")
    print(f"every dup-vault translation reported as `translation`: {verdict(all_tr)}")
    print(f"no pair labelled unrelated reported (any kind): {unrelated} {verdict(unrelated == 0)}")
    out = save(
        "duplicates_quality",
        {
            "machine": machine(),
            "default_threshold": default_t,
            "translation_threshold": default_tt,
            "sweep": {
                str(t): {k: r[k] for k in ("recall", "precision", "fp", "docs_other_whole_pairs")}
                for t, r in results.items()
            },
            "rule": {"lowest_clean": lowest_clean, "suggested": suggested},
            "default": d,
            "dup_vault": {k: dv[k] for k in ("recall", "precision", "tp", "fn", "fp")},
            "dup_pairs": {k: results_l[default_t][k] for k in ("recall", "precision", "tp", "fn", "fp")},
            "translations": tr_results,
            "translation_rule": {
                "false": sorted(false_scores, reverse=True)[:10],
                "lowest_true": min(true_scores),
            },
            "similar_ru_wiki": sim,
            "copies_found": copies_ok,
            "unrelated_reported": unrelated,
        },
    )
    print(f"\nresults: {out}")


if __name__ == "__main__":
    main()
