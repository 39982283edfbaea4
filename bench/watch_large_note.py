"""A 9 MB note in a watched vault: where the watcher's flush spends its time, and how soon deleting
the note ends the flush.

A vault with one small note is indexed with the bundled model; then a ~9 MB note (headings and
paragraphs, under the 10 MB limit) is written and the watcher's path-level sync
(`Indexer.sync`, what a flush runs) starts in a thread. The script measures reading + parsing +
chunking, and the model's rate over the first embedding batches; then it deletes the note and
measures how long the sync still runs. The baseline, in the same run, is the time embedding every
chunk of the note would take at the measured rate (what the flush did before a deleted note's
work was dropped). Bar: the sync ends within 2 provider batches' time of the delete.

Usage: .venv/bin/python bench/watch_large_note.py [--mb 9] [--batches 2]
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import vaultlens as services
from _common import machine, save, table, temp_home, verdict
from vaultlens.chunking.source import note_from_bytes, read_note
from vaultlens.embedding.base import EmbeddingProvider, Vectors
from vaultlens.index.indexing.indexer import Indexer
from vaultlens.index.runs import RunStats


def big_note(mb: float) -> str:
    para = "Sourdough starters need flour and water every day; wild yeast makes the dough rise. " * 6
    parts = ["# Big\n\n"]
    size, i = 0, 0
    while size < mb * 1_000_000:
        block = f"## Section {i}\n\n{para}\n\n- step {i} with [[Link {i % 50}]] and #tag{i % 50}\n\n"
        parts.append(block)
        size += len(block)
        i += 1
    return "".join(parts)


class Timed:
    """The real provider, with the time and size of each call."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self.space = inner.space
        self.batch_size = inner.batch_size
        self.remote = inner.remote
        self.calls: list[tuple[float, int]] = []  # (seconds, texts)

    def embed(self, texts: Sequence[str]) -> Vectors:
        started = time.monotonic()
        out = self.inner.embed(texts)
        self.calls.append((time.monotonic() - started, len(texts)))
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=9.0)
    parser.add_argument("--batches", type=int, default=2, help="provider batches before the delete")
    args = parser.parse_args()
    with temp_home("large-note") as tmp:
        vault = Path(tmp) / "vault"
        vault.mkdir()
        (vault / "Small.md").write_text("# Small\n\nA small note about cats.\n", encoding="utf-8")
        app = services.App.open(vault, {"embedding.provider": "local"})
        services.index(app)
        note = vault / "Big.md"
        note.write_text(big_note(args.mb), encoding="utf-8")
        size_mb = note.stat().st_size / 1_000_000

        started = time.monotonic()
        source = note_from_bytes(read_note(vault, "Big.md"), app.chunker())
        parse_s = time.monotonic() - started
        chunks = len(source.chunks)

        provider = Timed(app.provider())
        stats: list[RunStats] = []
        with app.writing(), app.live.lease(create=True) as store:
            indexer = Indexer(app.vault, store, provider, app.settings)
            sync_started = time.monotonic()
            worker = threading.Thread(target=lambda: stats.append(indexer.sync(["Big.md"])))
            worker.start()
            while len(provider.calls) < args.batches and worker.is_alive():
                time.sleep(0.01)
            first_embed_s = time.monotonic() - sync_started - sum(s for s, _ in provider.calls)
            note.unlink()
            deleted = time.monotonic()
            worker.join()
            after_delete_s = time.monotonic() - deleted
            stored = "Big.md" in store.file_records()
        per_chunk = sum(s for s, _ in provider.calls) / max(1, sum(n for _, n in provider.calls))
        batch_s = per_chunk * provider.batch_size
        baseline_s = per_chunk * chunks
        ok = after_delete_s <= 2 * batch_s + 1 and not stored
        rows = [
            ("measure", "value"),
            ("note size (MB)", f"{size_mb:.1f}"),
            ("chunks", str(chunks)),
            ("read + parse + chunk (s)", f"{parse_s:.1f}"),
            ("sync before its first embedding call (s)", f"{first_embed_s:.1f}"),
            ("model rate (chunks/s)", f"{1 / per_chunk:.1f}"),
            ("baseline: embed every chunk (s)", f"{baseline_s:.0f}"),
            ("sync ran on after the delete (s)", f"{after_delete_s:.1f}"),
            ("chunks embedded", str(stats[0].chunks_embedded if stats else "-")),
            ("deleted note in the index", str(stored)),
        ]
        print(table(rows))
        print(f"{verdict(ok)}: the sync ends within 2 batches ({2 * batch_s:.1f} s) of the delete")
        save(
            "watch_large_note",
            {
                "machine": machine(),
                "mb": round(size_mb, 2),
                "chunks": chunks,
                "parse_s": round(parse_s, 2),
                "before_first_embed_s": round(first_embed_s, 2),
                "chunks_per_s": round(1 / per_chunk, 2),
                "baseline_s": round(baseline_s, 1),
                "after_delete_s": round(after_delete_s, 2),
                "stored": stored,
                "pass": ok,
            },
        )


if __name__ == "__main__":
    main()
