"""Background rebuild: build the configured space next to the live index while it keeps answering.

The build happens in the staging folder ``r<k>`` (see :mod:`vaultlens.index.lifecycle`) under
its own writer lock, so the live index keeps its own lock and its readers. Every batch commits
as in a normal run, so a kill leaves the live index untouched and the next
``rebuild --background`` resumes the same folder. When the build is complete the live writer
lock is taken (a running ``watch`` holds it: the switch waits up to ``switch_wait`` seconds, then
reports and keeps the finished build), edits made meanwhile are caught up, the pointer is
replaced atomically, and the old folder is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vaultlens.config.settings import Settings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.errors import Cancelled
from vaultlens.index.indexing.indexer import Indexer
from vaultlens.index.indexing.tier_fill import TierFor
from vaultlens.index.lifecycle import IndexHome
from vaultlens.index.lock import WriterLock
from vaultlens.index.progress import Progress
from vaultlens.index.runs import RunStats
from vaultlens.index.store import space_matches


@dataclass(frozen=True, slots=True)
class RebuildResult:
    stats: RunStats  # the build in the staging folder
    catch_up: RunStats  # edits made during the build, applied under the live lock
    index_dir: Path  # the new live folder
    resumed: bool  # an earlier, interrupted build was continued

    def as_dict(self) -> dict[str, Any]:
        """The build's counters, and where the new index lives, whether it resumed, the catch-up's counters."""
        return {
            **self.stats.as_dict(),
            "index_dir": str(self.index_dir),
            "resumed": self.resumed,
            "catch_up": self.catch_up.as_dict(),
        }


def rebuild_background(
    home: IndexHome,
    vault: Path,
    provider: EmbeddingProvider,
    settings: Settings,
    progress: Progress | None = None,
    switch_wait: float = 30.0,
    tier: TierFor | None = None,
) -> RebuildResult:
    """Build the configured space next to the live index, then switch to it atomically.

    The quality tier (``tier``) is filled before the switch, outside the live lock; chunks the
    catch-up adds get theirs on the next run (search scores them with the main model meanwhile)."""
    home.collect_garbage()
    stage = home.staging_dir()
    with WriterLock(stage):  # one rebuild per staging folder; the live lock stays free meanwhile
        store = home.backend.open(stage)
        if store.space is not None and not space_matches(store.space, provider.space):
            store.close()  # an unfinished build for yet another space: start over
            home.backend.wipe(stage)
            store = home.backend.open(stage)
        resumed = store.counts().chunks > 0
        try:
            try:
                stats = Indexer(vault, store, provider, settings, progress, tier).run()
            except Cancelled as exc:  # `index` would update the live index, not resume this build
                raise Cancelled(
                    f"{exc.message} The live index is untouched and still answers searches.",
                    hint="Run `vaultlens rebuild --background` again to resume the build where it stopped.",
                ) from None
            with home.live_lock(switch_wait):
                catch_up = Indexer(vault, store, provider, settings).run()
                old = home.switch_to(stage)
        finally:
            store.close()
    home.retire(old)
    return RebuildResult(stats, catch_up, stage, resumed)
