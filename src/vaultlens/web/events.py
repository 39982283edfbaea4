"""What the Status page follows live: index and tier-fill progress, watcher flushes.

The serving process's watcher reports into one :class:`EventHub` (it is the indexer's ``Progress``
and receives every flush report); ``/ui/events`` relays it as server-sent events. The hub keeps
only the latest events, so a page that connects late gets the current phase, not a backlog.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, replace

from vaultlens.web.sse import sse_event

KEEP = 100  # events kept for pages that poll a little late
PROGRESS_EVERY_S = 0.25  # at most four progress events a second per phase
POLL_S = 0.5  # how often an open event stream looks for news


Json = dict[str, object]  # an event's data, as sent


@dataclass(frozen=True, slots=True)
class Phase:
    """The phase of an index run in progress (or the last one finished), as the page shows it."""

    phase: str
    done: int
    total: int

    def as_dict(self) -> Json:
        return asdict(self)


class EventHub:
    """Thread-safe: the watcher thread publishes, the event stream reads by sequence number."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: deque[tuple[int, str, Json]] = deque(maxlen=KEEP)
        self._seq = 0
        self._progress: Phase | None = None
        self._sent_at = 0.0

    def publish(self, kind: str, data: Json) -> None:
        with self._lock:
            self._seq += 1
            self._events.append((self._seq, kind, data))

    def since(self, seq: int) -> list[tuple[int, str, Json]]:
        with self._lock:
            return [e for e in self._events if e[0] > seq]

    @property
    def last(self) -> int:
        with self._lock:
            return self._seq

    def progress(self) -> Phase | None:
        """The phase in progress (or the last one finished), as the page shows it."""
        with self._lock:
            return self._progress

    # ---- the indexer's Progress protocol ------------------------------------------------------
    def phase(self, name: str, total: int) -> None:
        with self._lock:
            self._progress = Phase(name, 0, total)
        self.publish("progress", self._progress.as_dict())
        self._sent_at = time.monotonic()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            if self._progress is None:
                return
            now = self._progress = replace(self._progress, done=self._progress.done + n)
        if now.done >= now.total or time.monotonic() - self._sent_at >= PROGRESS_EVERY_S:
            self._sent_at = time.monotonic()
            self.publish("progress", now.as_dict())


def _shown(phase: Phase | None) -> Json | None:
    return None if phase is None else phase.as_dict()


async def event_stream(
    hub: EventHub, watcher: Callable[[], Json] | None, seconds: float, poll_s: float = POLL_S
) -> AsyncIterator[bytes]:
    """``/ui/events``: the current progress and watcher state first, then what changes, for
    ``seconds`` (the browser's EventSource reconnects by itself and gets the state again). A server
    shutting down (watcher state ``closing``) says so and ends the stream, so the page does not keep
    showing the old state and the shutdown does not wait for the stream."""
    seq = hub.last
    state = watcher() if watcher else None
    yield b"retry: 2000\n\n" + sse_event("progress", _shown(hub.progress())) + sse_event("watcher", state)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await asyncio.sleep(poll_s)
        news = hub.since(seq)
        for _, kind, data in news:
            yield sse_event(kind, data)
        if news:
            seq = news[-1][0]
        now = watcher() if watcher else None
        if now != state:
            state = now
            yield sse_event("watcher", state)
        if state is not None and state.get("state") == "closing":
            return
