"""Search: dense and full-text candidates fused per chunk, then grouped per note.

Dense similarity carries paraphrase and cross-language queries; BM25 carries exact
identifiers and rare names. Each is min-max normalised over the candidate pool and mixed
with a weight that shifts toward BM25 only when the lexical evidence is strong (the query's
terms concentrate on a few chunks); see :class:`Fusion`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.errors import VaultlensError
from vaultlens.index.lexical import fts_query
from vaultlens.index.sqlite_store import SQLiteStore


@dataclass(frozen=True, slots=True)
class Fusion:
    """How dense and lexical scores are mixed; defaults are tuned on the eval sets (docs/benchmarks.md)."""

    dense_weight: float = 0.5
    candidates: int = 200


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
) -> dict[int, float]:
    """Fused score per candidate chunk rowid."""
    rowids, vecs = store.matrix()
    if rowids.size == 0:
        return {}
    dense = vecs @ qvec
    k = min(fusion.candidates, dense.size)
    top = np.argpartition(-dense, k - 1)[:k]
    lexical = dict(store.lexical(fts_query(query), fusion.candidates))
    cand = {int(rowids[i]): i for i in top}
    if lexical:
        extra = np.array([r for r in lexical if r not in cand], dtype=np.int64)
        pos = np.searchsorted(rowids, extra)
        for r, p in zip(extra.tolist(), pos.tolist(), strict=True):
            if p < rowids.size and rowids[p] == r:
                cand[r] = p
    ids = list(cand)
    d = dense[[cand[r] for r in ids]].astype(np.float64)
    lx = np.array([lexical.get(r, 0.0) for r in ids], dtype=np.float64)
    d_norm = (d - d.min()) / (d.max() - d.min()) if d.max() > d.min() else np.ones_like(d)
    l_norm = lx / lx.max() if lx.size and lx.max() > 0 else np.zeros_like(lx)
    w = fusion.dense_weight if lexical else 1.0
    fused = w * d_norm + (1.0 - w) * l_norm
    return dict(zip(ids, fused.tolist(), strict=True))


def group_notes(
    store: SQLiteStore, chunk_scores: dict[int, float], limit: int, sections: int
) -> list[NoteHit]:
    rows = store.chunks(chunk_scores)
    per_note: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for rowid, score in chunk_scores.items():
        if rowid in rows:
            per_note[rows[rowid].path].append((score, rowid))
    ranked = sorted(per_note.items(), key=lambda kv: (-max(kv[1])[0], kv[0]))[:limit]
    titles = store.titles(p for p, _ in ranked)
    hits = []
    for path, scored in ranked:
        scored.sort(key=lambda s: (-s[0], s[1]))
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
        hits.append(NoteHit(path, titles.get(path) or path, round(scored[0][0], 4), secs))
    return hits
