"""What only the PostgreSQL backend has: vaults sharing one database, its errors, its migrations, the
HNSW path, and the index lifecycle's folders as schemas. The contract and service suites run on it
through the ``backend`` fixture; these tests need the session's cluster (tests/pg_server.py)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pg_server
import vaultlens as services
from vaultlens.chunking.chunker import Chunk
from vaultlens.config.settings import load_settings
from vaultlens.embedding.base import EmbeddingSpace
from vaultlens.errors import ConfigError, IndexNotFound, StoreError, VaultlensError
from vaultlens.index.backends import get_backend
from vaultlens.index.postgres import PostgresBackend
from vaultlens.index.postgres.schema import MIGRATIONS
from vaultlens.index.store import FileRecord, IndexedChunk, NoteUpdate, Store
from vaultlens.testing import HashingEmbeddingProvider
from vl_support import backend_args, open_app, run_cli, write_vault

pytestmark = pytest.mark.usefixtures("postgres_server")
PROVIDER = HashingEmbeddingProvider()


@pytest.fixture
def two_vaults(tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two vaults indexed into the one session database."""
    stores = []
    for name, text in (("a", "apples grow in the orchard"), ("b", "submarines dive under the ice")):
        vault = write_vault(tmp_path / name, {"note.md": f"# {name}\n\n{text}\n"})
        app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
        services.index(app)
        stores.append(get_backend("postgres").open(app.index_dir, create=False))
        app.close()
    yield stores[0], stores[1]
    for s in stores:
        s.close()


def test_two_vaults_in_one_database_never_see_each_others_rows(two_vaults: tuple[Store, Store]) -> None:
    a, b = two_vaults
    assert a.schema != b.schema  # type: ignore[attr-defined]
    for store, mine, theirs in ((a, "orchard", "submarin"), (b, "submarin", "orchard")):
        assert store.counts().notes == 1
        assert store.lexical([mine], 10, 10).notes and not store.lexical([theirs], 10, 10).notes
        texts = " ".join(n.text for n in store.note_texts())
        assert mine[:6] in texts and theirs[:6] not in texts
        keys, _ = store.matrix()
        assert set(store.chunk_paths(keys.tolist())) == set(keys.tolist())
    # every key either vault knows reads back as the asking vault's own text, never the other's
    every = {*a.matrix()[0].tolist(), *b.matrix()[0].tolist(), *range(1, 50)}
    assert all("orchard" in c.text for c in a.chunks(every).values())
    assert all("submarines" in c.text for c in b.chunks(every).values())
    for chunk in b.chunks(every).values():
        own = a.chunk_by_id(chunk.id)
        assert own is None or "orchard" in own.text


def test_the_same_vault_id_names_the_same_store_on_every_machine(tmp_path: Path) -> None:
    one = PostgresBackend(vault_id="team-notes").schema(tmp_path / "laptop" / "idx" / "r2")
    two = PostgresBackend(vault_id="team-notes").schema(tmp_path / "server" / "other" / "r2")
    assert one == two and one.endswith("_r2")
    assert PostgresBackend().schema(tmp_path / "laptop") != PostgresBackend().schema(tmp_path / "server")


def test_migrations_are_named_ordered_and_applied_once(tmp_path: Path) -> None:
    backend = PostgresBackend()
    schema = backend.schema(tmp_path / "m")
    assert backend.migrate(schema) == [name for name, _ in MIGRATIONS]
    assert backend.migrate(schema) == []
    store = backend.open(tmp_path / "m")
    try:
        rows = store._rows("SELECT name FROM schema_migrations ORDER BY name")  # type: ignore[attr-defined]
        assert [r[0] for r in rows] == sorted(name for name, _ in MIGRATIONS)
        assert store.generation == 0
    finally:
        store.close()
    assert [name for name, _ in MIGRATIONS] == sorted(name for name, _ in MIGRATIONS)


def test_a_missing_store_is_index_not_found(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFound):
        PostgresBackend().open(tmp_path / "never", create=False)


def test_a_wrong_port_is_an_unreachable_server_with_a_hint(tmp_path: Path) -> None:
    port = pg_server._free_port()
    backend = PostgresBackend(f"host=127.0.0.1 port={port} connect_timeout=2")
    with pytest.raises(StoreError) as caught:
        backend.open(tmp_path / "x")
    assert type(caught.value) is StoreError
    assert "cannot be reached" in caught.value.message and f"127.0.0.1:{port}" in caught.value.message
    assert caught.value.hint and "index.dsn" in caught.value.hint


def test_a_wrong_password_is_an_authentication_error_that_never_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSWORD", "not-the-password")
    backend = PostgresBackend(f"user={pg_server.SECRET_ROLE}")
    with pytest.raises(ConfigError) as caught:
        backend.open(tmp_path / "x")
    said = str(caught.value)
    assert "refused the login" in said and "PGPASSWORD" in said and "not-the-password" not in said


def test_the_password_comes_from_a_600_pgpass_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"*:*:*:{pg_server.SECRET_ROLE}:{pg_server.SECRET}\n", encoding="utf-8")
    passfile.chmod(stat.S_IRUSR | stat.S_IWUSR)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    assert PostgresBackend(f"user={pg_server.SECRET_ROLE}").exists(tmp_path / "x") is False


@pytest.mark.parametrize(
    "dsn",
    [
        "host=db password=hunter2 dbname=notes",
        "postgresql://me:hunter2@db/notes",
        "postgres://db/n?password=hunter2",
    ],
)
def test_a_dsn_with_a_password_is_refused_without_showing_it(dsn: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(None, {"index.dsn": dsn})
    assert "hunter2" not in str(caught.value) and "PGPASSWORD" in str(caught.value)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.toml").write_text(f"[index]\ndsn = {json.dumps(dsn)}\n", encoding="utf-8")
    vault = write_vault(tmp_path / "v", {"a.md": "# A\n"})
    env_before = os.environ.get("VAULTLENS_CONFIG")
    os.environ["VAULTLENS_CONFIG"] = str(tmp_path / "cfg" / "config.toml")
    try:
        shown = run_cli(["config", "show", "--vault", str(vault)])
    finally:
        if env_before is None:
            os.environ.pop("VAULTLENS_CONFIG", None)
    assert shown.exit_code == 2 and "hunter2" not in shown.output and "config.toml" in shown.output


def test_config_show_names_the_dsn(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "# A\n"})
    shown = run_cli(["config", "show", "--json", "--vault", str(vault), *backend_args("postgres"),
                     "--set", "index.dsn=host=db.example user=vl dbname=notes"])  # fmt: skip
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["index.dsn"]["value"] == "host=db.example user=vl dbname=notes"


