"""The store contract: what the indexer and the services need from an index backend.

A backend (SQLite embedded today, PostgreSQL later) implements :class:`Store`, which is three
small protocols over one consistent state:

- :class:`Catalog`: files, chunks, links, runs, the embedding space and housekeeping;
- :class:`VectorIndex`: unit vectors per chunk, top-k by inner product and bulk access;
- :class:`LexicalIndex`: full text over stemmed terms, with scores on a backend-neutral scale.

and a :class:`StoreBackend` that opens, probes and wipes a store at a location. Nothing above
``index/`` knows which backend it talks to; tests/test_store_contract.py runs one suite over
every backend.

Chunks are keyed by a backend-assigned integer (``key``) that is stable while the chunk
exists; every read inside :meth:`Catalog.snapshot` sees one committed generation.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from vaultlens.chunking.chunker import Chunk
from vaultlens.embedding.base import EmbeddingSpace, Vectors
from vaultlens.errors import SpaceMismatch
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


class Catalog(Protocol):
    """Files, chunks, links, runs and the index's own state."""

    store_id: str  # random per store, new when a store is wiped: caches key on it with the generation
    # True when reads run in a database server: a thread of this process only waits on them, so one
    # search's independent reads pay to run at once on more threads than this machine has cores
    reads_in_server: bool = False

    @property
    def generation(self) -> int: ...
    @property
    def cleared(self) -> bool:
        """True after :meth:`clear` until an index run records notes again."""
        return self.get_meta("cleared_at") is not None

    def snapshot(self) -> AbstractContextManager[int]:
        """Freeze one committed generation for every read in the block (re-entrant per thread)."""
        ...

    def close(self) -> None: ...

    # meta, space, runs
    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def delete_meta(self, key: str) -> None: ...
    @property
    def space(self) -> EmbeddingSpace | None:
        raw = self.get_meta("space")
        return None if raw is None else EmbeddingSpace.from_json(raw)

    def set_space(self, space: EmbeddingSpace) -> None:
        self.set_meta("space", space.to_json())

    def check_space(self, space: EmbeddingSpace) -> None:
        """Raise SpaceMismatch when ``space`` is not the stored one; an unknown dimension (remote, not
        yet called) is a wildcard. The error carries what a rebuild would cost, so the user decides
        before any work starts."""
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

    def rebuild_estimate(self, target: EmbeddingSpace) -> RebuildEstimate: ...
    def start_run(self) -> int: ...
    def finish_run(self, run_id: int, status: str, stats: dict[str, Any]) -> None:
        """Record how a run ended; ``stats`` holds its counters and, for a failed run, ``error``."""
        ...

    def last_run(self) -> RunRecord | None: ...

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
    def dismiss_pair(self, a: str, b: str) -> None: ...

    # reads
    def file_records(self) -> dict[str, FileRecord]: ...
    def file_problems(self) -> list[FileRecord]:
        """Records with a reason (skipped, failed), by path; a backend answers it without reading every file."""
        return sorted((r for r in self.file_records().values() if r.reason), key=lambda r: r.path)

    def known_embed_hashes(self, hashes: Iterable[str]) -> set[str]: ...
    def chunk_keys(self, path: str) -> set[tuple[str, str]]:
        """(chunk id, content hash) of every stored chunk of ``path``."""
        ...

    def chunks(self, keys: Iterable[int]) -> dict[int, Chunk]: ...
    def chunk_by_id(self, chunk_id: str) -> Chunk | None:
        """The stored chunk with this id, with its content hash, so a caller can check that a
        search hit is still the note's current text."""
        ...

    def chunk_paths(self, keys: Iterable[int]) -> dict[int, str]: ...
    def note_chunk_keys(self, paths: Iterable[str]) -> dict[str, list[int]]:
        """Every chunk key of each note in ``paths`` (notes without chunks are left out)."""
        ...

    def chunk_layout(self) -> tuple[ChunkKeys, list[str], npt.NDArray[np.bool_]]:
        """(keys, note path, is-front-matter) of every chunk, ordered by key like :meth:`VectorIndex.matrix`."""
        ...

    def note_texts(self) -> Iterator[NoteText]: ...
    def titles(self, paths: Iterable[str]) -> dict[str, str]: ...
    def links(self, paths: Iterable[str] | None = None) -> dict[str, list[Link]]:
        """Outgoing links as written, per note (all notes when ``paths`` is None)."""
        ...

    def dismissed_pairs(self) -> set[tuple[str, str]]: ...
    def counts(self) -> StoreCounts:
        """Kept counts (`status` asks on every call): no pass over every note or chunk."""
        ...

    def size_bytes(self) -> int: ...
    def unused_vectors(self) -> int: ...
    def problems(self) -> list[str]:
        """Integrity and consistency findings; empty means healthy."""
        ...


