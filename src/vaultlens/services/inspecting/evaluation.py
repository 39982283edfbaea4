"""Retrieval quality on labelled data: a BEIR folder (nDCG@10, Recall@100, MRR@10) and
vault query sets in ``eval/queries.jsonl`` form (hit@1, hit@3, hit@5, MRR), broken down by group.

Both run the same ``find`` the CLI runs, with the user's settings, so a number here is
what a user gets.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from vaultlens.errors import InvalidInput, VaultError
from vaultlens.fsutil import read_jsonl
from vaultlens.services.finding.search import NoteHit
from vaultlens.services.serial import AsDict

# Open a vault, bring its index up to date, and return its search (query, notes wanted) -> hits.
OpenVault = Callable[[Path], Callable[[str, int], list[NoteHit]]]


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
class GroupScore(AsDict):
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


def _field(path: Path, n: int, item: dict[str, object], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f'{path}:{n}: "{key}" must be a non-empty string, got {value!r}.')
    return value


def _doc_id(path: Path, n: int, item: dict[str, object]) -> str:
    """A document id that names a file inside the eval folder and nowhere else."""
    doc_id = _field(path, n, item, "_id")
    if any(c in doc_id for c in "/\\\0") or doc_id.startswith(".") or len(doc_id.encode()) > 240:
        raise InvalidInput(
            f"{path}:{n}: the document id {doc_id!r} cannot be a file name (a slash, a NUL, a leading dot "
            "or over 240 bytes).",
            hint="BEIR ids are plain names such as 4983 or doc-12; each becomes one note in the eval folder.",
        )
    return doc_id


def beir_vault(beir_dir: Path, target: Path) -> Path:
    """Write a BEIR corpus as one note per document (``# title`` + text); reused when present.
    Every line is checked before the first file is written, and each id must be a plain file name,
    so a corpus can never write outside ``target``."""
    corpus = beir_dir / "corpus.jsonl"
    done = target / ".complete"
    if done.exists():
        return target
    notes: dict[str, str] = {}
    for n, doc in read_jsonl(corpus, "a BEIR corpus"):
        doc_id = _doc_id(corpus, n, doc)
        title = str(doc.get("title") or "").strip()
        text = doc.get("text", "")
        if not isinstance(text, str):
            raise InvalidInput(f'{corpus}:{n}: "text" must be a string, got {text!r}.')
        # an empty document is a BEIR document too (Cranfield holds two): an empty note, never found
        notes[doc_id] = f"# {title}\n\n{text}\n" if title else f"{text}\n" if text.strip() else ""
    target.mkdir(parents=True, exist_ok=True)
    for doc_id, body in notes.items():
        (target / f"{doc_id}.md").write_text(body, encoding="utf-8")
    done.write_text("ok\n")
    return target


def _qrels(path: Path) -> dict[str, dict[str, float]]:
    """query id → {document id: gain} from a BEIR qrels TSV (header ``query-id corpus-id score``)."""
    qrels: dict[str, dict[str, float]] = defaultdict(dict)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"Cannot read the BEIR qrels file {path} as UTF-8 text ({exc}).") from None
    rows = csv.DictReader(text.splitlines(), delimiter="\t")
    for n, row in enumerate(rows, 2):
        try:
            qrels[row["query-id"]][row["corpus-id"]] = float(row["score"])
        except (KeyError, TypeError, ValueError):
            raise InvalidInput(
                f"{path}:{n}: expected tab-separated query-id, corpus-id and a numeric score, got {row!r}."
            ) from None
    if not qrels:
        raise InvalidInput(f"{path} holds no relevance judgements.")
    return qrels


def eval_beir(beir_dir: Path, work: Path, open_vault: OpenVault, split: str = "test") -> list[GroupScore]:
    if not (beir_dir / "corpus.jsonl").is_file():
        raise VaultError(f"{beir_dir} is not a BEIR folder (no corpus.jsonl).")
    qfile = beir_dir / "queries.jsonl"
    queries = {
        _field(qfile, n, q, "_id"): _field(qfile, n, q, "text") for n, q in read_jsonl(qfile, "BEIR queries")
    }
    qrels = _qrels(beir_dir / "qrels" / f"{split}.tsv")
    if missing := [qid for qid in qrels if qid not in queries]:
        raise InvalidInput(
            f"{len(missing)} query ids of qrels/{split}.tsv are not in {qfile} (first: {missing[0]!r})."
        )
    vault = beir_vault(beir_dir, work / (beir_dir.resolve().name or "beir"))
    search = open_vault(vault)
    rows = []
    for position, (qid, gains) in enumerate(qrels.items()):
        hits = search(queries[qid], 100)
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
    """A vault's name in group labels, without a trailing language folder (the direction says it)
    or a trailing ``vault`` folder (``personal/vault`` is the personal set's)."""
    path = Path(vault)
    generic = path.name in _OTHER_LANGUAGE or path.name == "vault"
    return path.parent.name if generic and path.parent.name not in ("", "..") else path.name


class LabelledQuery(NamedTuple):
    vault: str
    query: str
    lang: str
    relevant: list[str]
    fields: dict[str, object]  # the whole line (cross_lingual, note_lang, ...)


def _labelled_query(path: Path, n: int, q: dict[str, object]) -> LabelledQuery:
    """One line of a queries file, checked: vault, query and lang strings, relevant a list of paths."""
    vault, query, lang = (_field(path, n, q, key) for key in ("vault", "query", "lang"))
    relevant = q.get("relevant")
    if not isinstance(relevant, list) or not relevant or not all(isinstance(r, str) for r in relevant):
        raise InvalidInput(
            f'{path}:{n}: "relevant" must be a non-empty list of note paths, got {relevant!r}.'
        )
    return LabelledQuery(vault, query, lang, relevant, q)


SPLITS = ("tune", "held")


def _in_split(path: Path, items: list[tuple[int, LabelledQuery]], split: str) -> list[LabelledQuery]:
    """The queries of one split (a line's ``split`` field): tuned on, or held out for reading."""
    if split not in SPLITS:
        raise InvalidInput(f"Unknown split {split!r}.", hint=f"Choose one of {', '.join(SPLITS)}.")
    if unmarked := [n for n, q in items if q.fields.get("split") not in SPLITS]:
        raise InvalidInput(
            f'{path}:{unmarked[0]}: no "split" of {", ".join(SPLITS)} on this line '
            f"({len(unmarked)} such lines), so --split {split} cannot choose its queries."
        )
    return [q for _, q in items if q.fields["split"] == split]


def eval_queries(queries_file: Path, open_vault: OpenVault, split: str | None = None) -> list[GroupScore]:
    """hit@1, hit@3, hit@5 and MRR per vault and direction (query language → note language), per
    query language, per half of the file (odd and even lines) and overall, each group with its
    hit@5 on either half; with ``split``, only the lines of that split (``tune`` or ``held``).
    Vault paths are relative to the file's parent's parent."""
    base = queries_file.resolve().parent.parent
    numbered = [
        (n, _labelled_query(queries_file, n, q)) for n, q in read_jsonl(queries_file, "a queries file")
    ]
    items = _in_split(queries_file, numbered, split) if split else [q for _, q in numbered]
    if not items:
        raise InvalidInput(f"{queries_file} holds no queries{f' in the {split} split' if split else ''}.")
    for vault in dict.fromkeys(q.vault for q in items):
        if not (base / vault).is_dir():
            raise InvalidInput(
                f"The vault {vault!r} of {queries_file} is not a folder: {base / vault}.",
                hint="A query's vault path is relative to the folder above the queries file's folder "
                "(vault vaults/x for eval/queries.jsonl means vaults/x beside eval/).",
            )
    searches: dict[str, Callable[[str, int], list[NoteHit]]] = {}
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for position, q in enumerate(items):
        if q.vault not in searches:
            searches[q.vault] = open_vault(base / q.vault)
        hits = searches[q.vault](q.query, 20)
        ranked = [h.path for h in hits]
        row = {
            "hit@1": float(bool(set(ranked[:1]) & set(q.relevant))),
            "hit@3": float(bool(set(ranked[:3]) & set(q.relevant))),
            "hit@5": float(bool(set(ranked[:5]) & set(q.relevant))),
            "mrr": rr_at(ranked, q.relevant),
            _POSITION: position,
        }
        direction = f"{q.lang}→{note_language(q.fields)}"
        half = f"half {1 + position % 2}"  # tune on one half, read the other: a gain must show on both
        names = [f"{vault_label(q.vault)} {direction}", direction, f"lang {q.lang}", half, "all"]
        if q.fields.get("cross_lingual"):
            names.append("cross-lingual")
        for g in names:
            groups[g].append(row)
    return [_mean(rows, g, halves="hit@5") for g, rows in sorted(groups.items())]