def test_hnsw_answers_like_the_exact_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``exact_below`` chunks the HNSW index answers top-k; on a small clustered set it finds the
    exact neighbours (recall 1.0 at k=10) and scores them as inner products. Built over
    WIDE_HNSW_FROM chunks or more, it links them with the wider candidate list."""
    from vaultlens.index.postgres import vectors as pg_vectors

    monkeypatch.setattr(pg_vectors, "WIDE_HNSW_FROM", 600)
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(20, 64))
    exact = PostgresBackend(exact_below=10**9).open(tmp_path / "h")
    updates, vectors = [], {}
    for i in range(600):
        v = centers[i % 20] + 0.3 * rng.normal(size=64)
        v = (v / np.linalg.norm(v)).astype(np.float32)
        h = f"h{i}"
        vectors[h] = v
        chunk = Chunk(id=f"c{i}", path=f"n{i}.md", ordinal=0, heading_path=(), text=f"t{i}", content_hash=h,
                      start=0, end=2, start_line=0, end_line=1)  # fmt: skip
        rec = FileRecord(f"n{i}.md", "note", 1, 1, h, "indexed", n_chunks=1)
        updates.append(NoteUpdate(rec, [IndexedChunk(chunk, h, f"t{i}")]))
    exact.apply(updates, vectors)
    ann = PostgresBackend(exact_below=0).open(tmp_path / "h")
    ann.ensure_ann()
    # at 600 rows the planner rightly prefers a scan; this session asks it to take the index
    ann._rows("SELECT set_config('enable_seqscan', 'off', false)")  # type: ignore[attr-defined]
    try:
        recalls = []
        for j in range(20):
            q = vectors[f"h{j * 7}"]
            e_keys, e_scores = exact.top_k(q, 10)
            a_keys, a_scores = ann.top_k(q, 10)
            recalls.append(len(set(e_keys.tolist()) & set(a_keys.tolist())) / 10)
            np.testing.assert_allclose(np.sort(a_scores), np.sort(ann.scores(q, a_keys)), rtol=1e-5)
        assert np.mean(recalls) >= 0.95
        assert exact.neighbours(exact.matrix()[0], 5) is None  # below its threshold: the caller compares
        keys = ann.matrix()[0][:50]
        src, dst = ann.neighbours(keys, 5)  # type: ignore[misc]
        assert set(src.tolist()) == set(keys.tolist()) and not (src == dst).any()
        assert (np.bincount(src - src.min()) <= 5).all()
        recall = ann.ann_recall(queries=30, k=10)
        assert recall is not None and recall >= 0.95 and exact.ann_recall() is None
        plan = ann._rows(  # type: ignore[attr-defined]
            "EXPLAIN SELECT key FROM chunks ORDER BY vec::vector(64) <=> %s LIMIT 10", (vectors["h0"],)
        )
        assert "chunks_vec_hnsw" in " ".join(r[0] for r in plan)
        definition = ann._one("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_vec_hnsw'")[0]  # type: ignore[attr-defined]
        assert f"ef_construction='{pg_vectors.WIDE_EF_CONSTRUCTION}'" in definition
        # the candidate list each top-k asks for: 4 per result (recall at 1M), set only when it changes
        beams: list[str] = []
        rows = type(ann)._rows

        def logged(self: Any, sql: str, params: Any = None, **kw: Any) -> list[Any]:
            if "set_config('hnsw.ef_search'" in sql:
                beams.extend(params)
            return rows(self, sql, params, **kw)

        def beam() -> str:
            return str(ann._one("SHOW hnsw.ef_search")[0])  # type: ignore[attr-defined]

        ann.top_k(vectors["h0"], 600)
        in_force = []
        with monkeypatch.context() as m:
            m.setattr(type(ann), "_rows", logged)
            for k in (10, 200, 200, 600, 10):
                ann.top_k(vectors["h0"], k)
                in_force.append(beam())
        assert in_force == ["40", "800", "800", "1000", "40"]
        assert beams == ["40", "800", "1000", "40"]
        # a statement that fails inside a snapshot undoes the setting made in it; it is made again
        ann.top_k(vectors["h0"], 600)
        with pytest.raises(VaultlensError), ann.snapshot():
            ann.top_k(vectors["h0"], 10)
            ann._rows("SELECT 1 / 0")  # type: ignore[attr-defined]
        assert beam() == "1000"
        ann.top_k(vectors["h0"], 10)
        assert beam() == "40"
    finally:
        exact.close()
        ann.close()


def _statements(monkeypatch: pytest.MonkeyPatch, store: Store) -> list[str]:
    """Every statement ``store``'s reads send from now on (`_one` reads through `_rows`)."""
    sent: list[str] = []
    rows = type(store)._rows  # type: ignore[attr-defined]

    def logged(self: Any, sql: str, params: Any = None, **kw: Any) -> list[Any]:
        sent.append(sql)
        return rows(self, sql, params, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(type(store), "_rows", logged)
    return sent


def _one_chunk_notes(start: int, stop: int, rng: np.random.Generator) -> tuple[list[NoteUpdate], dict]:
    updates, vectors = [], {}
    for i in range(start, stop):
        v = rng.normal(size=32)
        vectors[f"h{i}"] = (v / np.linalg.norm(v)).astype(np.float32)
        chunk = Chunk(id=f"c{i}", path=f"n{i}.md", ordinal=0, heading_path=(), text=f"t{i}", content_hash=f"h{i}",
                      start=0, end=2, start_line=0, end_line=1)  # fmt: skip
        rec = FileRecord(f"n{i}.md", "note", 1, 1, f"h{i}", "indexed", n_chunks=1)
        updates.append(NoteUpdate(rec, [IndexedChunk(chunk, f"h{i}", f"t{i}")]))
    return updates, vectors


def test_the_matrix_is_mapped_from_a_cache_file_of_its_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`matrix()` streams the vectors into a file in the store's folder and maps it (a whole-vault scan
    does not hold them): the stored vectors in key order; a new generation gets a new file and the old
    one goes; a folder that cannot be written holds them in memory instead; a wipe removes the file."""
    from vaultlens.index.postgres import vectors as pg_vectors

    rng = np.random.default_rng(3)
    location = tmp_path / "m"
    store = PostgresBackend().open(location)
    try:
        store.set_space(EmbeddingSpace("test", "random-32", "", 32))
        store.apply(*_one_chunk_notes(0, 50, rng))
        keys, vecs = store.matrix()
        assert isinstance(vecs, np.memmap) and keys.tolist() == sorted(keys.tolist())
        assert store.scores(vecs[7], keys[7:8])[0] == pytest.approx(float(vecs[7] @ vecs[7]), rel=1e-6)
        stored = dict(store._rows("SELECT key, vec FROM chunks", binary=True))  # type: ignore[attr-defined]
        assert all(np.array_equal(stored[k].to_numpy(), v) for k, v in zip(keys.tolist(), vecs, strict=True))
        first = sorted(p.name for p in location.glob("matrix-*.npy"))
        assert len(first) == 2
        store.apply(*_one_chunk_notes(50, 60, rng))
        keys, vecs = store.matrix()
        assert len(keys) == 60
        store_vecs = np.array(vecs)
        files = sorted(p.name for p in location.glob("matrix-*.npy"))
        assert len(files) == 2 and not set(files) & set(first)
        store.apply(*_one_chunk_notes(60, 61, rng))

        def read_only(*_: object) -> None:
            raise PermissionError(13, "Permission denied")  # as root, chmod would not stop a write

        monkeypatch.setattr(pg_vectors, "write_matrix", read_only)
        keys, vecs = store.matrix()
        assert len(keys) == 61 and not isinstance(vecs, np.memmap)
        assert np.array_equal(vecs[:60], store_vecs) and len(vecs[60]) == 32
        assert sorted(p.name for p in location.glob("matrix-*.npy")) == files
    finally:
        store.close()
    PostgresBackend().wipe(location)
    assert not list(location.glob("matrix-*"))


def test_paths_the_dense_read_returned_are_not_read_again_nor_served_to_a_later_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a snapshot, `chunk_paths` of keys that `top_k` or `scores` just returned sends no
    statement (index/postgres/seen.py); outside one, or in a newer generation, it reads the rows."""
    rng = np.random.default_rng(5)
    store = PostgresBackend().open(tmp_path / "p")
    rows = type(store)._rows
    statements = _statements(monkeypatch, store)
    try:
        store.set_space(EmbeddingSpace("test", "random-32", "", 32))
        updates, vectors = _one_chunk_notes(0, 20, rng)
        store.apply(updates, vectors)
        truth = dict(rows(store, "SELECT key, path FROM chunks"))
        q = vectors["h3"]
        with store.snapshot():
            keys, _ = store.top_k(q, 5)
            others = np.array([k for k in truth if k not in set(keys.tolist())][:3], dtype=np.int64)
            store.scores(q, others)
            statements.clear()
            seen = store.chunk_paths([*keys.tolist(), *others.tolist()])
            assert statements == []
            assert seen == {k: truth[k] for k in [*keys.tolist(), *others.tolist()]}
            one_more = next(k for k in truth if k not in seen)
            assert store.chunk_paths([one_more]) == {one_more: truth[one_more]} and len(statements) == 1
        best = int(keys[0])
        assert store.chunk_paths([best]) == {best: truth[best]} and len(statements) == 2  # no snapshot
        store.apply(deletes=[truth[best]])
        with store.snapshot():
            assert store.chunk_paths([best]) == {}  # gone in this generation: read, not remembered
    finally:
        store.close()


