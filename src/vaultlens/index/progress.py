"""How a long index operation reports its phases: the indexer, the tier fill, the store's ANN build
and a rebuild all take one, so it lives beside them rather than in any of them."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def phase(self, name: str, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...


class NoProgress:
    """Progress for callers that show none (tests, the watcher's small flushes)."""

    def phase(self, name: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass
