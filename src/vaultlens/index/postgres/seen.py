"""Note paths of chunks a statement already returned, kept for the rest of their generation.

A search reads its candidate chunks' paths after their scores: on PostgreSQL each read is a round trip
and a statement the server plans and runs while the other threads' statements wait for a core. The
dense candidates and the lexical ones' scores come from statements that read the chunk rows anyway,
so those return the path too, and :meth:`SeenPaths.split` answers the path read from what they saw.

A chunk key names one row, and within one committed generation a row's path cannot change; a newer
generation starts afresh, so a path is never served to a snapshot other than the one that read it.
"""

from __future__ import annotations

from collections.abc import Iterable

CAP = 200_000  # paths kept (about 20 MB); past it the memo starts afresh


class SeenPaths:
    """Thread-safe by replacement: one (generation, paths) pair, swapped whole, never mixed."""

    def __init__(self, cap: int = CAP) -> None:
        self.cap = cap
        self._state: tuple[int, dict[int, str]] = (-1, {})

    def add(self, generation: int | None, pairs: Iterable[tuple[int, str]]) -> None:
        """Remember ``pairs`` (key, path) read in a snapshot of ``generation`` (None: outside one)."""
        gen, paths = self._state
        if generation is None or generation < gen:
            return  # no snapshot, or an older one's rows: the newer generation's memo stays
        if generation > gen or len(paths) > self.cap:
            paths = {}
            self._state = (generation, paths)
        paths.update(pairs)

    def split(self, generation: int | None, keys: Iterable[int]) -> tuple[dict[int, str], list[int]]:
        """The paths seen of ``keys`` in ``generation``, and the keys still to read."""
        gen, paths = self._state
        if generation is None or gen != generation:
            return {}, list(keys)
        found: dict[int, str] = {}
        missing: list[int] = []
        for key in keys:
            path = paths.get(key)
            if path is None:
                missing.append(key)
            else:
                found[key] = path
        return found, missing
