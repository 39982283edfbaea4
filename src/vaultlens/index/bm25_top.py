"""The best BM25 rows of a query without scoring every row that holds a common word (MaxScore).

FTS5 (and the PostgreSQL store's BM25) scores every row its match finds before sorting, so at
1,000,000 chunks a query with one word found in a tenth of the chunks scores 100,000 rows for its
best 200, most of a search's time (docs/benchmarks.md). BM25 bounds what one term adds to a row's
score: less than ``idf * (k1 + 1)``. A probe over the query's rare terms gives a floor under the
k-th best score; the common terms whose bounds together stay under that floor cannot lift a row
holding only them into the best k. So the best k hold one of the other (*essential*) terms: only
those rows are found, and each is scored with every term. The result is the plain query's (the
same rows and scores, up to the order in which the terms' shares are added: a float's last bit).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

K1 = 1.2  # BM25's k1 (FTS5's bm25 function and index/postgres/fulltext.py): a term adds < idf * (K1 + 1)
B = 0.75  # BM25's b (the same two)
IDF_FLOOR = 1e-6  # FTS5 floors idf just above zero; a term at the floor cannot move a score
PRUNE_FROM_ROWS = 20_000  # rows a plain query scores from which pruning pays for its probe (~10 ms)

Query = Callable[[list[str], list[str], int], list[tuple[Any, float]]]
"""(match, also, limit) -> the best ``limit`` (key, score) rows, best first, of the rows holding a term
of ``match``, each scored over the terms of ``match`` and ``also``."""


def idf(rows: int, df: int) -> float:
    """FTS5's idf of a term in ``df`` of ``rows`` rows, floored just above zero as FTS5 does."""
    return max(math.log((rows - df + 0.5) / (df + 0.5)), IDF_FLOOR)


def useful(idf: dict[str, float]) -> dict[str, float]:
    """The terms whose idf is above the floor (a term in more than half the rows adds ~0 to any
    score, but would have every such row scored), or the rarest one when none is."""
    above = {t: v for t, v in idf.items() if v > IDF_FLOOR}
    if above or not idf:
        return above
    rarest = max(idf, key=idf.__getitem__)
    return {rarest: idf[rarest]}


@dataclass(frozen=True)
class Weighed:
    """A query's terms as both stores' chunk and note queries weigh them."""

    mass: float  # the idf of every term summed: a score divided by it is on the contract's scale
    held: dict[str, float]  # the useful terms some chunk holds, with their idf
    plain: bool  # few enough rows hold them that a plain query beats pruning's probe


def weigh(rows: int, dfs: Mapping[str, int]) -> Weighed | None:
    """The query over ``rows`` chunks with these document frequencies; None when no chunk holds any
    of its terms (a term no chunk holds matches nothing, and a note holds a term only through one)."""
    idf_of = {t: idf(rows, df) for t, df in dfs.items()}
    held = {t: v for t, v in useful(idf_of).items() if dfs[t]}
    if not held:
        return None
    return Weighed(sum(idf_of.values()), held, sum(dfs[t] for t in held) < PRUNE_FROM_ROWS)


def note_weights(notes: int, dfs: Mapping[str, int]) -> dict[str, float]:
    """The note-level query's useful terms and their idf over ``notes`` notes (a term no note holds
    left out)."""
    return useful({t: idf(notes, df) for t, df in dfs.items() if df})


def top(run: Query, idf: Mapping[str, float], limit: int, plain: bool) -> list[tuple[Any, float]]:
    """The best ``limit`` rows for the terms of ``idf``: the plain query when few rows hold them
    (:attr:`Weighed.plain`), else :func:`best_rows`."""
    return run(list(idf), [], limit) if plain else best_rows(run, idf, limit)


def best_rows(run: Query, idf: Mapping[str, float], limit: int) -> list[tuple[Any, float]]:
    """The ``limit`` best rows for the terms of ``idf`` (keys: terms the table holds; values: their
    idf in that table, or a bound above it), as ``run(all terms, [], limit)`` would return them."""
    order = sorted(idf, key=lambda t: (idf[t], t))  # common first
    if not order or limit <= 0:
        return []
    probe = [t for t in order if idf[t] >= idf[order[-1]] / 2]  # the rare end: few rows to score
    found = run(probe, [], limit)
    if len(probe) == len(order):
        return found
    if len(found) < limit:  # the rare terms cannot fill the list: the common ones must be scored
        return run(order, [], limit)
    floor = found[-1][1]  # the limit-th best full score is at least this
    cut, bound = 0, 0.0
    for t in order[:-1]:
        bound += idf[t] * (K1 + 1)
        if bound >= floor:
            break
        cut += 1
    return run(order[cut:], order[:cut], limit)
