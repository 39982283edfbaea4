"""What a feature service receives instead of the whole :class:`~vaultlens.services.app.App`.

A feature (Ask, review, the audits, note writes) needs a few narrow things: the vault's files
(:class:`VaultFiles`: the root, the size limit, the chunker the index uses), read access to the
index (:class:`IndexReader`: snapshots and the models that embed a query for them) and, to
change a note, a :data:`Planner`. The facade (:mod:`vaultlens.services.verbs`) builds them from
the App, so how a service gets its store or its files changes in one place.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from vaultlens.chunking.attachments import attachment_chunks, kind_of
from vaultlens.chunking.chunker import Chunk, MarkdownChunker
from vaultlens.chunking.source import NoteSource, RawNote, load_note, read_note
from vaultlens.vault.scan import ScanResult, VaultRules, scan_vault

if TYPE_CHECKING:
    from vaultlens.embedding.base import EmbeddingProvider
    from vaultlens.embedding.tiers.base import TierProvider
    from vaultlens.index.store import Store


@dataclass(frozen=True, slots=True)
class VaultFiles:
    """The vault's notes on disk, read through the note-loading seam with the index's limits."""

    root: Path
    max_bytes: int  # index.max_file_mb in bytes: larger notes are refused, as the indexer skips them
    chunker: MarkdownChunker

    def read(self, rel: str) -> RawNote:
        return read_note(self.root, rel, self.max_bytes)

    def load(self, rel: str) -> NoteSource:
        return load_note(self.root, rel, self.chunker, self.max_bytes)

    def chunks(self, rel: str) -> list[Chunk]:
        """The chunks of an indexed file as it is now: a note's, or a PDF's or canvas's (whose text is
        read as the indexer reads it; :class:`Unreadable` when it cannot be)."""
        kind = kind_of(rel)
        if kind is None:
            return self.load(rel).chunks
        return attachment_chunks(kind, rel, self.read(rel).raw, self.chunker)

    def rules(self) -> VaultRules:
        return VaultRules(self.root, self.max_bytes)

    def scan(self, obsidian_sees: bool = False) -> ScanResult:
        return scan_vault(self.root, self.max_bytes, obsidian_sees=obsidian_sees)

    def rule_problems(self) -> list[str]:
        """Ignore rules that could not be applied as written (a broken .obsidian/app.json)."""
        return list(self.rules().rule_problems)


class IndexReader(Protocol):
    """Read access to the index: a snapshot per block, and the models a query is embedded with."""

    def reading(self) -> AbstractContextManager[Store]: ...
    def provider(self) -> EmbeddingProvider: ...
    def search_tier(self, store: Store) -> TierProvider | None: ...
