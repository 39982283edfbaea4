"""The store contract: what the indexer and the services need from an index backend.

A backend (SQLite embedded, PostgreSQL) implements :class:`Store`, which is split by who calls
it, over one consistent state:

- :class:`StoreState`: what every caller reads (generation, snapshots, meta, spaces, counts);
- :class:`StoreWrites`: what the indexer and the quality tier's fill write;
- :class:`StoreReads`: what searches and discovery read (chunks, vectors, full text);
- :class:`StoreChecks`: what `status` and `doctor` check.

and a :class:`StoreBackend` that opens, probes and wipes a store at a location. Nothing above
``index/`` knows which backend it talks to; tests/test_store_contract.py runs one suite over
every backend.

Chunks are keyed by a backend-assigned integer (``key``) that is stable while the chunk
exists; every read inside :meth:`StoreState.snapshot` sees one committed generation.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from vaultlens.chunking.chunker import Chunk
from vaultlens.embedding.base import EmbeddingSpace, Vectors
from vaultlens.index.estimate import RebuildEstimate
from vaultlens.index.runs import RunRecord
from vaultlens.vault.model import Link

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from vaultlens.index.progress import Progress

ChunkKeys: TypeAlias = "npt.NDArray[np.int64]"  # a string: numpy loads with the first vector, not here


def space_matches(stored: EmbeddingSpace, space: EmbeddingSpace) -> bool:
    """Same provider, model and endpoint; an unknown dimension (remote, not yet called) is a wildcard."""
    same = (stored.provider, stored.model, stored.endpoint) == (space.provider, space.model, space.endpoint)
    return same and (not space.dimensions or stored.dimensions == space.dimensions)


def tier_switch(stored: EmbeddingSpace | None, space: EmbeddingSpace) -> tuple[bool, bool]:
    """Before adding tier vectors of ``space``: (drop the stored ones: another space's, record ``space``)."""
    return stored is not None and not space_matches(stored, space), stored is None or stored != space


@dataclass(frozen=True, slots=True)
class FileRecord:
    """What the index knows about one vault file (notes, and files it skipped or failed on)."""

    path: str
    kind: str
    size: int
    mtime_ns: int
    file_hash: str | None
    status: str  # indexed | skipped | failed
    reason: str | None = None
    title: str | None = None
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    n_chunks: int = 0


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """A chunk as the indexer hands it to the store: the text it embedded and the terms it indexed."""

    chunk: Chunk
    embed_hash: str  # hash of the embedded text: the key of its vector
    terms: str  # stemmed terms, space-separated (see index/lexical.py)


@dataclass(frozen=True, slots=True)
class NoteUpdate:
    """A note's new state: its file record, its chunks and its links."""

    record: FileRecord
    chunks: Sequence[IndexedChunk] = ()
    links: Sequence[Link] = ()


@dataclass(frozen=True, slots=True)
class StoreCounts:
    notes: int  # indexed notes
    chunks: int
    vectors: int
    files: dict[str, int] = field(default_factory=dict)  # status -> number of files
    kinds: dict[str, int] = field(default_factory=dict)  # kind (note, pdf, canvas) -> indexed files


@dataclass(frozen=True, slots=True)
class LexicalHits:
    """Full-text scores for one query, already normalised to a backend-neutral scale.

    A score is the backend's BM25 divided by the query's idf mass (the sum of the idf of its
    distinct terms, unseen terms included): 1.0 is roughly a document that contains every
    query term once, whatever the backend's own BM25 constants. ``chunks`` are the best
    chunks by key, ``notes`` the best whole notes by path (all their chunks' terms together).
    """

    chunks: dict[int, float] = field(default_factory=dict)
    notes: dict[str, float] = field(default_factory=dict)

    @property
    def confidence(self) -> float:
        """How much of the query the best chunk explains, in [0, 1] (0 when nothing matched)."""
        return min(1.0, max(self.chunks.values(), default=0.0))


def _same(keys: Collection[Any]) -> dict[Any, Any]:
    return {k: k for k in keys}


@dataclass(frozen=True, slots=True)
class NoteScores:
    """The best whole notes' full-text scores (on :class:`LexicalHits`' scale), best first, by a note key
    the backend looks paths up for only when asked. A search wants the scores of its few hundred
    candidates' notes, not the paths of all the best notes, which on SQLite are a lookup each (those of
    1,000 notes were 6-8 % of a search at 1,000,000 chunks). Read in the snapshot it came from."""

    keys: list[Any] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    paths_of: Callable[[Collection[Any]], dict[Any, str]] = _same  # note key -> path, for those that exist
    keys_of: Callable[[Collection[str]], dict[str, Any]] = _same  # path -> note key, for those that exist

    @property
    def best(self) -> float:
        """The best note's score (0.0 when no note matched)."""
        return self.scores[0] if self.scores else 0.0

    def of(self, paths: Collection[str]) -> dict[str, float]:
        """The scores of those of ``paths`` that are among the best notes."""
        if not self.keys or not paths:
            return {}
        score = dict(zip(self.keys, self.scores, strict=True))
        return {p: score[k] for p, k in self.keys_of(paths).items() if k in score}

    def by_path(self) -> dict[str, float]:
        """Every best note's score by path, best first."""
        paths = self.paths_of(self.keys)
        return {paths[k]: v for k, v in zip(self.keys, self.scores, strict=True) if k in paths}


@dataclass(frozen=True, slots=True)
class NoteText:
    """A note's stored chunk texts joined in order, with and without the front matter."""

    path: str
    text: str
    body: str


class StoreState(Protocol):
    """What every caller reads: the store's identity, generation and snapshots, meta, the embedding
    spaces, the kept counts and the last run."""

    store_id: str  # random per store, new when a store is wiped: caches key on it with the generation
    # True when reads run in a database server: a thread of this process only waits on them, so one
    # search's independent reads pay to run at once on more threads than this machine has cores
    reads_in_server: bool

    @property
    def generation(self) -> int: ...
    @property
    def cleared(self) -> bool:
        """True after :meth:`StoreWrites.clear` until an index run records notes again."""
        ...

    def snapshot(self) -> AbstractContextManager[int]:
        """Freeze one committed generation for every read in the block (re-entrant per thread)."""
        ...

    def close(self) -> None: ...
    def get_meta(self, key: str) -> str | None: ...
    @property
    def space(self) -> EmbeddingSpace | None:
        """The space of the stored vectors; None before the first vector."""
        ...

    @property
    def tier_space(self) -> EmbeddingSpace | None:
        """The space of the quality tier's vectors; None when the tier holds none."""
        ...

    def check_space(self, space: EmbeddingSpace) -> None:
        """Raise SpaceMismatch when ``space`` is not the stored one; an unknown dimension (remote, not
        yet called) is a wildcard. The error carries what a rebuild would cost, so the user decides
        before any work starts."""
        ...

    def file_records(self) -> dict[str, FileRecord]: ...
    def counts(self) -> StoreCounts:
        """Kept counts (`status` asks on every call): no pass over every note or chunk."""
        ...

    def last_run(self) -> RunRecord | None: ...


class StoreWrites(StoreState, Protocol):
    """What an index run (index/indexing/indexer.py) and the quality tier's fill (tier_fill.py) write,
    and the reads they plan by."""

    def set_meta(self, key: str, value: str) -> None: ...
    def delete_meta(self, key: str) -> None: ...
    def set_space(self, space: EmbeddingSpace) -> None: ...
    def start_run(self) -> int: ...
    def finish_run(self, run_id: int, status: str, stats: dict[str, Any]) -> None:
        """Record how a run ended; ``stats`` holds its counters and, for a failed run, ``error``."""
        ...

    # writes (one atomic batch each)
    def apply(
        self,
        updates: Sequence[NoteUpdate] = (),
        vectors: dict[str, npt.NDArray[np.float32]] | None = None,
        deletes: Sequence[str] = (),
        touch: Sequence[FileRecord] = (),
    ) -> None: ...
    def drop_orphan_vectors(self) -> int: ...
    def clear(self) -> None: ...
    def refresh_ann(self, progress: Progress) -> None:
        """The writer's, after a run or flush: bring the backend's ANN index up to the committed
        generation so searches never build it (the SQLite tier's file; pgvector keeps its own)."""
        ...

    def known_embed_hashes(self, hashes: Iterable[str]) -> set[str]: ...
    def chunk_keys(self, path: str) -> set[tuple[str, str]]:
        """(chunk id, content hash) of every stored chunk of ``path``."""
        ...

    # the optional quality tier
    def tier_missing(self, limit: int) -> list[tuple[str, str, Chunk]]:
        """Up to ``limit`` (embed hash, note title, chunk) whose embedded text has no tier vector yet."""
        ...

    def add_tier_vectors(self, space: EmbeddingSpace, vectors: dict[str, Vectors]) -> None:
        """Store tier vectors by embed hash (one commit); another space's vectors are dropped first."""
        ...

    def drop_tier(self) -> None:
        """Forget every tier vector (the tier was switched off or to another model)."""
        ...


class StoreReads(StoreState, Protocol):
    """What searches and discovery (similar, duplicates, clusters, note lists, Ask) read, and the one
    thing discovery records: a dismissed pair."""

    def chunks(self, keys: Iterable[int]) -> dict[int, Chunk]: ...
    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        """The stored chunk with this id, with its content hash, so a caller can check that a
        search hit is still the note's current text."""
        ...

    def chunk_paths(self, keys: Iterable[int]) -> dict[int, str]: ...
    def note_chunk_keys(self, paths: Iterable[str]) -> dict[str, list[int]]:
        """Every chunk key of each note in ``paths`` (notes without chunks are left out)."""
        ...

    def note_chunk_scores(
        self, query: Vectors, paths: Iterable[str]
    ) -> tuple[dict[str, list[int]], npt.NDArray[np.float32]]:
        """:meth:`note_chunk_keys` of ``paths``, and the inner product of ``query`` with each of those
        keys in the same order (NaN for a chunk without a vector): one read where each read is a
        round trip to a server (a search asks it of its best notes)."""
        ...

    def chunk_layout(self) -> tuple[ChunkKeys, list[str], npt.NDArray[np.bool_]]:
        """(keys, note path, is-front-matter) of every chunk, ordered by key like :meth:`matrix`."""
        ...

    def note_texts(self) -> Iterator[NoteText]: ...
    def titles(self, paths: Iterable[str]) -> dict[str, str]: ...
    def links(self, paths: Iterable[str] | None = None) -> dict[str, list[Link]]:
        """Outgoing links as written, per note (all notes when ``paths`` is None)."""
        ...

    def dismiss_pair(self, a: str, b: str) -> None: ...
    def dismissed_pairs(self) -> set[tuple[str, str]]: ...
    def restore_pair(self, a: str, b: str) -> bool:
        """Forget that ``a`` and ``b`` were dismissed (``duplicates`` lists them again); False when
        they were not."""
        ...

    # vectors
    def matrix(self, tier: bool = False) -> tuple[ChunkKeys, Vectors]:
        """(chunk keys ascending, unit vectors) of every chunk, for whole-index discovery.

        ``tier``: the optional quality tier's vectors instead, only for the chunks that have one."""
        ...

    def load_derived(self, name: str, generation: int) -> dict[str, npt.NDArray[Any]] | None:
        """Arrays :meth:`save_derived` kept under ``name`` for ``generation`` of this store, or None
        (none kept, stale, unreadable, or a backend that keeps none). Callers check what they load."""
        ...

    def save_derived(self, name: str, generation: int, arrays: dict[str, npt.NDArray[Any]]) -> None:
        """Keep arrays computed from ``generation`` (a cache: it may be dropped at any time)."""
        ...

    def top_k(self, query: Vectors, k: int) -> tuple[ChunkKeys, npt.NDArray[np.float32]]:
        """The ``k`` chunks with the highest inner product with ``query`` (unordered) and their scores.

        Past ``search.ann_threshold`` chunks a backend may find them in an ANN index (the SQLite
        backend's HNSW tier, pgvector's HNSW) and re-score them exactly: the scores are always exact."""
        ...

    def neighbours(self, keys: ChunkKeys, k: int) -> tuple[ChunkKeys, ChunkKeys] | None:
        """Candidate pairs (chunk in ``keys``, one of its ``k`` approximate nearest other chunks) from
        the backend's ANN index, for `similar` and `duplicates` past ``search.ann_threshold``; None when
        no ANN index is in use (the caller then compares the vectors itself). Candidates only: the
        caller scores them exactly. pgvector: one ``ORDER BY embedding <#> q LIMIT k`` per key, batched."""
        ...

    def scores(self, query: Vectors, keys: ChunkKeys) -> npt.NDArray[np.float32]:
        """Inner product of ``query`` with each chunk in ``keys`` (NaN for an unknown key)."""
        ...

    # full text
    def lexical_chunks(self, terms: Sequence[str], limit: int) -> dict[int, float]:
        """The best chunks for distinct stemmed query terms (see :class:`LexicalHits`)."""
        ...

    def lexical_notes(self, terms: Sequence[str], limit: int) -> NoteScores:
        """The best whole notes for the same terms (see :class:`LexicalHits`)."""
        ...

    def lexical(self, terms: Sequence[str], chunk_limit: int, note_limit: int) -> LexicalHits:
        """Best chunks and notes for distinct stemmed query terms, in one snapshot (no notes when no
        chunk matched: a note holds a term only through one of its chunks)."""
        ...


class StoreChecks(StoreState, Protocol):
    """What `status` and `doctor` check (services/verbs/status.py)."""

    def file_problems(self) -> list[FileRecord]:
        """Records with a reason (skipped, failed), by path; a backend answers it without reading every file."""
        ...

    def rebuild_estimate(self, target: EmbeddingSpace) -> RebuildEstimate: ...
    def tier_coverage(self) -> tuple[int, int]:
        """(distinct chunk texts with a tier vector, distinct chunk texts)."""
        ...

    def size_bytes(self) -> int: ...
    def unused_vectors(self) -> int: ...
    def problems(self) -> list[str]:
        """Integrity and consistency findings; empty means healthy."""
        ...

    def ann_recall(self, queries: int = 200, k: int = 10) -> float | None:
        """Recall@k of the backend's ANN index against an exact scan, with ``queries`` stored vectors as
        queries (``doctor --deep``); None when searches do not use one (below the threshold)."""
        ...


class Store(StoreWrites, StoreReads, StoreChecks, Protocol):
    """One index, as each of its callers sees part of it, over the same committed state. A caller
    takes the narrowest part it uses; a backend implements all of it (index/store_defaults.py holds
    the bodies both backends share)."""


def grouped_keys(groups: dict[str, list[int]]) -> ChunkKeys:
    """The chunk keys of a note grouping (:meth:`Store.note_chunk_keys`) in one array, note by note."""
    import numpy as np

    return np.fromiter((k for keys in groups.values() for k in keys), np.int64)


class StoreBackend(Protocol):
    """Opens a store at a location; the index lifecycle (index/lifecycle.py) moves locations."""

    name: str

    def exists(self, location: Path) -> bool: ...
    def open(self, location: Path, create: bool = True) -> Store:
        """Open the store at ``location``, creating it only when ``create`` (else IndexNotFound)."""
        ...

    def wipe(self, location: Path) -> None:
        """Delete the store at ``location`` (nothing else there)."""
        ...
