"""What the page's server remembers between two requests of one flow.

A send's proposal is kept by its token until the user accepts it (the verb needs the proposal,
which carries the exact prompt, not only its hash); a review's result is kept by id so the user
can change the plan's parameters without sending the notes again. Both are bounded: the oldest
entries go first.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from vaultlens.errors import InvalidInput, Proposal
from vaultlens.services.app import App
from vaultlens.services.verbs.auditing import SavedStructure, TopicsResult
from vaultlens.services.verbs.changing import ReviewResult
from vaultlens.web.csrf import Csrf
from vaultlens.web.events import EventHub

T = TypeVar("T")
KEPT = 64


class Kept(Generic[T]):
    """A small thread-safe map that forgets its oldest entry past ``KEPT``."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._items: OrderedDict[str, T] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, key: str, value: T) -> str:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > KEPT:
                self._items.popitem(last=False)
        return key

    def get(self, key: str) -> T:
        with self._lock:
            found = self._items.get(key)
        if found is None:
            raise InvalidInput(
                f"This page no longer knows that {self.what} (the server restarted, or it is too old).",
                hint="Reload the page and start again.",
            )
        return found


Watcher = Callable[[], dict[str, object]]  # the serving process's watcher: its state and why


@dataclass
class WebState:
    app: App
    csrf: Csrf = field(default_factory=Csrf)
    hub: EventHub = field(default_factory=EventHub)
    watcher: Watcher | None = None
    proposals: Kept[Proposal] = field(default_factory=lambda: Kept("proposal"))
    reviews: Kept[ReviewResult] = field(default_factory=lambda: Kept("review"))
    audit: SavedStructure | None = None  # the last structure audit (run here, or saved by an earlier run)
    topics: TopicsResult | None = None  # the last topic clusters found from the page

    def keep_review(self, result: ReviewResult) -> str:
        return self.reviews.put(secrets.token_hex(8), result)
