"""Search: dense and full-text candidates fused per chunk, then grouped per note.

Dense similarity carries paraphrase and cross-language queries; BM25 carries exact
identifiers and rare names. FTS5 finds lexical candidates per chunk, but the lexical score
used for ranking is BM25 of the whole note (a note-level FTS5 table): a note's evidence is
often spread over its chunks, and the chunk-level score loses it. Each side is normalised over the
candidate pool (dense min-max, BM25 divided by its best score) and mixed with a per-query
lexical weight that grows with how much of the query the best BM25 hit explains; see
:class:`Fusion` and :func:`lexical_confidence`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.errors import VaultlensError
from vaultlens.index.lexical import query_terms
from vaultlens.index.sqlite_store import SQLiteStore

NOTE_CANDIDATES = 1000  # notes scored by note-level BM25; a note past this gets no lexical credit


@dataclass(frozen=True, slots=True)
class Fusion:
    """How dense and lexical scores are mixed (rule and sweep in docs/benchmarks.md).

    The lexical weight is ``max_lexical_weight * lexical_confidence``: a paraphrase or a
    cross-language query, whose best BM25 hit explains little of the query, stays close to
    pure dense ranking; a query whose words the best hit really contains (identifiers,
    technical claims) leans on BM25. One fixed weight cannot do both: 0.5 lost English to
    Russian queries, 0.7 and more dense weight lost SciFact.
    """

    max_lexical_weight: float = 0.8
    candidates: int = 200


class ChunkScore(NamedTuple):
    rank: float  # orders notes (a note ranks by its best chunk)
    section: float  # orders the sections shown inside a note


@dataclass(frozen=True, slots=True)
class Section:
    chunk_id: str
    heading_path: tuple[str, ...]
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    score: float
    snippet: str


@dataclass(frozen=True, slots=True)
class NoteHit:
    path: str
    title: str
    score: float
    sections: list[Section] = field(default_factory=list)


class EmptyQuery(VaultlensError):
    code = "empty_query"
    exit_code = 2


def _snippet(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def search(
    store: SQLiteStore,
    provider: EmbeddingProvider,
    query: str,
    limit: int = 10,
    sections: int = 3,
    max_query_chars: int = 2000,
    fusion: Fusion | None = None,
) -> list[NoteHit]:
    """Notes best matching ``query``, each with its strongest sections."""
    fusion = fusion or Fusion()
    query = query.strip()[:max_query_chars]
    if not query:
        raise EmptyQuery("The query is empty.", hint='Try: vaultlens search "how do I cache static files"')
    qvec = provider.embed([query])[0]
    chunk_scores = score_chunks(store, qvec, query, fusion)
    return group_notes(store, chunk_scores, limit, sections)


def score_chunks(
    store: SQLiteStore, qvec: npt.NDArray[np.float32], query: str, fusion: Fusion
) -> dict[int, ChunkScore]:
    """Two fused scores per candidate chunk rowid, with the same dense part and lexical weight.

    ``rank`` uses the lexical score of the chunk's whole note, so the best chunk of a note
    carries the note's rank (see :func:`group_notes`); ``section`` uses the chunk's own BM25,
    so inside a note the section that holds the query's words (an identifier in a code block)
    comes first.
    """
    rowids, vecs = store.matrix()
    if rowids.size == 0:
        return {}
    dense = vecs @ qvec
    k = min(fusion.candidates, dense.size)
    top = np.argpartition(-dense, k - 1)[:k]
    idf = query_idf(store, query, rowids.size)
    lexical = dict(store.lexical(match_expression(idf), fusion.candidates)) if idf else {}
    cand = {int(rowids[i]): i for i in top}
    if lexical:
        extra = np.array([r for r in lexical if r not in cand], dtype=np.int64)
        pos = np.searchsorted(rowids, extra)
        for r, p in zip(extra.tolist(), pos.tolist(), strict=True):
            if p < rowids.size and rowids[p] == r:
                cand[r] = p
    ids = list(cand)
    d = dense[[cand[r] for r in ids]].astype(np.float64)
    d_norm = (d - d.min()) / (d.max() - d.min()) if d.max() > d.min() else np.ones_like(d)
    if not lexical:
        return {r: ChunkScore(v, v) for r, v in zip(ids, d_norm.tolist(), strict=True)}
    a = fusion.max_lexical_weight * lexical_confidence(idf, max(lexical.values()))
    note_of = store.chunk_paths(ids)
    by_note = store.note_lexical(match_expression(idf), NOTE_CANDIDATES)
    best = max(by_note.values(), default=0.0)
    lx = np.array([by_note.get(note_of.get(r, ""), 0.0) for r in ids], dtype=np.float64)
    l_norm = lx / best if best > 0 else np.zeros_like(lx)
    top_chunk = max(lexical.values())
    c_norm = np.array([lexical.get(r, 0.0) / top_chunk for r in ids], dtype=np.float64)
    rank = (1.0 - a) * d_norm + a * l_norm
    section = (1.0 - a) * d_norm + a * c_norm
    return {r: ChunkScore(x, y) for r, x, y in zip(ids, rank.tolist(), section.tolist(), strict=True)}


def query_idf(store: SQLiteStore, query: str, n_chunks: int) -> dict[str, float]:
    """FTS5's idf of each distinct non-stop query term over chunks (unseen terms included)."""
    dfs = store.doc_freqs(query_terms(query))
    return {t: max(math.log((n_chunks - df + 0.5) / (df + 0.5)), 1e-6) for t, df in dfs.items()}


