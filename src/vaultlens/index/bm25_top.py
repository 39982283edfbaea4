"""FTS5's best BM25 rows without scoring every row that holds a common word (MaxScore pruning).

FTS5 scores every row its MATCH finds before it sorts them, so at 1,000,000 chunks a query with
one word found in a tenth of the chunks scores 100,000 rows for its best 200, most of a search's
time (docs/benchmarks.md). BM25 bounds what one term adds to a row's score: less than
``idf * (k1 + 1)``. A probe over the query's rare terms gives a floor under the k-th best score;
the common terms whose bounds together stay under that floor cannot lift a row holding only them
into the best k. So the best k hold one of the other (*essential*) terms, and are found among the
best k of the essential terms alone and the best k of the essential terms ``AND`` the common ones:
FTS5 scores those rows with every term, seeking in the common terms' lists instead of reading them.

The result is the plain query's: the same rows with the same scores (up to the order in which the
terms' shares are added, the last bit of a float).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

K1 = 1.2  # FTS5 bm25()'s k1: one term's share of a score is below idf * (K1 + 1)

Query = Callable[[str, int], list[tuple[Any, float]]]
"""(FTS5 MATCH expression, limit) -> the best (key, score) rows, best first, score = -bm25()."""


def any_of(terms: list[str]) -> str:
    """The MATCH expression for rows holding any of ``terms`` (each quoted, so read as a word)."""
    return " OR ".join(f'"{t}"' for t in terms)


def best_rows(run: Query, idf: Mapping[str, float], limit: int) -> list[tuple[Any, float]]:
    """The ``limit`` best rows for the terms of ``idf`` (keys: terms the table holds; values: their
    idf in that table, or a bound above it), as ``run(any_of(all terms), limit)`` would return them."""
    order = sorted(idf, key=lambda t: (idf[t], t))  # common first
    if not order or limit <= 0:
        return []
    probe = [t for t in order if idf[t] >= idf[order[-1]] / 2]  # the rare end: few rows to score
    found = run(any_of(probe), limit)
    if len(probe) == len(order):
        return found
    if len(found) < limit:  # the rare terms cannot fill the list: the common ones must be scored
        return run(any_of(order), limit)
    floor = found[-1][1]  # the limit-th best full score is at least this
    cut, bound = 0, 0.0
    for t in order[:-1]:
        bound += idf[t] * (K1 + 1)
        if bound >= floor:
            break
        cut += 1
    if cut == 0:
        return run(any_of(order), limit)
    common, essential = order[:cut], order[cut:]
    alone = found if essential == probe else run(any_of(essential), limit)
    both = run(f"({any_of(essential)}) AND ({any_of(common)})", limit)
    best = dict(alone)
    for key, score in both:  # a row holding common terms too: its full score is the higher one
        best[key] = max(score, best.get(key, score))
    return sorted(best.items(), key=lambda kv: -kv[1])[:limit]
