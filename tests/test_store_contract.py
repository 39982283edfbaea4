"""The store contract (vaultlens.index.store), one suite for every backend.

Each test drives a backend only through the protocol: the indexer's writes (apply, runs, meta,
space), the services' reads (chunks, top-k, lexical scores on the neutral scale, layout, note
texts, links), snapshots, clear and wipe. A new backend (PostgreSQL next) joins the
``backend`` parameter list and must pass unchanged. Vectors come from the deterministic
hashing provider in vaultlens.testing, so no model is loaded here.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vaultlens.chunking.chunker import Chunk
from vaultlens.embedding.base import EmbeddingSpace
from vaultlens.errors import SpaceMismatch
from vaultlens.fsutil import sha256_hex
from vaultlens.index.backends import get_backend
from vaultlens.index.lexical import query_terms, terms
from vaultlens.index.runs import RunStats
from vaultlens.index.store import FileRecord, IndexedChunk, NoteUpdate, Store, StoreBackend
from vaultlens.testing import HashingEmbeddingProvider
from vaultlens.vault.model import Link

PROVIDER = HashingEmbeddingProvider()

NOTES: dict[str, list[tuple[tuple[str, ...], str]]] = {
    "bread.md": [
        (("Bread",), "Feed the sourdough starter with rye flour every morning before baking."),
        (("Bread", "Oven"), "Bake the loaf at high heat in a covered dutch oven for crust."),
    ],
    "trains.md": [(("Trains",), "The night train to Kyoto leaves at nine from the central station.")],
    "code.md": [(("Code",), "Call retry_serializable_tx when the database reports a serialization failure.")],
}


def _chunks(path: str, sections: list[tuple[tuple[str, ...], str]], frontmatter: bool = False) -> list[Chunk]:
    out, line = [], 0
    for ordinal, (heads, text) in enumerate(sections):
        out.append(
            Chunk(
                id=sha256_hex(f"{path}:{ordinal}")[:20],
                path=path,
                ordinal=ordinal,
                heading_path=heads,
                text=text,
                content_hash=sha256_hex(text),
                start=0,
                end=len(text),
                start_line=line,
                end_line=line + 1,
                frontmatter=frontmatter and ordinal == 0,
            )
        )
        line += 2
    return out


def note_update(
    path: str, sections: list[tuple[tuple[str, ...], str]], **kw: object
) -> tuple[NoteUpdate, dict]:
    """A note's update as the indexer builds it, and the vectors of its chunks."""
    chunks = _chunks(path, sections, bool(kw.get("frontmatter")))
    items = [IndexedChunk(c, sha256_hex(c.text), " ".join(terms(c.text))) for c in chunks]
    record = FileRecord(
        path, "note", 100, 1, sha256_hex(path), "indexed", None, path[:-3], (), (), len(chunks)
    )
    links = kw.get("links", ())
    vectors = dict(zip((i.embed_hash for i in items), PROVIDER.embed([c.text for c in chunks]), strict=True))
    return NoteUpdate(record, items, links), vectors  # type: ignore[arg-type]


@pytest.fixture
def backend(backend: str) -> StoreBackend:
    """conftest's ``backend`` (one run per registered backend), opened: the contract drives the object."""
    return get_backend(backend)


@pytest.fixture
def store(backend: StoreBackend, tmp_path: Path) -> Iterator[Store]:
    s = backend.open(tmp_path / "store")
    s.set_space(PROVIDER.space)
    updates, vectors = [], {}
    for path, sections in NOTES.items():
        links = (Link("wiki", "trains", 1, None, None, None),) if path == "bread.md" else ()
        u, v = note_update(path, sections, links=links)
        updates.append(u)
        vectors.update(v)
    s.apply(updates=updates, vectors=vectors)
    yield s
    s.close()


def key_of(store: Store, chunk_id: str) -> int:
    keys, _ = store.matrix()
    return next(k for k, c in store.chunks(keys.tolist()).items() if c.id == chunk_id)


