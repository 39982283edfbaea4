"""The bodies both store backends share, written over the contract's own members (index/store.py),
so the contract stays declarations only and each backend overrides what it answers faster."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from vaultlens.embedding.base import EmbeddingSpace, Vectors
from vaultlens.errors import SpaceMismatch
from vaultlens.index.store import FileRecord, LexicalHits, Store, grouped_keys, space_matches

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from vaultlens.index.progress import Progress
    from vaultlens.index.store import ChunkKeys


class StoreDefaults(Store):
    """A backend's base: every member here is answered from other members of the contract."""

    reads_in_server = False

    @property
    def cleared(self) -> bool:
        return self.get_meta("cleared_at") is not None

    @property
    def space(self) -> EmbeddingSpace | None:
        raw = self.get_meta("space")
        return None if raw is None else EmbeddingSpace.from_json(raw)

    @property
    def tier_space(self) -> EmbeddingSpace | None:
        raw = self.get_meta("tier_space")
        return None if raw is None else EmbeddingSpace.from_json(raw)

    def set_space(self, space: EmbeddingSpace) -> None:
        self.set_meta("space", space.to_json())

    def check_space(self, space: EmbeddingSpace) -> None:
        stored = self.space
        if stored is None or space_matches(stored, space):
            return
        raise SpaceMismatch(
            f"The index was built with {stored.describe()}, but the settings now say {space.describe()}. "
            + self.rebuild_estimate(space).describe(),
            hint="Vectors of two models cannot be mixed. Run `vaultlens rebuild` to re-embed every note "
            "with the new model (or `vaultlens rebuild --background` to keep searching the old index "
            "meanwhile), or change the settings back.",
        )

    def file_problems(self) -> list[FileRecord]:
        return sorted((r for r in self.file_records().values() if r.reason), key=lambda r: r.path)

    def load_derived(self, name: str, generation: int) -> dict[str, npt.NDArray[Any]] | None:
        return None

    def save_derived(self, name: str, generation: int, arrays: dict[str, npt.NDArray[Any]]) -> None:
        return None

    def neighbours(self, keys: ChunkKeys, k: int) -> tuple[ChunkKeys, ChunkKeys] | None:
        return None

    def refresh_ann(self, progress: Progress) -> None:
        return None

    def ann_recall(self, queries: int = 200, k: int = 10) -> float | None:
        return None

    def note_chunk_scores(
        self, query: Vectors, paths: Iterable[str]
    ) -> tuple[dict[str, list[int]], npt.NDArray[np.float32]]:
        groups = self.note_chunk_keys(paths)
        return groups, self.scores(query, grouped_keys(groups))

    def lexical(self, terms: Sequence[str], chunk_limit: int, note_limit: int) -> LexicalHits:
        with self.snapshot():
            chunks = self.lexical_chunks(terms, chunk_limit)
            return LexicalHits(chunks, self.lexical_notes(terms, note_limit).by_path() if chunks else {})