def test_a_background_rebuild_builds_a_new_schema_and_drops_the_old(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {f"n{i}.md": f"# N{i}\n\nriver bread {i}\n" for i in range(5)})
    app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
    services.index(app)
    backend = app.backend
    first = app.index_dir
    services.rebuild_in_background(app, switch_wait=5)
    second = app.index_dir
    assert second != first and second.name == "r1"
    assert backend.exists(second) and not backend.exists(first)
    assert services.search(app, "river bread", limit=3)
    services.clear(app)
    assert app.backend.exists(app.index_dir)  # cleared, not removed: it stays cleared
    app.close()


def test_a_lock_held_past_the_timeout_is_store_busy_with_a_hint(tmp_path: Path) -> None:
    """A real lock timeout (another session holds the store's advisory lock) says busy, not a traceback."""
    import psycopg

    from vaultlens.errors import StoreBusy
    from vaultlens.index.postgres.connection import translate
    from vaultlens.index.postgres.schema import lock_key

    backend = PostgresBackend()
    schema = backend.schema(tmp_path / "busy")
    holder = psycopg.connect("", autocommit=True)
    waiter = psycopg.connect("", autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (lock_key(schema),))
        waiter.execute("SET lock_timeout = 200")
        with pytest.raises(psycopg.Error) as raised:
            waiter.execute("SELECT pg_advisory_lock(%s)", (lock_key(schema),))
        said = translate(raised.value, "", "write the index")
        assert isinstance(said, StoreBusy) and said.hint and "another vaultlens process" in said.hint.lower()
    finally:
        holder.close()
        waiter.close()


def test_a_write_left_mid_command_by_ctrl_c_does_not_break_the_next_write(tmp_path: Path) -> None:
    """Ctrl-C between sending a statement and reading its answer leaves the connection busy (psycopg
    cannot cancel it there); the run's "cancelled" record and every later write must still land."""
    store = PostgresBackend().open(tmp_path / "s", create=True)
    try:
        run_id = store.start_run()
        with pytest.raises(KeyboardInterrupt), store.transaction() as db:
            db.execute("INSERT INTO meta (key, value) VALUES ('half', 'written')")
            db.pgconn.send_query(b"SELECT pg_sleep(0.2)")  # sent, its answer never read
            raise KeyboardInterrupt
        store.finish_run(run_id, "cancelled", {"chunks_embedded": 3})
        record = store.last_run()
        assert record is not None and record.status == "cancelled"
        assert store.get_meta("half") is None  # the interrupted transaction was rolled back
    finally:
        store.close()


def test_a_read_left_mid_command_by_ctrl_c_does_not_break_the_next_snapshot(tmp_path: Path) -> None:
    """Ctrl-C inside a snapshot with a statement's answer unread: the snapshot cannot end its
    transaction on that connection, so it closes it (the server ends the transaction) and the next
    snapshot reads on a new one."""
    store = PostgresBackend().open(tmp_path / "s", create=True)
    try:
        with pytest.raises(KeyboardInterrupt), store.snapshot():
            busy = store._reader()  # type: ignore[attr-defined]
            busy.pgconn.send_query(b"SELECT pg_sleep(0.2)")  # sent, its answer never read
            raise KeyboardInterrupt
        assert busy.closed
        with store.snapshot() as gen:
            assert gen == int(store.get_meta("generation") or 0)
            assert store.counts().chunks == 0
    finally:
        store.close()


def test_a_chunks_terms_stay_in_its_row_beside_a_512_d_vector(tmp_path: Path) -> None:
    """BM25 reads the tsvector of every row it scores: a row already past the toast target (its 2 KB
    vector is kept inline) must not send the terms to the TOAST table (4 more page reads a row)."""
    store = PostgresBackend().open(tmp_path / "t")
    terms = " ".join(f"word{i}" for i in range(150))  # a long chunk's distinct words
    chunk = Chunk(id="c0", path="n.md", ordinal=0, heading_path=(), text="t", content_hash="h",
                  start=0, end=1, start_line=0, end_line=1)  # fmt: skip
    rec = FileRecord("n.md", "note", 1, 1, "h", "indexed", n_chunks=1)
    vec = np.full(512, 512**-0.5, dtype=np.float32)
    try:
        store.apply([NoteUpdate(rec, [IndexedChunk(chunk, "h", terms)])], {"h": vec})
        toast = store._one(  # type: ignore[attr-defined]
            "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'chunks'::regclass"
        )[0]
        assert store._one(f"SELECT COUNT(*) FROM {toast}")[0] == 0  # type: ignore[attr-defined]
        assert list(store.lexical(["word7", "word149"], 10, 10).chunks) == store.matrix()[0].tolist()
    finally:
        store.close()