def test_apply_records_files_chunks_vectors_and_counts(store: Store) -> None:
    records = store.file_records()
    assert set(records) == set(NOTES)
    assert records["bread.md"].n_chunks == 2
    counts = store.counts()
    assert (counts.notes, counts.chunks, counts.vectors) == (3, 4, 4)
    assert counts.files == {"indexed": 3}
    keys, vecs = store.matrix()
    assert keys.tolist() == sorted(keys.tolist()) and vecs.shape == (4, PROVIDER.space.dimensions)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_chunks_round_trip_and_lookup_by_id(store: Store) -> None:
    keys, _ = store.matrix()
    chunks = store.chunks(keys.tolist())
    original = _chunks("bread.md", NOTES["bread.md"])[1]
    stored = next(c for c in chunks.values() if c.id == original.id)
    assert stored == original  # every field, offsets and lines included
    assert store.chunk_by_id(original.id) == original
    assert store.chunk_by_id("no-such-chunk") is None
    assert store.chunk_keys("bread.md") == {
        (c.id, c.content_hash) for c in _chunks("bread.md", NOTES["bread.md"])
    }
    assert store.chunk_paths(keys.tolist()) == {k: c.path for k, c in chunks.items()}


def test_known_embed_hashes_answers_only_stored_vectors(store: Store) -> None:
    text = NOTES["trains.md"][0][1]
    assert store.known_embed_hashes([sha256_hex(text), "missing"]) == {sha256_hex(text)}


def test_lexical_pruning_finds_the_plain_hits(backend: StoreBackend, tmp_path: Path) -> None:
    """Past bm25_top.PRUNE_FROM_ROWS matching rows (here from the first), the rows holding only the
    query's common words are not scored: the chunks and notes found, and their scores, stay those of
    the plain queries."""
    import random

    from vaultlens.index import bm25_top

    rng = random.Random(5)
    words = [f"word{i}" for i in range(150)]
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(words))]
    store = backend.open(tmp_path / "store")
    store.set_space(PROVIDER.space)
    updates, vectors = [], {}
    for n in range(400):
        u, v = note_update(
            f"n{n}.md", [((f"N{n}",), " ".join(rng.choices(words, weights, k=20))) for _ in range(3)]
        )
        updates.append(u)
        vectors.update(v)
    store.apply(updates=updates, vectors=vectors)
    queries = ["word0 word90 word91", "word1 word3 word140", "word2 word5", "word149", "word0 nothere"]
    plain = [store.lexical(query_terms(q), 30, 60) for q in queries]
    store.close()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bm25_top, "PRUNE_FROM_ROWS", 0)
        store = backend.open(tmp_path / "store")  # a new object: no cached counts
        pruned = [store.lexical(query_terms(q), 30, 60) for q in queries]
        store.close()
    for a, b in zip(plain, pruned, strict=True):
        assert a.chunks.keys() == b.chunks.keys() and a.notes.keys() == b.notes.keys()
        assert list(b.chunks.values()) == pytest.approx(list(a.chunks.values()), rel=1e-12)
        assert list(b.notes.values()) == pytest.approx(list(a.notes.values()), rel=1e-12)
    assert plain[0].chunks and bm25_top.PRUNE_FROM_ROWS > 1000  # the queries find rows; pruning is off below


def test_top_k_and_scores_are_inner_products(store: Store) -> None:
    query = PROVIDER.embed(["sourdough starter rye flour"])[0]
    keys, scores = store.top_k(query, 2)
    assert len(keys) == 2
    best = int(keys[int(np.argmax(scores))])
    assert store.chunks([best])[best].path == "bread.md"
    all_keys, vecs = store.matrix()
    expected = np.asarray(vecs @ query)
    got = store.scores(query, all_keys)
    assert np.allclose(got, expected, atol=1e-5)
    assert np.isnan(store.scores(query, np.array([10**9], dtype=np.int64))).all()
    assert store.top_k(query, 0)[0].size == 0


