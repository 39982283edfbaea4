"""Typed results of status and doctor, with the JSON form every interface prints."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from vaultlens.embedding.base import EmbeddingSpace
from vaultlens.index.estimate import RebuildEstimate
from vaultlens.index.runs import RunRecord
from vaultlens.services.serial import AsDict


@dataclass(frozen=True, slots=True)
class TierStatus(AsDict):
    """The optional quality tier: the setting, the tier it resolves to and why, the stored model,
    and how many chunk texts it covers."""

    setting: str  # embedding.tier
    model: str | None  # the stored tier vectors' space; None before the first fill
    covered: int
    total: int
    chosen: str  # the tier in use: the setting itself, or what auto picked for this vault ("off": none)
    reason: str  # auto: why it picked that tier (the vault's script mix); "" otherwise
    behind: bool = False  # on, and chunk texts still lack a tier vector (search blends what is there)
    last_error: str | None = None  # why the last index run's fill stopped early (the tier's server failed)


@dataclass(frozen=True, slots=True)
class Cleared(AsDict):
    """What ``clear`` did: the vault, and whether there was an index to empty."""

    vault: str
    cleared: bool


@dataclass(frozen=True, slots=True)
class FileProblem:
    path: str
    status: str  # indexed (with a note, e.g. malformed front matter) | skipped | failed
    reason: str | None


@dataclass(frozen=True, slots=True)
class SpaceChange:
    """The settings name another embedding space than the index holds, and what switching costs."""

    configured: str | None  # the configured space, None when its provider cannot be built here
    estimate: RebuildEstimate | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        if self.configured is None:
            return {"configured": None, "error": self.message}
        extra = self.estimate.as_dict() if self.estimate else {}
        return {"configured": self.configured, **extra, "message": self.message}


@dataclass(frozen=True, slots=True)
class IndexStatus:
    vault: str
    index_dir: str
    indexed: bool
    cleared: bool = False
    files: dict[str, int] = field(default_factory=dict)  # status -> files
    notes: int = 0  # indexed Markdown notes only
    pdfs: int = 0  # indexed PDFs (index.attachments)
    canvases: int = 0  # indexed canvases (index.attachments)
    chunks: int = 0
    vectors: int = 0
    size_bytes: int = 0
    embedding_space: EmbeddingSpace | None = None
    space_change: SpaceChange | None = None
    problems: list[FileProblem] = field(default_factory=list)
    last_run: RunRecord | None = None
    rule_problems: list[str] = field(default_factory=list)  # ignore rules that could not be applied
    rechunk_pending: bool = False  # the chunking settings changed since the notes were chunked
    tier: TierStatus | None = None  # the quality tier, when it is on or holds vectors

    @property
    def configured_space_matches(self) -> bool:
        return self.space_change is None

    def as_dict(self) -> dict[str, Any]:
        base: dict[str, Any] = {
            "vault": self.vault,
            "index_dir": self.index_dir,
            "indexed": self.indexed,
            "rule_problems": self.rule_problems,
        }
        if not self.indexed:
            return base
        space = self.embedding_space
        return {
            **base,
            "cleared": self.cleared,
            "files": self.files,
            "notes": self.notes,
            "pdfs": self.pdfs,
            "canvases": self.canvases,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "size_bytes": self.size_bytes,
            "embedding_space": None if space is None else {**asdict(space), "label": space.describe()},
            "configured_space_matches": self.configured_space_matches,
            "space_change": None if self.space_change is None else self.space_change.as_dict(),
            "problems": [asdict(p) for p in self.problems],
            "last_run": None if self.last_run is None else self.last_run.as_dict(),
            "rechunk_pending": self.rechunk_pending,
            "tier": None if self.tier is None else self.tier.as_dict(),
        }


@dataclass(frozen=True, slots=True)
class DoctorReport:
    problems: list[str]  # the index is damaged or inconsistent: rebuild
    rule_problems: list[str]  # the vault's ignore rules could not be applied as written
    unused_vectors: int = 0  # kept for reuse after an interrupted run; not a problem
    ann_recall: float | None = None  # --deep: recall@10 of the ANN tier against exact search (None: none)
    unfinished_writes: list[str] = field(default_factory=list)  # the write journal: each names its fix

    @property
    def healthy(self) -> bool:
        return not self.problems and not self.rule_problems and not self.unfinished_writes

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "healthy": self.healthy}
