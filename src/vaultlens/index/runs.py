"""What one index run did (:class:`RunStats`) and how the store remembers it (:class:`RunRecord`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass
class RunStats:
    files_scanned: int = 0  # every file read for the index: notes, PDFs and canvases
    notes_scanned: int = 0  # of those, Markdown notes
    pdfs_scanned: int = 0  # PDFs (index.attachments)
    canvases_scanned: int = 0  # canvases (index.attachments)
    files_changed: int = 0
    files_deleted: int = 0
    files_skipped: int = 0  # files held as skipped after the run (as `status` counts them), not only new ones
    files_failed: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_deleted: int = 0
    tier_embedded: int = 0  # chunk texts given a quality-tier vector (embedding.tier)
    tier_seconds: float = 0.0  # of ``seconds``, the time the tier took
    seconds: float = 0.0
    complete: bool = False  # every note of the vault reached the index (the tier may still lack some)
    tier_error: str = ""  # why the quality tier's fill stopped early (its server failed); the run is still ok

    def as_dict(self) -> dict[str, float | bool | str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RunStats:
        """Tolerant of stats written by older versions (unknown keys dropped, missing ones zero)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})


@dataclass(frozen=True, slots=True)
class RunRecord:
    started: float  # unix time
    finished: float | None
    status: str  # running | ok | failed | cancelled | interrupted (running, but its process is gone)
    stats: RunStats
    error: str | None = None  # why a failed run failed

    def as_dict(self) -> dict[str, Any]:
        """Flat form for JSON output: the run's times, status and error beside its counters."""
        out = {
            "started": self.started,
            "finished": self.finished,
            "status": self.status,
            **asdict(self.stats),
        }
        return {**out, "error": self.error} if self.error else out
