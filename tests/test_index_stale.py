"""A large note deleted or changed while its chunks are embedded: the rest of its work is dropped
between two embedding batches, and nothing of the version that was read reaches the index."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import vaultlens
from vaultlens.embedding.base import Vectors
from vaultlens.index.indexing.indexer import Indexer
from vaultlens.testing import HashingEmbeddingProvider
from vl_support import write_vault

BATCH = 32
BIG = "# Big\n\n" + "".join(
    f"## Part {i}\n\nSourdough part {i}: feed the starter, fold the dough, wait for it to rise.\n\n"
    for i in range(1500)
)


class MeddlingProvider(HashingEmbeddingProvider):
    """The fake model; at its first call, something happens to the big note on disk."""

    def __init__(self, meddle: Callable[[], object]) -> None:
        super().__init__(batch_size=BATCH)
        self.meddle: Callable[[], object] | None = meddle

    def embed(self, texts: Sequence[str]) -> Vectors:
        if self.meddle is not None and any("Sourdough part" in t for t in texts):
            meddle, self.meddle = self.meddle, None
            meddle()
        return super().embed(texts)


def _meddlers(note: Path) -> dict[str, Callable[[], object]]:
    return {
        "deleted": note.unlink,
        "changed": lambda: note.write_text("# Big\n\nNow a short note.\n", encoding="utf-8"),
    }


@pytest.mark.parametrize("how", ["deleted", "changed"])
@pytest.mark.parametrize("path", ["sync", "run"])
def test_a_big_note_deleted_or_changed_while_embedding_is_dropped(
    tmp_path: Path, how: str, path: str
) -> None:
    vault = write_vault(tmp_path / "v", {"Small.md": "# Small\n\nA small note about cats.\n"})
    app = vaultlens.App.open(vault, {"embedding.provider": "fake"})
    vaultlens.index(app)
    note = vault / "Big.md"
    note.write_text(BIG, encoding="utf-8")
    provider = MeddlingProvider(_meddlers(note)[how])
    with app.writing(), app.live.lease(create=True) as store:
        indexer = Indexer(app.vault, store, provider, app.settings)
        stats = indexer.sync(["Big.md"]) if path == "sync" else indexer.run()
        record = store.file_records().get("Big.md")
    assert provider.texts_embedded <= BATCH, "the rest of the read version was still embedded"
    assert stats.chunks_embedded == provider.texts_embedded
    assert record is None, "the version that was read reached the index"
    vaultlens.index(app)  # the next run (or the watcher's next flush) takes the file as it is now
    with app.reading() as store:
        assert ("Big.md" in store.file_records()) == (how == "changed")


def test_a_text_dropped_with_a_stale_note_is_still_embedded_for_another(tmp_path: Path) -> None:
    """B/Big.md, a copy committed in a later batch, shares every embedded text with A/Big.md (same
    title, same sections), which is deleted while it is embedded: B's chunks still get vectors."""
    vault = write_vault(tmp_path / "v", {"A/Big.md": BIG, "B/Big.md": BIG})
    app = vaultlens.App.open(vault, {"embedding.provider": "fake", "index.batch_files": "1"})
    provider = MeddlingProvider((vault / "A" / "Big.md").unlink)
    with app.writing(), app.live.lease(create=True) as store:
        Indexer(app.vault, store, provider, app.settings).run()
        assert set(store.file_records()) == {"B/Big.md"}
        assert not store.problems(), "a chunk of B/Big.md has no vector"