def test_lexical_scores_are_on_the_neutral_scale(store: Store) -> None:
    code_key = key_of(store, _chunks("code.md", NOTES["code.md"])[0].id)
    hits = store.lexical(query_terms("retry_serializable_tx serialization failure"), 10, 10)
    assert max(hits.chunks, key=hits.chunks.__getitem__) == code_key
    assert max(hits.notes, key=hits.notes.__getitem__) == "code.md"
    # the best chunk holds every query term once: its score is about 1 on the neutral scale
    # (a raw BM25 would be about the query's idf mass, several times more here)
    assert 0.5 < hits.chunks[code_key] < 1.5
    assert 0.5 < hits.confidence <= 1.0
    partial = store.lexical(query_terms("retry_serializable_tx kyoto mountains glaciers"), 10, 10)
    assert 0.0 < partial.confidence < hits.confidence
    assert store.lexical(query_terms("zzzunseenword"), 10, 10).chunks == {}
    assert store.lexical([], 10, 10).confidence == 0.0


def test_note_scores_are_looked_up_by_path_only_for_the_best_notes(store: Store) -> None:
    """A search asks for its candidates' notes: ``of`` answers for those among the best ``limit`` notes
    (the others, and paths no note has, are left out) with the scores ``by_path`` gives them all."""
    terms = query_terms("retry_serializable_tx serialization failure sourdough kyoto")
    with store.snapshot():
        everyone = store.lexical_notes(terms, 10)
        all_of_them = everyone.by_path()
        best_one = store.lexical_notes(terms, 1)
        assert len(all_of_them) >= 2 and everyone.best == max(all_of_them.values())
        assert list(all_of_them) == sorted(all_of_them, key=lambda p: -all_of_them[p])  # best first
        assert everyone.of({*all_of_them, "nowhere.md"}) == all_of_them
        first, second = list(all_of_them)[:2]
        assert best_one.of({first, second}) == {first: all_of_them[first]}  # the second is past the limit
        assert best_one.best == everyone.best
    assert store.lexical_notes(query_terms("zzzunseenword"), 10).best == 0.0


def test_layout_note_texts_and_front_matter_flag(store: Store, tmp_path: Path) -> None:
    u, v = note_update(
        "fm.md", [(("front matter",), "tags: [x]"), (("Body",), "Plain body text here.")], frontmatter=True
    )
    store.apply(updates=[u], vectors=v)
    keys, paths, frontmatter = store.chunk_layout()
    assert keys.tolist() == store.matrix()[0].tolist()
    flagged = {p for p, f in zip(paths, frontmatter.tolist(), strict=True) if f}
    assert flagged == {"fm.md"}
    texts = {n.path: n for n in store.note_texts()}
    assert texts["fm.md"].text == "tags: [x]\nPlain body text here."
    assert texts["fm.md"].body == "Plain body text here."
    assert texts["bread.md"].text == texts["bread.md"].body


def test_note_chunk_keys_lists_every_chunk_of_the_asked_notes(store: Store) -> None:
    keys, _ = store.matrix()
    paths = store.chunk_paths(keys.tolist())
    got = store.note_chunk_keys(["bread.md", "code.md", "missing.md"])
    assert {p: sorted(k) for p, k in got.items()} == {
        p: sorted(k for k, q in paths.items() if q == p) for p in ("bread.md", "code.md")
    }
    assert len(got["bread.md"]) == 2


def test_note_chunk_scores_give_each_asked_notes_keys_and_their_inner_products(store: Store) -> None:
    query = PROVIDER.embed(["sourdough starter rye flour"])[0]
    groups, scores = store.note_chunk_scores(query, ["bread.md", "code.md", "missing.md"])
    assert {p: sorted(k) for p, k in groups.items()} == {
        p: sorted(k) for p, k in store.note_chunk_keys(["bread.md", "code.md"]).items()
    }
    in_order = np.array([k for keys in groups.values() for k in keys], dtype=np.int64)
    assert np.allclose(scores, store.scores(query, in_order), atol=1e-5)
    assert store.note_chunk_scores(query, ["missing.md"])[0] == {}


def test_links_are_read_back_per_note(store: Store) -> None:
    links = store.links()
    assert links == {"bread.md": [Link("wiki", "trains", 1, None, None, None)]}
    assert store.links(["trains.md"]) == {}


def test_deletes_replace_and_generation(store: Store) -> None:
    gen = store.generation
    u, v = note_update("trains.md", [(("Trains",), "The morning train now leaves at ten.")])
    store.apply(updates=[u], vectors=v, deletes=["code.md"])
    assert store.generation > gen
    assert set(store.file_records()) == {"bread.md", "trains.md"}
    assert store.drop_orphan_vectors() == 2  # the old trains text and the code chunk
    assert store.unused_vectors() == 0
    assert store.problems() == []