def test_a_querys_new_terms_are_counted_in_one_statement_for_chunks_and_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Document frequencies of the terms not cached yet: one lookup for chunks and notes together (not
    a count of the rows each term matches, nor a round trip per term or table), and they are those
    counts."""
    vault = write_vault(
        tmp_path / "v", {f"n{i}.md": f"# n{i}\n\napples pears{i % 2} plums{i % 3}\n" for i in range(6)}
    )
    app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
    services.index(app)
    app.close()
    store = get_backend("postgres").open(app.index_dir, create=False)
    statements = _statements(monkeypatch, store)
    try:
        with store.snapshot():
            assert store._doc_freqs("chunks", ["pears0", "plums1", "absent"]) == {  # type: ignore[attr-defined]
                "pears0": 3, "plums1": 2, "absent": 0
            }  # fmt: skip
            assert store._doc_freqs("files", ["pears0", "plums1", "absent"]) == {  # type: ignore[attr-defined]
                "pears0": 3, "plums1": 2, "absent": 0
            }  # fmt: skip
            assert sum("FROM term_stats" in sql for sql in statements) == 1
            assert store.lexical(["pears1", "plums2", "apples"], 10, 10).chunks
        assert sum("FROM term_stats" in sql for sql in statements) == 2
        assert not any("tsquery LIMIT" in sql for sql in statements)
    finally:
        store.close()


def _zipf_store(location: Path) -> Store:
    """300 notes of 3 chunks, each 20 words drawn from 150 with Zipf-like weights (word0 the commonest)."""
    import random

    rng = random.Random(5)
    words = [f"word{i}" for i in range(150)]
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(words))]
    updates, vectors = [], {}
    for n in range(300):
        items = []
        for o in range(3):
            text = " ".join(rng.choices(words, weights, k=20))
            chunk = Chunk(id=f"n{n}#{o}", path=f"n{n}.md", ordinal=o, heading_path=(f"N{n}",), text=text,
                          content_hash=f"{n}:{o}", start=0, end=1, start_line=o, end_line=o + 1)  # fmt: skip
            items.append(IndexedChunk(chunk, f"{n}:{o}", text))
        vectors.update(
            dict(zip((i.embed_hash for i in items), PROVIDER.embed([i.terms for i in items]), strict=True))
        )
        updates.append(
            NoteUpdate(FileRecord(f"n{n}.md", "note", 1, 1, f"h{n}", "indexed", n_chunks=3), items)
        )
    store = PostgresBackend().open(location)
    store.set_space(PROVIDER.space)
    store.apply(updates=updates, vectors=vectors)
    return store


def test_a_common_term_is_scored_only_for_the_rows_that_can_still_reach_the_best(tmp_path: Path) -> None:
    """Of the rows the rarer terms found, the common term is looked up only for those whose score
    over the rarer terms, plus the most the common term can add, reaches the limit-th best: the
    same best rows and scores as scoring it for every row found."""
    from vaultlens.index import bm25_top
    from vaultlens.index.postgres import fulltext

    store = _zipf_store(tmp_path / "p")
    try:
        match, common, limit = ["word20", "word30", "word40"], ["word0"], 10
        idf = {t: bm25_top.idf(900, df) for t, df in store._doc_freqs("chunks", match + common).items()}  # type: ignore[attr-defined]
        params = {
            "match": match, "match_idf": [idf[t] for t in match], "also": [], "also_idf": [],
            "probe": common, "probe_idf": [idf[t] for t in common],
            "avgdl": store._avgdl("chunks"), "limit": limit,  # type: ignore[attr-defined]
        }  # fmt: skip
        sql = fulltext.bm25_sql("chunks", "key", False, True)
        reach = store._rows(sql, {**params, "bound": (bm25_top.K1 + 1) * idf["word0"]})  # type: ignore[attr-defined]
        every = store._rows(sql, {**params, "bound": float("inf")})  # type: ignore[attr-defined]
        assert len(reach) == limit
        _same_best(dict(reach), dict(every))
        ((plan,),) = store._rows(  # type: ignore[attr-defined]
            "EXPLAIN (ANALYZE, FORMAT JSON) " + sql, {**params, "bound": (bm25_top.K1 + 1) * idf["word0"]}
        )
        found = store._one(  # type: ignore[attr-defined]
            "SELECT COUNT(DISTINCT key) FROM chunks_postings WHERE term = ANY(%s)", (match,)
        )[0]
        probes = [n["Actual Loops"] for n in _plan_nodes(plan[0]["Plan"]) if n.get("Node Type") == "Limit"]
        assert probes and 0 < max(probes) < found / 2  # a probe per row that can reach, not per row found
    finally:
        store.close()


def _plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


def test_common_terms_probed_per_row_or_joined_score_as_the_plain_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pruned BM25 scores its common terms only for the rows its rarer ones found, by an index probe
    per row or by a join with the term's postings (fulltext.probed): the same rows and scores either
    way, and those of the plain query."""
    from vaultlens.index import bm25_top
    from vaultlens.index.postgres import fulltext

    store = _zipf_store(tmp_path / "p")
    queries = [["word3", "word90", "word91"], ["word4", "word6", "word140"], ["word5", "word8", "word120"]]
    split: list[tuple[list[str], list[str]]] = []
    real = fulltext.probed

    def recorded(*args: Any) -> tuple[list[str], list[str]]:
        split.append(real(*args))
        return split[-1]

    monkeypatch.setattr(fulltext, "probed", recorded)
    try:
        plain = [store.lexical(q, 5, 5) for q in queries]
        monkeypatch.setattr(bm25_top, "PRUNE_FROM_ROWS", 0)
        results = {}
        for probe_from in (0, 10**9):  # every common term probed; every one joined
            monkeypatch.setattr(fulltext, "PROBE_FROM", probe_from)
            split.clear()
            results[probe_from] = [store.lexical(q, 5, 5) for q in queries]
            probed = [t for _, probe in split for t in probe]
            joined = [t for also, _ in split for t in also]
            assert (probed and not joined) if probe_from == 0 else (joined and not probed)
    finally:
        store.close()
    for found in results.values():
        for a, b in zip(plain, found, strict=True):
            _same_best(a.chunks, b.chunks)
            _same_best(a.notes, b.notes)


def _same_best(a: dict[Any, float], b: dict[Any, float]) -> None:
    """The same scores, and the same rows above the last one's score (rows tied with it may swap: the
    order in which a row's terms are added moves a score's last bit)."""
    assert list(b.values()) == pytest.approx(list(a.values()), rel=1e-12)
    last = min(a.values(), default=0.0) * (1 + 1e-9)
    assert {k for k, v in a.items() if v > last} == {k for k, v in b.items() if v > last}


