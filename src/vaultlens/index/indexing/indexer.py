"""Incremental indexing: only what changed is read, only new chunk texts are embedded.

Change detection has three tiers: (1) size and mtime equal -> skip without reading;
(2) file hash equal -> refresh the stamp only; (3) re-chunk, and embed only chunks whose
embedded text has no vector yet. Work is committed in batches, so Ctrl-C or kill -9 loses
at most the batch in flight and the next run resumes from there.

A note deleted or changed while its chunks are being embedded is dropped between two embedding
batches (a 9 MB note is thousands of chunks, minutes with a local model): nothing of it is written,
and its own event (the watcher) or the next run takes the file as it is now.

A note whose path is gone while a new path holds the same bytes was moved: the old path is
deleted in the same batch that writes the new one, so no search during a run misses it (a
renamed folder is applied batch by batch, each note in one step). Other gone paths are
deleted first.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from vaultlens.chunking.attachments import Unreadable, attachment_chunks, kind_of
from vaultlens.chunking.chunker import Chunk, MarkdownChunker
from vaultlens.chunking.scripts import ScriptMix
from vaultlens.chunking.source import NoteReader, NotText, note_from_bytes, read_note
from vaultlens.config.settings import Settings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.errors import Cancelled, NoteNotFound, ProviderError, VaultlensError
from vaultlens.fsutil import sha256_hex
from vaultlens.index.indexing.embed_ahead import EmbedAhead
from vaultlens.index.indexing.texts import embed_text, lexical_text
from vaultlens.index.indexing.tier_fill import TierFor, body_mix, fill_tier, record_scripts, stored_scripts
from vaultlens.index.progress import NoProgress, Progress
from vaultlens.index.runs import RunStats
from vaultlens.index.store import FileRecord, IndexedChunk, NoteUpdate, Store
from vaultlens.vault.model import Link
from vaultlens.vault.safepath import resolve_note_path
from vaultlens.vault.scan import Skipped, VaultFile, VaultRules, printable_path, scan_vault

if TYPE_CHECKING:  # numpy is loaded by the model: a run with nothing to embed never imports it
    import numpy as np
    import numpy.typing as npt

# A batch is committed after COMMIT_CHUNKS chunks or index.batch_files notes, whichever comes
# first: the most a crash can lose.
COMMIT_CHUNKS = 256
# after the quality tier's server failed, later runs of the same indexer (watch flushes) skip the tier this
# long: each try costs a fill its retries (bench/tier_remote.py: 7.6 s with the default 4)
TIER_PAUSE_S = 60.0


@dataclass
class _Pending:
    record: FileRecord
    embed: dict[str, str]  # embed_hash -> text, for chunks that still need a vector
    removed: int = 0  # chunks of the previous version that are gone
    chunks: list[tuple[Chunk, str]] = field(default_factory=list)  # (chunk, its embed hash)
    links: tuple[Link, ...] = ()
    replaces: list[str] = field(default_factory=list)  # gone paths with these bytes (a move)
    stale: bool = False  # deleted or changed since it was read: nothing of it is written
    seen: tuple[int, int] | None = None  # (size, mtime_ns) last confirmed to hold the read bytes
    real: str | None = None  # the file read (checked again by a read when its stamp changed)

    def update(self) -> NoteUpdate:
        """The note's new state, its chunks' lexical terms made now: held from the read to the commit
        they were a third copy of every changed note's text (a first index of 50,000 notes: 220 MB)."""
        indexed = [IndexedChunk(c, h, lexical_text(self.record.path, self.record, c)) for c, h in self.chunks]
        return NoteUpdate(self.record, indexed, self.links)

    def still_current(self, vault: Path) -> bool:
        """The file still holds the bytes being indexed: a stat, and a hash only when the stat differs."""
        rec = self.record
        try:
            if self.real is None:
                self.real = str(resolve_note_path(vault, rec.path).real)
            st = os.stat(self.real)
            stamp = (st.st_size, st.st_mtime_ns)
            if stamp not in (self.seen, (rec.size, rec.mtime_ns)):
                if read_note(vault, rec.path).file_hash != rec.file_hash:
                    return False
                self.seen = stamp
        except (OSError, VaultlensError):
            return False
        return True