def match_expression(idf: dict[str, float]) -> str:
    """FTS5 MATCH over the terms that can move a BM25 score.

    A term in more than half the chunks has FTS5's clamped idf (~0): it adds nothing to a score,
    yet matching it would make FTS5 score most of the index. The rarest term is kept even then,
    so an all-common query still finds something.
    """
    useful = [t for t, v in idf.items() if v > 1e-6] or sorted(idf, key=idf.__getitem__, reverse=True)[:1]
    return " OR ".join(f'"{t}"' for t in useful)


def lexical_confidence(idf: dict[str, float], top_bm25: float) -> float:
    """Share of the query's information the best BM25 hit explains, in [0, 1].

    The query's idf mass (FTS5's own idf, summed over its distinct terms, unseen terms
    included) is roughly the BM25 score of a chunk that contains every term once; the best
    chunk's score divided by it says how much of the query the lexical side actually matched.
    Measured medians: 0.96 on SciFact claims, 0.4 on paraphrased vault queries.
    """
    mass = sum(idf.values())
    return min(1.0, top_bm25 / mass) if mass > 0 else 0.0


def group_notes(
    store: SQLiteStore, chunk_scores: dict[int, ChunkScore], limit: int, sections: int
) -> list[NoteHit]:
    paths = store.chunk_paths(chunk_scores)
    per_note: dict[str, list[tuple[float, int]]] = defaultdict(list)
    best: dict[str, float] = {}
    for rowid, score in chunk_scores.items():
        if rowid in paths:
            path = paths[rowid]
            per_note[path].append((score.section, rowid))
            best[path] = max(best.get(path, -1.0), score.rank)
    ranked = sorted(per_note.items(), key=lambda kv: (-best[kv[0]], kv[0]))[:limit]
    for _, scored in ranked:
        scored.sort(key=lambda s: (-s[0], s[1]))
    rows = store.chunks(r for _, scored in ranked for _, r in scored[:sections])  # only what is shown
    titles = store.titles(p for p, _ in ranked)
    hits = []
    for path, scored in ranked:
        secs = [
            Section(
                chunk_id=rows[r].id,
                heading_path=rows[r].heading_path,
                start_line=rows[r].start_line + 1,
                end_line=rows[r].end_line,
                score=round(s, 4),
                snippet=_snippet(rows[r].text),
            )
            for s, r in scored[:sections]
        ]
        hits.append(NoteHit(path, titles.get(path) or path, round(best[path], 4), secs))
    return hits