class VectorIndex(Protocol):
    def matrix(self, tier: bool = False) -> tuple[ChunkKeys, Vectors]:
        """(chunk keys ascending, unit vectors) of every chunk, for whole-index discovery.

        ``tier``: the optional quality tier's vectors instead, only for the chunks that have one."""
        ...

    @property
    def tier_space(self) -> EmbeddingSpace | None:
        """The space of the quality tier's vectors; None when the tier holds none."""
        ...

    def tier_missing(self, limit: int) -> list[tuple[str, str, Chunk]]:
        """Up to ``limit`` (embed hash, note title, chunk) whose embedded text has no tier vector yet."""
        ...

    def add_tier_vectors(self, space: EmbeddingSpace, vectors: dict[str, Vectors]) -> None:
        """Store tier vectors by embed hash (one commit); another space's vectors are dropped first."""
        ...

    def drop_tier(self) -> None:
        """Forget every tier vector (the tier was switched off or to another model)."""
        ...

    def tier_coverage(self) -> tuple[int, int]:
        """(distinct chunk texts with a tier vector, distinct chunk texts)."""
        ...

    def load_derived(self, name: str, generation: int) -> dict[str, npt.NDArray[Any]] | None:
        """Arrays :meth:`save_derived` kept under ``name`` for ``generation`` of this store, or None
        (none kept, stale, unreadable, or a backend that keeps none). Callers check what they load."""
        return None

    def save_derived(self, name: str, generation: int, arrays: dict[str, npt.NDArray[Any]]) -> None:
        """Keep arrays computed from ``generation`` (a cache: it may be dropped at any time)."""
        return None

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
        return None

    def refresh_ann(self, progress: Progress) -> None:
        """The writer's, after a run or flush: bring the backend's ANN index up to the committed
        generation so searches never build it (the SQLite tier's file; pgvector keeps its own)."""
        return None

    def ann_recall(self, queries: int = 200, k: int = 10) -> float | None:
        """Recall@k of the backend's ANN index against an exact scan, with ``queries`` stored vectors as
        queries (``doctor --deep``); None when searches do not use one (below the threshold)."""
        return None

    def scores(self, query: Vectors, keys: ChunkKeys) -> npt.NDArray[np.float32]:
        """Inner product of ``query`` with each chunk in ``keys`` (NaN for an unknown key)."""
        ...


class LexicalIndex(Protocol):
    def lexical_chunks(self, terms: Sequence[str], limit: int) -> dict[int, float]:
        """The best chunks for distinct stemmed query terms (see :class:`LexicalHits`)."""
        ...

    def lexical_notes(self, terms: Sequence[str], limit: int) -> NoteScores:
        """The best whole notes for the same terms (see :class:`LexicalHits`)."""
        ...


class Store(Catalog, VectorIndex, LexicalIndex, Protocol):
    """One index: catalog, vectors and full text over the same committed state."""

    @property
    def tier_space(self) -> EmbeddingSpace | None:
        raw = self.get_meta("tier_space")
        return None if raw is None else EmbeddingSpace.from_json(raw)

    def note_chunk_scores(
        self, query: Vectors, paths: Iterable[str]
    ) -> tuple[dict[str, list[int]], npt.NDArray[np.float32]]:
        """:meth:`note_chunk_keys` of ``paths``, and the inner product of ``query`` with each of those
        keys in the same order (NaN for a chunk without a vector): one read where each read is a
        round trip to a server (a search asks it of its best notes)."""
        groups = self.note_chunk_keys(paths)
        return groups, self.scores(query, grouped_keys(groups))

    def lexical(self, terms: Sequence[str], chunk_limit: int, note_limit: int) -> LexicalHits:
        """Best chunks and notes for distinct stemmed query terms, in one snapshot (no notes when no
        chunk matched: a note holds a term only through one of its chunks)."""
        with self.snapshot():
            chunks = self.lexical_chunks(terms, chunk_limit)
            return LexicalHits(chunks, self.lexical_notes(terms, note_limit).by_path() if chunks else {})


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