def test_snapshot_freezes_one_generation_while_a_writer_commits(store: Store) -> None:
    with store.snapshot() as gen:
        before = len(store.file_records())

        def write() -> None:
            u, v = note_update("new.md", [(("New",), "A brand new note about glaciers.")])
            store.apply(updates=[u], vectors=v)

        t = threading.Thread(target=write)
        t.start()
        t.join(10)
        assert not t.is_alive()
        assert len(store.file_records()) == before
        assert store.generation == gen
    assert len(store.file_records()) == before + 1


def test_derived_arrays_come_back_only_for_their_generation(store: Store) -> None:
    """A backend may keep nothing (then ``load_derived`` is None) but never serves other arrays,
    another generation's, or a generation's that a newer one replaced."""
    gen = store.generation
    arrays: dict[str, np.ndarray] = {
        "a": np.arange(5, dtype=np.int64),
        "b": np.frombuffer(b"xyz", dtype=np.uint8),
    }
    store.save_derived("probe", gen, arrays)
    got = store.load_derived("probe", gen)
    assert got is None or (
        set(got) == set(arrays)
        and all(np.array_equal(got[k], v) and got[k].dtype == v.dtype for k, v in arrays.items())
    )
    assert store.load_derived("probe", gen + 1) is None and store.load_derived("other", gen) is None
    u, v = note_update("new.md", [(("New",), "A brand new note about glaciers.")])
    store.apply(updates=[u], vectors=v)
    store.save_derived("probe", store.generation, arrays)
    assert store.load_derived("probe", gen) is None


def test_space_is_checked_and_runs_are_recorded(store: Store) -> None:
    assert store.space == PROVIDER.space
    other = EmbeddingSpace("other", "m", "", PROVIDER.space.dimensions)
    with pytest.raises(SpaceMismatch):
        store.check_space(other)
    run = store.start_run()
    store.finish_run(run, "ok", RunStats(files_scanned=3, chunks_embedded=4, seconds=2.0).as_dict())
    last = store.last_run()
    assert last is not None and last.status == "ok" and last.stats.chunks_embedded == 4
    assert store.rebuild_estimate(other).chunks == 4


def test_dismissed_pairs_come_back_when_a_note_changes(store: Store) -> None:
    store.dismiss_pair("trains.md", "bread.md")
    assert store.dismissed_pairs() == {("bread.md", "trains.md")}
    u, v = note_update("trains.md", NOTES["trains.md"])
    changed = NoteUpdate(FileRecord("trains.md", "note", 1, 2, "other-hash", "indexed", n_chunks=1), u.chunks)
    store.apply(updates=[changed], vectors=v)
    assert store.dismissed_pairs() == set()


def test_a_restored_pair_is_no_longer_dismissed(store: Store) -> None:
    store.dismiss_pair("trains.md", "bread.md")
    assert store.restore_pair("trains.md", "bread.md") is True
    assert store.dismissed_pairs() == set()
    assert store.restore_pair("bread.md", "trains.md") is False, "nothing left to restore"


def test_clear_empties_and_stays_cleared(store: Store, backend: StoreBackend, tmp_path: Path) -> None:
    store.clear()
    assert store.cleared
    counts = store.counts()
    assert (counts.notes, counts.chunks, counts.vectors) == (0, 0, 0)
    assert store.space is None
    store.close()
    reopened = backend.open(tmp_path / "store")
    try:
        assert reopened.cleared and reopened.file_records() == {}
    finally:
        reopened.close()


def test_wipe_removes_the_store_and_a_new_one_has_a_new_identity(
    backend: StoreBackend, tmp_path: Path
) -> None:
    location = tmp_path / "w"
    s = backend.open(location)
    first_id = s.store_id
    s.close()
    assert backend.exists(location)
    backend.wipe(location)
    assert not backend.exists(location)
    s = backend.open(location)
    try:
        assert s.store_id != first_id and s.file_records() == {}
    finally:
        s.close()


TIER = EmbeddingSpace("hashing-tier", "tier-a", "", PROVIDER.space.dimensions)