def test_term_counts_follow_every_write(tmp_path: Path) -> None:
    """The document frequencies `apply` keeps equal PostgreSQL's own count of the stored tsvectors after
    notes are added, changed and deleted, for chunks and notes alike; a cleared store has none."""
    notes = {
        f"n{i}.md": f"# n{i}\n\napples pears{i % 2} plums{i % 3}\n\n## more\n\nfigs{i}\n" for i in range(6)
    }
    vault = write_vault(tmp_path / "v", notes)
    app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
    services.index(app)
    (vault / "n1.md").write_text("# n1\n\nquinces only now\n", encoding="utf-8")
    (vault / "n2.md").unlink()
    (vault / "n9.md").write_text("# n9\n\napples and quinces\n", encoding="utf-8")
    services.index(app)
    app.close()
    store = get_backend("postgres").open(app.index_dir, create=False)
    try:
        for table in ("chunks", "files"):
            kept = store._rows(  # type: ignore[attr-defined]
                "SELECT term, df FROM term_stats WHERE tbl = %s AND df <> 0 ORDER BY term", (table,)
            )
            truth = store._rows(f"SELECT word, ndoc FROM ts_stat('SELECT tsv FROM {table}') ORDER BY word")  # type: ignore[attr-defined]
            assert [tuple(r) for r in kept] == [tuple(r) for r in truth] and len(truth) > 10
        store.clear()
        assert store._one("SELECT COUNT(*) FROM term_stats")[0] == 0  # type: ignore[attr-defined]
    finally:
        store.close()