class _Freshness:
    """Which chunk texts are still wanted: before each embedding call, the notes that want them are
    checked (a stat each), and a note deleted or changed meanwhile is marked stale."""

    def __init__(self, vault: Path, pending: Iterable[_Pending]) -> None:
        self.vault = vault
        self.owners: dict[str, list[_Pending]] = {}
        for item in pending:
            self.add(item)

    def add(self, item: _Pending) -> None:
        for ehash in item.embed:
            self.owners.setdefault(ehash, []).append(item)

    def wanted(self, hashes: list[str]) -> list[str]:
        notes = {id(p): p for h in hashes for p in self.owners.get(h, ())}
        for item in notes.values():
            if not item.stale and not item.still_current(self.vault):
                item.stale = True
        return [h for h in hashes if any(not p.stale for p in self.owners.get(h, ()))]


@dataclass
class _Plan:
    deletes: list[str]
    updates: list[NoteUpdate] = field(default_factory=list)  # records of skipped files
    touch: list[FileRecord] = field(default_factory=list)  # same bytes, new stamp
    pending: list[_Pending] = field(default_factory=list)  # notes to re-chunk


class Indexer:
    def __init__(
        self,
        vault: Path,
        store: Store,
        provider: EmbeddingProvider,
        settings: Settings,
        progress: Progress | None = None,
        tier: TierFor | None = None,
    ) -> None:
        self.vault = vault
        self.store = store
        self.provider = provider
        self.tier = tier  # the optional quality tier for this store, filled after each run and sync
        self._in_tier = False  # the run reached the tier phase (what Ctrl-C stopped)
        self._filling = False  # a tier fill is in progress: a sync it lets in leaves the tier to it
        # set by a watcher: ``stop`` ends a run or a fill at its next batch (Cancelled), and
        # ``between_batches`` flushes pending changes between two batches of a fill
        self.stop: threading.Event | None = None
        self.between_batches: Callable[[], None] | None = None
        self._tier_failed: tuple[float, str] | None = None  # when and why the tier's server last failed
        self.settings = settings
        self.progress = progress or NoProgress()
        s = settings.index
        self._max_bytes = int(s.max_file_mb * 1_000_000)
        self.chunker = MarkdownChunker(s.chunk_target, s.chunk_max, s.chunk_overlap)
        self._kinds = frozenset(s.attachments)  # the files besides notes it reads (pdf, canvas)
        # reads the plan's notes, each folder checked once (resolving every path cost as much as the read)
        self._reader: NoteReader | None = None

    def run(self) -> RunStats:
        started = time.monotonic()
        self.store.check_space(self.provider.space)
        if self.store.space is None and self.provider.space.dimensions:
            self.store.set_space(self.provider.space)
        run_id = self.store.start_run()
        stats = RunStats()
        try:
            self._run(stats)
        except (KeyboardInterrupt, Cancelled) as exc:
            stats.seconds = round(time.monotonic() - started, 3)
            self.store.finish_run(run_id, "cancelled", stats.as_dict())
            if isinstance(exc, KeyboardInterrupt) and self.stop is not None:
                raise  # a watcher's run: Ctrl-C stops the watcher, whatever it was doing
            done = (
                f"The index is up to date; the quality tier stopped after {stats.tier_embedded} new "
                "vectors, which are saved (search uses them already)."
                if self._in_tier
                else f"Indexing stopped; {stats.chunks_embedded} chunks embedded so far are saved."
            )
            raise Cancelled(
                done, hint="Run `vaultlens index` again to finish from where it stopped."
            ) from None
        except BaseException as exc:
            stats.seconds = round(time.monotonic() - started, 3)
            self.store.finish_run(
                run_id, "failed", {**stats.as_dict(), "error": str(exc) or type(exc).__name__}
            )
            raise
        stats.seconds = round(time.monotonic() - started, 3)
        self.store.finish_run(run_id, "ok", stats.as_dict())
        return stats

    def _run(self, stats: RunStats) -> None:
        self._forget_clear()
        scan = scan_vault(self.vault, self._max_bytes)
        records = self.store.file_records()
        # notes chunked under other rules must be re-chunked even if their bytes did not change
        # (only chunks whose text changed are then re-embedded)
        rechunk = self.store.get_meta("chunker") != self.chunker.signature
        if rechunk and not any(r.n_chunks for r in records.values()):
            # nothing was chunked yet (a new or cleared index): record the rules now, so a run
            # killed half-way resumes where it stopped instead of re-chunking every note
            self.store.set_meta("chunker", self.chunker.signature)
            rechunk = False
        files = scan.readable(self._kinds)
        skipped = [s for s in scan.skipped if self._reads(s.path)]
        present = {f.path for f in files} | {s.path for s in skipped}
        # a store without chunks holds, after this run, exactly the notes it writes: their script mix is
        # counted as each batch commits (while the model runs), not in a pass over the store at the end
        counted = ScriptMix() if not any(r.n_chunks for r in records.values()) else None
        counted = self._write(
            files, skipped, [p for p in records if p not in present], records, stats, rechunk, counted
        )
        if rechunk:
            self.store.set_meta("chunker", self.chunker.signature)
        self.store.drop_orphan_vectors()
        if stats.files_changed or stats.files_deleted or stored_scripts(self.store) is None:
            # what embedding.tier = auto picks from (a watch flush keeps it)
            record_scripts(self.store, counted)
        stats.complete = True  # a Ctrl-C from here on leaves only the ANN file or the tier unfinished
        self.store.refresh_ann(self.progress)
        self._fill_tier(stats)

    def _reads(self, path: str) -> bool:
        """A skip of ``path`` is recorded: a note's, a folder's, or a file of an attachment kind it reads."""
        kind = kind_of(path.rstrip("/"))
        return kind is None or path.endswith("/") or kind in self._kinds

    def _write(
        self,
        files: list[VaultFile],
        skipped: list[Skipped],
        gone: list[str],
        records: dict[str, FileRecord],
        stats: RunStats,
        rechunk: bool,
        counted: ScriptMix | None = None,
    ) -> ScriptMix | None:
        """Read, chunk, embed and commit every changed note. The plan holds every changed note's
        texts (about 5 KB a chunk): it is dropped on return, before the ANN tier is built (a first
        index of 50,000 notes peaked at 1.3 GB with both at once: docs/benchmarks.md). Returns
        ``counted`` plus the script mix of every note written (None stays None)."""
        # a local model embeds each note's texts from the moment it is read (index/indexing/embed_ahead.py);
        # a remote provider is called batch by batch, when each batch is committed
        ahead = None if self.provider.remote else self._ahead()
        try:
            plan = self._plan(files, skipped, gone, records, stats, rechunk, ahead)
            if ahead is not None:
                ahead[0].close()
            moved = self._match_moves(plan, records)
            first = [p for p in plan.deletes if p not in moved]
            self.store.apply(updates=plan.updates, deletes=first, touch=plan.touch)
            return self._embed_and_commit(plan.pending, stats, ahead, counted)
        finally:
            if ahead is not None:
                ahead[0].stop()

    def _ahead(self) -> tuple[EmbedAhead, _Freshness]:
        fresh = _Freshness(self.vault, ())
        return EmbedAhead(self.provider, fresh.wanted, ahead=4 * COMMIT_CHUNKS), fresh

    def _fill_tier(self, stats: RunStats) -> None:
        if self._filling:  # a flush between two batches of a fill: the fill takes its new texts
            return
        tier = None if self.tier is None else self.tier(self.store)
        if tier is None:
            return
        if self._tier_failed and time.monotonic() - self._tier_failed[0] < TIER_PAUSE_S:
            stats.tier_error = self._tier_failed[1]  # a watch flush does not wait for its retries again
            return
        self._in_tier = self._filling = True
        started = time.monotonic()
        try:
            fill_tier(self.store, tier, self.progress, stats, self.between_batches, self.stop)
            self._tier_failed = None
        except ProviderError as exc:  # the tier's server is down or slow: the index itself is complete
            stats.tier_error = exc.message
            self._tier_failed = (time.monotonic(), exc.message)
        finally:  # kept apart, so the main model's measured rate (rebuild estimates) stays its own
            self._filling = False
            stats.tier_seconds = round(time.monotonic() - started, 3)

    @staticmethod
    def _match_moves(plan: _Plan, records: dict[str, FileRecord]) -> set[str]:
        """Pair each gone path with a note to write that has the same file hash (a move or a
        rename); each pair is applied in one transaction. Returns the paired gone paths."""
        by_hash: dict[str, list[str]] = {}
        for path in reversed(plan.deletes):
            file_hash = records[path].file_hash
            if file_hash:
                by_hash.setdefault(file_hash, []).append(path)
        moved: set[str] = set()
        for item in plan.pending:
            file_hash = item.record.file_hash
            olds = by_hash.get(file_hash) if file_hash else None
            if olds:
                item.replaces.append(olds.pop())
                moved.update(item.replaces)
        return moved

    def sync(
        self, upserts: Iterable[str], deletes: Iterable[str] = (), folders: Iterable[str] = ()
    ) -> RunStats:
        """Bring some notes and folders up to date without scanning the vault (the watcher's flush).

        Every path is read now, whatever its event said: one that vanished is deleted, a deleted
        one that is back is updated (its create event is on the way). Folders are listed. Every
        note change lands in ONE transaction, so a rename (delete old + add new) is never seen
        half-done; new vectors go first, in batches when there are many.
        """
        started = time.monotonic()
        self.store.check_space(self.provider.space)
        if self.store.get_meta("chunker") != self.chunker.signature:
            return self.run()  # chunking rules changed: only a full run re-chunks every note
        rules = VaultRules(self.vault, self._max_bytes)
        records = self.store.file_records()
        notes: dict[str, VaultFile] = {}
        skipped: dict[str, Skipped] = {}
        # paths as the watcher saw them are classified; records are keyed by their printable form
        # (a name that is not UTF-8 is stored escaped), so that form decides what is gone
        raw = {*upserts, *deletes}
        scope = {printable_path(p) for p in raw}
        for rel in raw:
            self._sort(rules.classify(rel), notes, skipped)
        for folder in set(folders):
            found = rules.scan(folder)
            for f in found.readable(self._kinds):
                self._sort(f, notes, skipped)
            for skip in found.skipped:
                self._sort(skip, notes, skipped)
            prefix = printable_path(folder) + "/"
            scope.update(p for p in records if p.startswith(prefix))
        gone = [p for p in sorted(scope) if p in records and p not in notes and p not in skipped]
        stats = RunStats()
        plan = self._plan(
            sorted(notes.values(), key=lambda f: f.path), list(skipped.values()), gone, records, stats
        )
        wanted = {h: t for p in plan.pending for h, t in p.embed.items()}
        known = self.store.known_embed_hashes(wanted)
        todo = {h: t for h, t in wanted.items() if h not in known}
        stats.chunks_reused = sum(1 for p in plan.pending for h in p.embed if h in known)
        hashes = list(todo)
        fresh = _Freshness(self.vault, plan.pending)
        vectors: dict[str, npt.NDArray[np.float32]] = {}
        for i in range(0, len(hashes), COMMIT_CHUNKS):
            if vectors:  # more than one batch: keep the finished ones (reused after a crash)
                self.store.apply(vectors=vectors)
            vectors = self._embed({h: todo[h] for h in hashes[i : i + COMMIT_CHUNKS]}, fresh)
            stats.chunks_embedded += len(vectors)
            if vectors and self.store.space is None:
                self.store.set_space(self.provider.space)
        updates = [*plan.updates, *(p.update() for p in plan.pending if not p.stale)]
        if updates or vectors or plan.deletes or plan.touch:
            self.store.apply(updates=updates, vectors=vectors, deletes=plan.deletes, touch=plan.touch)
        if plan.deletes or stats.chunks_deleted:
            self.store.drop_orphan_vectors()
        stats.complete = True  # a Ctrl-C from here on leaves only the ANN file or the tier unfinished
        self.store.refresh_ann(self.progress)
        self._fill_tier(stats)
        stats.seconds = round(time.monotonic() - started, 3)
        return stats

    def _sort(
        self, item: VaultFile | Skipped | None, notes: dict[str, VaultFile], skipped: dict[str, Skipped]
    ) -> None:
        if isinstance(item, VaultFile) and (item.kind == "note" or item.kind in self._kinds):
            notes[item.path] = item
        elif isinstance(item, Skipped) and self._reads(item.path):
            skipped[item.path] = item

    def _plan(
        self,
        notes: list[VaultFile],
        skipped: list[Skipped],
        gone: list[str],
        records: dict[str, FileRecord],
        stats: RunStats,
        rechunk: bool = False,
        ahead: tuple[EmbedAhead, _Freshness] | None = None,
    ) -> _Plan:
        """Compare what is on disk with the stored records: what to delete, restamp, record as
        skipped, and which notes to re-chunk (with the chunk texts that may need a vector)."""
        plan = _Plan(deletes=gone)
        self._reader = None  # a new one per plan: folders are checked again
        stats.files_scanned = len(notes)
        kinds = Counter(f.kind for f in notes)
        stats.notes_scanned, stats.pdfs_scanned = kinds["note"], kinds["pdf"]
        stats.canvases_scanned = kinds["canvas"]
        stats.files_deleted = len(gone)
        stats.chunks_deleted += sum(records[p].n_chunks for p in gone)
        # files_skipped counts every file the index holds as skipped after this run, as `status` does:
        # those the scan skipped and notes read and rejected, whether this run or an earlier one
        stats.files_skipped += len(skipped)
        for skip in skipped:
            old = records.get(skip.path)
            if old is None or old.status != "skipped" or old.reason != skip.reason:
                kind = "folder" if skip.path.endswith("/") else kind_of(skip.path) or "note"
                plan.updates.append(
                    NoteUpdate(FileRecord(skip.path, kind, 0, 0, None, "skipped", skip.reason))
                )
                if old is not None:
                    stats.chunks_deleted += old.n_chunks
        self.progress.phase("Reading notes", len(notes))
        # nothing writes vectors while the plan is made: a store without any (a first index) has none to
        # reuse, so no note asks it which of its texts it holds
        reuse = ahead is not None and self.store.counts().vectors > 0
        for f in notes:
            self.progress.advance()
            old = records.get(f.path)
            if rechunk and old is not None:
                old = replace(old, file_hash=None)
            if (
                old
                and not rechunk
                and old.status != "failed"
                and (old.size, old.mtime_ns) == (f.size, f.mtime_ns)
            ):
                stats.files_skipped += old.status == "skipped"
                continue  # tier 1
            item = self._read(f, old)
            if isinstance(item, FileRecord):
                stats.files_skipped += item.status == "skipped"
                plan.touch.append(item)  # tier 2: same bytes, new stamp
                continue
            stats.files_changed += 1
            if item.record.status == "skipped":
                stats.files_skipped += 1
            elif item.record.status == "failed":
                stats.files_failed += 1
            stats.chunks_deleted += item.removed
            plan.pending.append(item)
            if ahead is not None and item.embed:
                known = self.store.known_embed_hashes(item.embed) if reuse else set()
                ahead[0].add(
                    {h: t for h, t in item.embed.items() if h not in known}, partial(ahead[1].add, item)
                )
        return plan

    def _forget_clear(self) -> None:
        """An explicit index run ends a `clear` (which keeps the watcher from rebuilding on its own)."""
        if self.store.cleared:
            self.store.delete_meta("cleared_at")

    def _read(self, f: VaultFile, old: FileRecord | None) -> _Pending | FileRecord:
        def record(status: str, reason: str | None, file_hash: str | None = None) -> _Pending:
            rec = FileRecord(f.path, f.kind, f.size, f.mtime_ns, file_hash, status, reason)
            return _Pending(rec, {}, old.n_chunks if old else 0)

        try:
            if self._reader is None:
                self._reader = NoteReader(self.vault)
            raw = self._reader.read(f.path)
        except NoteNotFound:
            return record("failed", "file disappeared while indexing")
        except VaultlensError as exc:
            cause = exc.__cause__
            why = cause.strerror if isinstance(cause, OSError) and cause.strerror else exc.message
            return record("failed", f"cannot read: {why}")
        file_hash = raw.file_hash
        if old is not None and old.file_hash == file_hash and old.status != "failed":
            return replace(old, size=len(raw.raw), mtime_ns=f.mtime_ns)
        if f.kind != "note":
            try:
                chunks = attachment_chunks(f.kind, f.path, raw.raw, self.chunker)
            except Unreadable as exc:
                return record("skipped", str(exc), file_hash)
            if not chunks:
                return record("skipped", "no text to index", file_hash)
            title = f.path.rpartition("/")[2].rpartition(".")[0]
            rec = FileRecord(
                f.path,
                f.kind,
                len(raw.raw),
                f.mtime_ns,
                file_hash,
                "indexed",
                None,
                title,
                (),
                (),
                len(chunks),
            )
            return self._pending(rec, chunks, old, (), raw.real)
        try:
            source = note_from_bytes(raw, self.chunker)
        except NotText as exc:
            return record("skipped", str(exc), file_hash)
        if not source.text.strip():
            return record("skipped", "empty note (nothing to index)", file_hash)
        note, chunks = source.note, source.chunks
        reason = f"{note.frontmatter_error}; indexed as plain text" if note.frontmatter_error else None
        rec = FileRecord(
            f.path,
            "note",
            len(raw.raw),
            f.mtime_ns,
            file_hash,
            "indexed",
            reason,
            note.title,
            note.aliases,
            note.tags,
            len(chunks),
        )
        return self._pending(rec, chunks, old, note.links, raw.real)

    def _pending(
        self,
        rec: FileRecord,
        chunks: list[Chunk],
        old: FileRecord | None,
        links: tuple[Link, ...],
        real: str | None,
    ) -> _Pending:
        """A changed file's new state: its chunks with their embed texts, and how many old ones go."""
        hashed = []
        embed: dict[str, str] = {}
        for chunk in chunks:
            etext = embed_text(rec.title or "", chunk)
            ehash = sha256_hex(etext)
            hashed.append((chunk, ehash))
            embed[ehash] = etext
        removed = 0
        if old is not None and old.n_chunks:
            new_keys = {(c.id, c.content_hash) for c in chunks}
            removed = len(self.store.chunk_keys(rec.path) - new_keys)
        return _Pending(rec, embed, removed, hashed, links, real=real)

    def _batches(self, pending: list[_Pending]) -> Iterator[list[_Pending]]:
        batch: list[_Pending] = []
        size = 0
        for item in pending:
            batch.append(item)
            size += len(item.embed)
            if size >= COMMIT_CHUNKS or len(batch) >= self.settings.index.batch_files:
                yield batch
                batch, size = [], 0
        if batch:
            yield batch

    def _embed_and_commit(
        self,
        pending: list[_Pending],
        stats: RunStats,
        ahead: tuple[EmbedAhead, _Freshness] | None = None,
        counted: ScriptMix | None = None,
    ) -> ScriptMix | None:
        wanted = {h for p in pending for h in p.embed}
        known = self.store.known_embed_hashes(wanted)
        todo = len(wanted - known)
        stats.chunks_reused += sum(1 for p in pending for h in p.embed if h in known)
        self.progress.phase("Embedding chunks", todo)
        done: set[str] = set()
        for batch in self._batches(pending):
            if self.stop is not None and self.stop.is_set():
                raise Cancelled("Indexing stopped.")  # every committed batch is kept
            texts = {h: t for p in batch for h, t in p.embed.items() if h not in known and h not in done}
            if ahead is None:
                vectors = self._embed(texts, _Freshness(self.vault, batch))
            else:  # embedded meanwhile (their notes checked before each model call)
                vectors = ahead[0].take(texts, self.progress.advance)
            if vectors and self.store.space is None:
                self.store.set_space(self.provider.space)
            kept = [p for p in batch if not p.stale]
            # a moved note's old path goes in the transaction that adds its new one
            moved = [old for p in kept for old in p.replaces]
            self.store.apply(updates=[p.update() for p in kept], vectors=vectors, deletes=moved)
            done.update(vectors)  # a text skipped for a stale note may still be wanted by a later one
            stats.chunks_embedded += len(vectors)
            if counted is not None:
                counted = sum((body_mix(c for c, _ in p.chunks) for p in kept), counted)
        return counted

    def _embed(self, texts: dict[str, str], fresh: _Freshness) -> dict[str, npt.NDArray[np.float32]]:
        """Vectors for ``texts``, one provider batch at a time; texts only stale notes want are skipped."""
        hashes = list(texts)
        out: dict[str, npt.NDArray[np.float32]] = {}
        step = max(1, self.provider.batch_size)
        for i in range(0, len(hashes), step):
            part = fresh.wanted(hashes[i : i + step])
            if part:
                vecs = self.provider.embed([texts[h] for h in part])
                out.update(zip(part, vecs, strict=True))
            self.progress.advance(min(step, len(hashes) - i))
        return out
