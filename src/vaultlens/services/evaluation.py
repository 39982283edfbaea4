"""Retrieval quality on labelled data: a BEIR folder (nDCG@10, Recall@100, MRR@10) and
vault query sets in ``eval/queries.jsonl`` form (hit@1, hit@5, MRR), broken down by group.

Both run the same ``find`` the CLI runs, with the user's settings, so a number here is
what a user gets.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from vaultlens.errors import VaultError
from vaultlens.index.indexer import Progress
from vaultlens.services import app as services
from vaultlens.services.app import App

Ranker = Callable[[str], list[str]]


def ndcg_at(ranked: list[str], gains: dict[str, float], k: int) -> float:
    dcg = sum(gains.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: Iterable[str], k: int) -> float:
    rel = set(relevant)
    return len(rel & set(ranked[:k])) / len(rel) if rel else 0.0


def rr_at(ranked: list[str], relevant: Iterable[str], k: int | None = None) -> float:
    rel = set(relevant)
    for i, d in enumerate(ranked[:k] if k else ranked):
        if d in rel:
            return 1.0 / (i + 1)
    return 0.0


@dataclass(frozen=True)
class GroupScore:
    group: str
    n: int
    metrics: dict[str, float]


_POSITION = "position"  # a row's 0-based place in its input file (not a metric)


def _mean(rows: list[dict[str, float]], group: str, halves: str = "") -> GroupScore:
    """Each metric's mean; with ``halves``, that metric also for each half of the rows by their
    position in the input (``h1``: 1st, 3rd, ... line; ``h2``: 2nd, 4th, ...), so a change tuned
    on one half can be read on the other, group by group, before it ships."""
    keys = rows[0].keys() if rows else []
    metrics = {k: round(sum(r[k] for r in rows) / len(rows), 4) for k in keys if k != _POSITION}
    if halves and rows:
        for h in (0, 1):
            part = [r[halves] for r in rows if int(r[_POSITION]) % 2 == h]
            if part:  # the "half 1" group has no h2
                metrics[f"{halves} h{h + 1}"] = round(sum(part) / len(part), 4)
    return GroupScore(group, len(rows), metrics)


def beir_vault(beir_dir: Path, target: Path) -> Path:
    """Write a BEIR corpus as one note per document (``# title`` + text); reused when present."""
    corpus = beir_dir / "corpus.jsonl"
    if not corpus.is_file():
        raise VaultError(f"{beir_dir} is not a BEIR folder (no corpus.jsonl).")
    done = target / ".complete"
    if done.exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            title = (doc.get("title") or "").strip()
            body = f"# {title}\n\n{doc['text']}\n" if title else f"{doc['text']}\n"
            (target / f"{doc['_id']}.md").write_text(body, encoding="utf-8")
    done.write_text("ok\n")
    return target


def eval_beir(
    beir_dir: Path,
    work: Path,
    overrides: dict[str, str] | None = None,
    progress: Progress | None = None,
    split: str = "test",
    consent: bool = False,
) -> list[GroupScore]:
    vault = beir_vault(beir_dir, work / beir_dir.name)
    app = App.open(vault, overrides)
    services.index(app, progress, consent)
    queries = {}
    with (beir_dir / "queries.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            queries[q["_id"]] = q["text"]
    qrels: dict[str, dict[str, float]] = defaultdict(dict)
    with (beir_dir / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            qrels[row["query-id"]][row["corpus-id"]] = float(row["score"])
    rows = []
    for position, (qid, gains) in enumerate(qrels.items()):
        hits = services.search(app, queries[qid], limit=100, sections=1)
        ranked = [h.path.removesuffix(".md") for h in hits]
        relevant = [d for d, g in gains.items() if g > 0]
        rows.append(
            {
                "ndcg@10": ndcg_at(ranked, gains, 10),
                "recall@100": recall_at(ranked, relevant, 100),
                "mrr@10": rr_at(ranked, relevant, 10),
                _POSITION: position,
            }
        )
    return [_mean(rows, beir_dir.name, halves="ndcg@10")]


_OTHER_LANGUAGE = {"en": "ru", "ru": "en"}


def note_language(query: dict[str, object]) -> str:
    """The language of the notes a labelled query looks for: ``note_lang`` when given, else a
    language folder the vault path ends in (``vaults/docs/ru``), else the query's own language, or
    the other one of a Russian/English pair for a cross-lingual query."""
    lang = str(query["lang"])
    if "note_lang" in query:
        return str(query["note_lang"])
    folder = Path(str(query.get("vault", ""))).name
    if folder in _OTHER_LANGUAGE:
        return folder
    return _OTHER_LANGUAGE.get(lang, lang) if query.get("cross_lingual") else lang


def vault_label(vault: str) -> str:
    """A vault's name in group labels, without a trailing language folder (the direction says it)."""
    path = Path(vault)
    return path.parent.name if path.name in _OTHER_LANGUAGE and path.parent.name else path.name


def eval_queries(
    queries_file: Path,
    overrides: dict[str, str] | None = None,
    progress: Progress | None = None,
    consent: bool = False,
) -> list[GroupScore]:
    """hit@1, hit@5 and MRR per vault and direction (query language → note language), per query
    language, per half of the file (odd and even lines) and overall, each group with its hit@5 on
    either half; vault paths are relative to the file's parent's parent."""
    base = queries_file.resolve().parent.parent
    items = [
        json.loads(line) for line in queries_file.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    apps: dict[str, App] = {}
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for position, q in enumerate(items):
        if q["vault"] not in apps:
            apps[q["vault"]] = App.open(base / q["vault"], overrides)
            services.index(apps[q["vault"]], progress, consent)
        hits = services.search(apps[q["vault"]], q["query"], limit=20, sections=1)
        ranked = [h.path for h in hits]
        row = {
            "hit@1": float(bool(set(ranked[:1]) & set(q["relevant"]))),
            "hit@5": float(bool(set(ranked[:5]) & set(q["relevant"]))),
            "mrr": rr_at(ranked, q["relevant"]),
            _POSITION: position,
        }
        vault = vault_label(q["vault"])
        direction = f"{q['lang']}→{note_language(q)}"
        half = f"half {1 + position % 2}"  # tune on one half, read the other: a gain must show on both
        names = [f"{vault} {direction}", direction, f"lang {q['lang']}", half, "all"]
        if q.get("cross_lingual"):
            names.append("cross-lingual")
        for g in names:
            groups[g].append(row)
    return [_mean(rows, g, halves="hit@5") for g, rows in sorted(groups.items())]