def test_a_batch_is_written_a_statement_per_table_per_slice_in_its_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`apply` sends a slice of notes' chunks in one statement (not one per chunk: an executor
    start each), slices cut at whole notes, keys in the batch's order; a note's
    links and note-level terms land as before, and a note without chunks has no note-level terms."""
    import psycopg

    from vaultlens.index.postgres import store as pg_store
    from vaultlens.vault.model import Link

    monkeypatch.setattr(pg_store, "SLICE_CHUNKS", 4)
    sent: list[str] = []
    execute = psycopg.Cursor.execute

    def logged(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        sent.append(str(query))
        return execute(self, query, params, **kw)

    def note(name: str, n: int) -> NoteUpdate:
        chunks = [
            IndexedChunk(Chunk(id=f"{name}#{k}", path=f"{name}.md", ordinal=k, heading_path=(name,),
                               text=f"t{k}", content_hash=f"h{k}", start=k, end=k + 1, start_line=k,
                               end_line=k + 1), f"e{k}", f"{name}word word{k}")
            for k in range(n)
        ]  # fmt: skip
        rec = FileRecord(f"{name}.md", "note", 1, 1, name, "indexed", title=name, n_chunks=n)
        return NoteUpdate(rec, chunks, [Link("wiki", f"{name}-target", 3)])

    vecs = {f"e{k}": np.full(8, 8**-0.5, dtype=np.float32) for k in range(3)}
    store = PostgresBackend().open(tmp_path / "b")
    try:
        monkeypatch.setattr(psycopg.Cursor, "execute", logged)
        store.apply([note("a", 3), note("b", 3), note("c", 3), note("d", 0)], vecs)
        monkeypatch.setattr(psycopg.Cursor, "execute", execute)
        assert sum(sql.startswith("INSERT INTO chunks") for sql in sent) == 2  # a+b (6 >= 4), c+d
        assert sum(sql.startswith("INSERT INTO files") for sql in sent) == 2
        keys, ids, _ = store.chunk_layout()
        assert [store.chunks([k])[k].id for k in keys.tolist()] == [
            f"{n}#{k}" for n in "abc" for k in range(3)
        ]
        assert ids == [f"{n}.md" for n in "abc" for _ in range(3)]
        assert store.links(["b.md"])["b.md"] == [Link("wiki", "b-target", 3)]
        assert set(store.lexical(["bword"], 10, 10).notes) == {"b.md"}
        assert store._one("SELECT tsv IS NULL FROM files WHERE path = 'd.md'")[0]  # type: ignore[attr-defined]
        assert store.problems() == []
    finally:
        store.close()


def test_the_term_counts_migration_fills_an_existing_store(tmp_path: Path) -> None:
    """A store written before migration 0003 gets its document frequencies counted from its rows
    (the same as PostgreSQL's own count), and searches read them."""
    vault = write_vault(tmp_path / "v", {f"n{i}.md": f"# n{i}\n\napples pears{i % 2}\n" for i in range(5)})
    app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
    services.index(app)
    app.close()
    backend = get_backend("postgres")
    store = backend.open(app.index_dir, create=False)
    try:
        with store.transaction() as db:  # type: ignore[attr-defined]  # as before 0003
            db.execute("DROP TABLE term_stats")
            db.execute("DELETE FROM schema_migrations WHERE name = '0003_term_stats'")
        assert backend.migrate(store.schema) == ["0003_term_stats"]  # type: ignore[attr-defined,union-attr]
        for table in ("chunks", "files"):
            kept = store._rows("SELECT term, df FROM term_stats WHERE tbl = %s ORDER BY term", (table,))  # type: ignore[attr-defined]
            truth = store._rows(f"SELECT word, ndoc FROM ts_stat('SELECT tsv FROM {table}') ORDER BY word")  # type: ignore[attr-defined]
            assert [tuple(r) for r in kept] == [tuple(r) for r in truth] and ("pears1", 2) in truth
        assert set(store.lexical(["pears1", "apples"], 10, 10).notes) == {"n1.md", "n3.md"}
    finally:
        store.close()


def _kept_and_counted(store: Store) -> list[tuple[Any, Any]]:
    """(kept, counted) for the store counts and for each table's full-text rows and summed lengths."""
    pairs: list[tuple[Any, Any]] = [(store.counts(), store._counted())]  # type: ignore[attr-defined]
    for table in ("chunks", "files"):
        kept = store._rows(  # type: ignore[attr-defined]
            "SELECT n FROM counters WHERE name = ANY(%s) ORDER BY name", ([f"dl:{table}", f"fts:{table}"],)
        )
        truth = store._one(f"SELECT COALESCE(SUM(dl), 0), COUNT(*) FROM {table} WHERE tsv IS NOT NULL")  # type: ignore[attr-defined]
        pairs.append(([r[0] for r in kept], list(truth)))
    for table, key in (("chunks", "key"), ("files", "path")):  # BM25's postings: each row's terms
        posted = store._rows(f"SELECT term, {key}, tf, dl FROM {table}_postings ORDER BY 1, 2")  # type: ignore[attr-defined]
        terms = store._rows(  # type: ignore[attr-defined]
            f"SELECT u.lexeme, r.{key}, cardinality(u.positions), r.dl FROM {table} r, unnest(r.tsv) u ORDER BY 1, 2"
        )
        pairs.append(([tuple(r) for r in posted], [tuple(r) for r in terms]))
    return pairs


def test_the_kept_counts_follow_every_write(tmp_path: Path) -> None:
    """The counters the triggers keep equal the rows after notes are added, changed, deleted, restamped,
    skipped and their vectors dropped; a cleared store counts nothing."""
    notes = {f"n{i}.md": f"# n{i}\n\napples pears{i % 2}\n\n## more\n\nfigs{i} " * (i + 1) for i in range(6)}
    vault = write_vault(tmp_path / "v", {**notes, "empty.md": "  \n"})
    app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
    services.index(app)
    (vault / "n1.md").write_text("# n1\n\nquinces only now\n", encoding="utf-8")
    (vault / "n2.md").unlink()
    (vault / "n9.md").write_text("# n9\n\napples and quinces\n", encoding="utf-8")
    (vault / "n3.md").write_bytes(b"\x00binary now")
    os.utime(vault / "n4.md", ns=(1, 2_000_000_000))  # same bytes, new stamp
    services.index(app)
    app.close()
    store = get_backend("postgres").open(app.index_dir, create=False)
    try:
        pairs = _kept_and_counted(store)
        assert all(kept == truth for kept, truth in pairs), pairs
        counts = pairs[0][0]
        assert (counts.notes, counts.files) == (5, {"indexed": 5, "skipped": 2})  # type: ignore[union-attr]
        assert store.problems() == []
        with store.transaction() as db:  # type: ignore[attr-defined]
            db.execute("DELETE FROM chunks WHERE path = 'n5.md'")  # orphans its vectors
        assert store.drop_orphan_vectors() > 0
        assert all(kept == truth for kept, truth in _kept_and_counted(store))
        store.clear()
        assert store._one("SELECT COUNT(*) FROM counters WHERE n <> 0")[0] == 0  # type: ignore[attr-defined]
        assert all(kept == truth == [] for kept, truth in _kept_and_counted(store)[3:])
        assert store.counts() == store._counted()  # type: ignore[attr-defined]
    finally:
        store.close()


def test_status_and_search_read_the_counters_not_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`counts`, the lexical stage and the dense top-k after a write count no table (a pass over a
    million rows each at 1,000,000 chunks): one lookup in the counters instead."""
    vault = write_vault(tmp_path / "v", {f"n{i}.md": f"# n{i}\n\napples figs{i}\n" for i in range(6)})
    app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
    services.index(app)
    app.close()
    store = get_backend("postgres").open(app.index_dir, create=False)
    statements = _statements(monkeypatch, store)
    try:
        assert store.counts().chunks == 6
        with store.snapshot():
            assert list(store.lexical(["figs1", "apples"], 10, 10).notes) == ["n1.md"]
            keys, _ = store.top_k(
                np.full(HashingEmbeddingProvider().space.dimensions, 0.1, dtype=np.float32), 3
            )
            assert len(keys) == 3
        assert statements and not [sql for sql in statements if "COUNT(" in sql or "AVG(" in sql]
        # read once per snapshot: a writer's commit meanwhile shows in the next one
        statements.clear()
        writer = get_backend("postgres").open(app.index_dir, create=False)
        with store.snapshot():
            assert store.counts().chunks == 6
            writer.apply(deletes=["n0.md"])
            assert store.counts().chunks == 6
        assert sum("FROM counters" in sql for sql in statements) == 1
        assert store.counts().chunks == 5
        writer.close()
    finally:
        store.close()


def test_doctor_names_a_counter_that_differs_from_the_rows(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "v", {"a.md": "# a\n\napples\n"})
    app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
    services.index(app)
    app.close()
    store = get_backend("postgres").open(app.index_dir, create=False)
    try:
        with store.transaction() as db:  # type: ignore[attr-defined]
            db.execute("UPDATE counters SET n = n + 3 WHERE name IN ('chunks', 'dl:files')")
            db.execute("DELETE FROM chunks_postings WHERE term = 'appl'")
            db.execute("UPDATE term_stats SET df = df + 1 WHERE tbl = 'files' AND term = 'appl'")
        found = " ".join(store.problems())
        assert "kept counts" in found and "full-text size of files" in found
        assert "the full-text postings of chunks (1) differ from its terms (2)" in found
        assert "1 kept term counts of files differ from its full-text index" in found
        assert "term counts of chunks" not in found
    finally:
        store.close()


def test_the_counters_migration_fills_an_existing_store(tmp_path: Path) -> None:
    """A store written before migration 0004 gets its counters from its rows, and its triggers from then on."""
    vault = write_vault(tmp_path / "v", {f"n{i}.md": f"# n{i}\n\napples pears{i % 2}\n" for i in range(5)})
    app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
    services.index(app)
    backend = get_backend("postgres")
    store = backend.open(app.index_dir, create=False)
    try:
        with store.transaction() as db:  # type: ignore[attr-defined]  # as before 0004
            db.execute("DROP TABLE counters")
            for table in ("chunks", "vectors", "files"):
                db.execute(f"DROP FUNCTION count_{table}() CASCADE")  # and its triggers
            db.execute("DELETE FROM schema_migrations WHERE name = '0004_counters'")
        assert backend.migrate(store.schema) == ["0004_counters"]  # type: ignore[attr-defined,union-attr]
        assert all(kept == truth for kept, truth in _kept_and_counted(store))
        assert store.counts().notes == 5
    finally:
        store.close()
    (vault / "n0.md").unlink()
    services.index(app)
    app.close()
    store = backend.open(app.index_dir, create=False)
    try:
        assert store.counts().notes == 4 and all(kept == truth for kept, truth in _kept_and_counted(store))
    finally:
        store.close()


def test_the_postings_migration_fills_an_existing_store(tmp_path: Path) -> None:
    """A store written before migration 0005 gets BM25's postings from its tsvectors, its triggers keep
    them from then on, and a search finds the same notes with the same scores."""
    notes = {
        f"n{i}.md": f"# n{i}\n\napples pears{i % 2} figs\n\n## more\n\nfigs{i} " * (i + 1) for i in range(5)
    }
    vault = write_vault(tmp_path / "v", notes)
    app = open_app(vault, "postgres", provider=HashingEmbeddingProvider())
    services.index(app)
    backend = get_backend("postgres")
    store = backend.open(app.index_dir, create=False)
    try:
        before = store.lexical(["pears1", "figs", "apples"], 10, 10)
        with store.transaction() as db:  # type: ignore[attr-defined]  # as before 0005
            for table in ("chunks", "files"):
                db.execute(f"DROP TABLE {table}_postings")
                db.execute(f"DROP FUNCTION post_{table}() CASCADE")  # and its triggers
                db.execute(f"CREATE INDEX {table}_tsv ON {table} USING gin (tsv)")
            db.execute("DELETE FROM schema_migrations WHERE name = '0005_postings'")
        assert backend.migrate(store.schema) == ["0005_postings"]  # type: ignore[attr-defined,union-attr]
        assert all(kept == truth for kept, truth in _kept_and_counted(store))
        left = store._rows(  # type: ignore[attr-defined]
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE '%%_tsv'"
        )
        assert left == []  # nothing reads the tsvectors' GIN indexes any more
        after = store.lexical(["pears1", "figs", "apples"], 10, 10)
        assert after == before and set(after.notes) >= {"n1.md", "n3.md"}
    finally:
        store.close()
    (vault / "n0.md").unlink()
    (vault / "n1.md").write_text("# n1\n\nkiwi\n", encoding="utf-8")
    services.index(app)
    app.close()
    store = backend.open(app.index_dir, create=False)
    try:
        assert all(kept == truth for kept, truth in _kept_and_counted(store))
        assert set(store.lexical(["kiwi"], 10, 10).notes) == {"n1.md"}
    finally:
        store.close()


def test_status_through_the_cli_reports_the_kept_counts(tmp_path: Path) -> None:
    """`vaultlens status --json` on the postgres backend: the notes, chunks, vectors and files it
    reports (from the counters) are the rows, after a first index and after an edit, a delete and a
    note turned binary; `doctor` finds nothing wrong."""
    import vaultlens.testing  # noqa: F401  (registers the fake provider)

    vault = write_vault(
        tmp_path / "v", {f"n{i}.md": f"# n{i}\n\nfigs{i} and apples\n" * (i + 1) for i in range(5)}
    )
    cli = [*backend_args("postgres"), "--set", "embedding.provider=fake", "--vault", str(vault)]
    assert run_cli(["index", *cli]).exit_code == 0
    (vault / "n1.md").write_text("# n1\n\nonly quinces now\n", encoding="utf-8")
    (vault / "n2.md").unlink()
    (vault / "n3.md").write_bytes(b"\x00binary")
    assert run_cli(["index", *cli]).exit_code == 0
    shown = run_cli(["status", "--json", *cli])
    assert shown.exit_code == 0, shown.output
    status = json.loads(shown.stdout)
    store = get_backend("postgres").open(Path(status["index_dir"]), create=False)
    try:
        truth = store._counted()  # type: ignore[attr-defined]
    finally:
        store.close()
    assert (status["notes"], status["chunks"], status["vectors"]) == (
        truth.notes,
        truth.chunks,
        truth.vectors,
    )
    assert status["notes"] == 3 and status["files"]["skipped"] == 1 == truth.files["skipped"]
    assert run_cli(["doctor", *cli]).exit_code == 0
