"""Each full-text term's document frequency, kept by a store's ``apply`` rather than counted by a search.

BM25 needs how many rows hold each query term. Counted at search time, a common term costs 10-30 ms
at 1,000,000 chunks, and every commit (a watcher's one-note edit) made every count stale again.
Both stores keep the counts in the same transaction as the rows (SQLite's ``term_stats``, the
PostgreSQL store's migration 0003), so a search reads them in one indexed lookup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from vaultlens.index.store import NoteUpdate


def split(terms: str) -> set[str]:
    """A row's distinct terms where the full-text index stores them as they are (PostgreSQL's)."""
    return set(terms.split())


def added(
    updates: Sequence[NoteUpdate], tokens: Callable[[str], set[str]] = split
) -> tuple[Counter[str], Counter[str]]:
    """The rows each term gains among the batch's chunks and among its notes (a note holds the
    terms of all its chunks); ``tokens``: a row's distinct stored terms."""
    chunks: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    for u in updates:
        note: set[str] = set()
        for item in u.chunks:
            held = tokens(item.terms)
            chunks.update(held)
            note |= held
        notes.update(note)
    return chunks, notes


def rows_holding(texts: Iterable[str], tokens: Callable[[str], set[str]] = split) -> Counter[str]:
    """The rows each term is held by among rows of these terms (to subtract rows that leave)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(tokens(text))
    return counts


def change(gained: Counter[str], lost: Counter[str]) -> dict[str, int]:
    """Each term's net change in rows (a note rewritten with the same terms moves none: left out)."""
    net = Counter(gained)
    net.subtract(lost)
    return {t: n for t, n in net.items() if n}
