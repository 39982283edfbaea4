"""Embedding ahead of the indexer: a note's chunk texts go to the local model as soon as the note
is read, in background threads, so reading, chunking and the store's writes overlap the model
(most of an index run) instead of adding to its wall time. The bundled model gets two calls at once
(its ``calls_in_flight``): its worker pool then starts the next call's buckets while one call's
last bucket runs, instead of leaving a core idle at the end of every call and while this thread
checks the next batch's notes (index against raw embedding on 2,000 notes, the same runs
alternating: mean 1.21 -> 1.09, docs/benchmarks.md).

The indexer still decides what is written: it takes the vectors batch by batch, in its order,
and commits them. Before each model call the texts' notes are checked as before (a stat each,
``wanted``), so the rest of a note deleted or changed meanwhile is never embedded; a text only
stale notes wanted is dropped, and embedded again if a note read later wants it. A provider error
is raised where the indexer takes a text of the failed call, so the batches before it are
committed.

While notes are still being read the model is never held back: the indexer takes no vector before
the last note is read, and a model that had to wait sat idle for the rest of the reading
(2,000 synthetic notes: the bound of 1,024 was reached before the reading ended; a bound of 256
left the model waiting 1.9 s). Only memory bounds it then: at most READING_BOUND vectors wait
(32 MB at 512 dimensions, more than the 7,827 chunks of those 2,000 notes); a provider faster than
the reading (a remote server, the test provider) would otherwise hold a vector per chunk of the
vault, 400 MB at 200,000 chunks (docs/benchmarks.md: a first index of 50,000 notes peaked at 1,044 MB
that way). Once every note is read, at most ``ahead`` vectors wait to be taken.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from itertools import islice
from typing import TYPE_CHECKING

from vaultlens.embedding.base import EmbeddingProvider, Vectors

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

Wanted = Callable[[list[str]], list[str]]  # the hashes some current note still wants
READING_BOUND = 16_384  # vectors that may wait while notes are still being read


class EmbedAhead:
    """Background threads embedding queued texts in full provider batches, in the order they came."""

    def __init__(self, provider: EmbeddingProvider, wanted: Wanted, ahead: int) -> None:
        self._provider = provider
        self._wanted = wanted
        self._ahead = ahead
        self._todo: dict[str, str] = {}  # hash -> text, queued in order
        self._ready: dict[str, npt.NDArray[np.float32]] = {}
        self._dropped: set[str] = set()  # only stale notes wanted these
        self._failed: dict[str, BaseException] = {}
        self._running: set[str] = set()  # in a model call now
        self._cond = threading.Condition()
        self._stopped = False
        self._closed = False  # no more notes to read: a last part batch may go
        self._threads: list[threading.Thread] = []

    def add(self, texts: dict[str, str], also: Callable[[], None] = lambda: None) -> None:
        """Queue ``texts`` (a text already queued or embedded is not queued again); ``also`` runs
        under the lock ``wanted`` runs under (the caller registers the note that wants them)."""
        with self._cond:
            also()
            for h, text in texts.items():
                if h in self._dropped or not (h in self._ready or h in self._failed or h in self._running):
                    self._dropped.discard(h)
                    self._todo.setdefault(h, text)
            if self._todo and not self._threads:
                for _ in range(max(1, self._provider.calls_in_flight)):
                    thread = threading.Thread(target=self._loop, name="vaultlens-embed-ahead", daemon=True)
                    thread.start()
                    self._threads.append(thread)
            self._cond.notify_all()

    def take(
        self, texts: dict[str, str], advance: Callable[[int], None]
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The vectors of ``texts`` that some note still wanted when they were embedded, waiting for
        them; ``advance`` is told how many are done as they come (the caller's progress)."""
        with self._cond:  # a text nobody queued (or one the model finished and a batch took) is queued now
            self.add({h: t for h, t in texts.items() if h not in self._todo and h not in self._dropped})
        out: dict[str, npt.NDArray[np.float32]] = {}
        done: set[str] = set()
        with self._cond:
            while True:
                for h in texts:
                    if h in self._failed:
                        raise self._failed[h]
                came = [h for h in texts if h not in done and (h in self._ready or h in self._dropped)]
                for h in came:  # taken as they come: more texts than the bound never wait on each other
                    vec = self._ready.pop(h, None)
                    if vec is not None:
                        out[h] = vec
                done.update(came)
                advance(len(came))
                if came:
                    self._cond.notify_all()  # room to embed further ahead
                if len(done) == len(texts):
                    break
                self._cond.wait()
        return out

    def close(self) -> None:
        """Every note is read: texts short of a full provider batch are embedded too."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def stop(self) -> None:
        """No more calls to the model (the one running finishes in the background)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _loop(self) -> None:
        step = max(1, self._provider.batch_size)
        while True:
            with self._cond:
                while not self._stopped and (
                    len(self._todo) < (1 if self._closed else step)
                    or len(self._ready) + len(self._running)
                    >= (self._ahead if self._closed else max(self._ahead, READING_BOUND))
                ):
                    self._cond.wait()
                if self._stopped:
                    return
                batch = dict(islice(self._todo.items(), step))
                for h in batch:
                    del self._todo[h]
                wanted = set(self._wanted(list(batch)))
                self._dropped.update(h for h in batch if h not in wanted)
                texts = {h: t for h, t in batch.items() if h in wanted}
                self._running.update(texts)
            try:
                vectors: Vectors | None = self._provider.embed(list(texts.values())) if texts else None
            except BaseException as exc:  # noqa: BLE001 - re-raised where the indexer takes these texts
                with self._cond:
                    self._failed.update(dict.fromkeys(texts, exc))
                    self._running.difference_update(texts)
                    self._cond.notify_all()
                continue
            with self._cond:
                if vectors is not None:
                    self._ready.update(zip(texts, vectors, strict=True))
                self._running.difference_update(texts)
                self._cond.notify_all()