def test_a_split_part_keeps_its_context(store: Store) -> None:
    u, v = note_update("table.md", [(("Table",), "| 3 | c |")])
    part = replace(u.chunks[0].chunk, context="| n | letter |\n|---|---|")
    store.apply(updates=[replace(u, chunks=[replace(u.chunks[0], chunk=part)])], vectors=v)
    assert store.chunk_by_id(part.id) == part


def test_a_pdf_page_and_a_canvas_card_come_back_with_their_chunks(store: Store) -> None:
    """Where a chunk is in a PDF (its page) or a canvas (its card's id) is stored and read back."""
    u, v = note_update("paper.pdf", [((), "page two text"), ((), "a card")])
    paged = replace(u.chunks[0].chunk, page=2)
    carded = replace(u.chunks[1].chunk, card="6f0ad84f44ce9c17")
    items = [replace(u.chunks[0], chunk=paged), replace(u.chunks[1], chunk=carded)]
    store.apply(updates=[replace(u, chunks=items)], vectors=v)
    assert store.chunk_by_id(paged.id) == paged and paged.page == 2
    assert store.chunk_by_id(carded.id) == carded and carded.card == "6f0ad84f44ce9c17"
    keys, _ = store.matrix()
    assert {c.id: (c.page, c.card) for c in store.chunks(keys.tolist()).values()}[paged.id] == (2, None)


def test_tier_vectors_are_filled_covered_and_go_with_their_chunks(store: Store) -> None:
    assert store.tier_space is None and store.tier_coverage() == (0, 4)
    assert store.matrix(tier=True)[0].size == 0
    missing = store.tier_missing(10)
    assert len(missing) == 4 and len(store.tier_missing(2)) == 2
    assert {title for _, title, _ in missing} == {"bread", "trains", "code"}
    assert all(store.chunk_by_id(chunk.id) == chunk for _, _, chunk in missing)
    vecs = PROVIDER.embed([f"tier {chunk.text}" for _, _, chunk in missing])
    gen = store.generation
    store.add_tier_vectors(TIER, {h: vecs[i] for i, (h, _, _) in enumerate(missing[:3])})
    assert store.generation > gen  # readers see the new vectors: caches are per generation
    assert store.tier_space == TIER and store.tier_coverage() == (3, 4)
    assert [h for h, _, _ in store.tier_missing(10)] == [missing[3][0]]
    keys, tier_vecs = store.matrix(tier=True)
    main_keys, _ = store.matrix()
    assert keys.tolist() == sorted(keys.tolist()) and set(keys.tolist()) < set(main_keys.tolist())
    by_id = {c.id: k for k, c in store.chunks(keys.tolist()).items()}
    for i, (_, _, chunk) in enumerate(missing[:3]):
        assert np.allclose(tier_vecs[keys.tolist().index(by_id[chunk.id])], vecs[i])
    # vectors of another tier model replace, never mix with, the stored ones
    other = replace(TIER, model="tier-b")
    store.add_tier_vectors(other, {missing[3][0]: vecs[3]})
    assert store.tier_space == other and store.tier_coverage() == (1, 4)
    # a deleted note's tier vectors go at the orphan sweep; drop_tier forgets the tier
    store.add_tier_vectors(other, {h: vecs[i] for i, (h, _, _) in enumerate(missing[:3])})
    store.apply(deletes=["trains.md"])
    store.drop_orphan_vectors()
    assert store.tier_coverage() == (3, 3) and store.matrix(tier=True)[0].size == 3
    store.drop_tier()
    assert store.tier_space is None and store.tier_coverage() == (0, 3)


def test_a_tier_vector_of_the_wrong_size_is_a_problem(store: Store) -> None:
    (h, _, _), *_ = store.tier_missing(1)
    assert store.problems() == []
    store.add_tier_vectors(TIER, {h: PROVIDER.embed(["x"])[0][:8]})
    assert store.problems() == ["1 quality-tier vectors with the wrong dimension"]


def test_clear_forgets_the_tier(store: Store) -> None:
    (h, _, _), *_ = store.tier_missing(1)
    store.add_tier_vectors(TIER, {h: PROVIDER.embed(["x"])[0]})
    store.clear()
    assert store.tier_space is None and store.tier_coverage() == (0, 0)
