"""The embedded store's ANN tier (index/sqlite/ann.py): used past ``search.ann_threshold`` chunks, kept
current a note at a time from the store's change log, persisted beside the store under its
identity and generation, checked by doctor. Real SQLite files and the real bundled model."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest

from vaultlens.config.settings import SearchSettings
from vaultlens.errors import IndexNotFound
from vaultlens.index.backends import get_backend
from vaultlens.index.progress import NoProgress
from vaultlens.index.sqlite.ann import AnnTier
from vaultlens.index.store import Store
from vaultlens.index.vector_file import VectorFile
from vaultlens.services.finding.search import rank_notes
from vl_support import VAULTLENS_BIN, cli_env, run_index, settings, write_vault

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ANN_ON = settings(None, **{"search.ann_threshold": "1"})  # the writer keeps the tier's file from 1 chunk


@contextmanager
def ann_store(store_dir: Path, threshold: int = 1) -> Iterator[Store]:
    """The SQLite store at ``store_dir`` with the ANN tier switched on from ``threshold`` chunks."""
    store = get_backend("sqlite", settings(None, **{"search.ann_threshold": str(threshold)})).open(
        store_dir, create=False
    )
    try:
        yield store
    finally:
        store.close()


def top_paths(store: Store, provider, query: str, limit: int = 5) -> list[str]:
    return [h.path for h in rank_notes(store, provider, query, SearchSettings(), limit, 1)]


def chunk_rowids(store: Store) -> np.ndarray:
    keys, _, _ = store.chunk_layout()
    return keys


def tier_of(store: Store) -> AnnTier:
    tier = store.ann_tier()  # type: ignore[attr-defined]  # the SQLite backend's own
    assert tier is not None
    return tier


def ann_files(store_dir: Path) -> list[Path]:
    return sorted(store_dir.glob("matrix-*.ann"))


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory, use_provider) -> Path:
    root = tmp_path_factory.mktemp("ann-sample")
    vault = root / "vault"
    shutil.copytree(EXAMPLES / "vault", vault)
    run_index(vault, root / "index", use_provider, ANN_ON)
    return root / "index"


def test_past_the_threshold_search_gives_the_exact_top_results(sample: Path, use_provider) -> None:
    queries = [
        q.strip()
        for q in (EXAMPLES / "demo_queries.txt").read_text().splitlines()
        if q.strip()[:1] not in "#"
    ]
    assert queries
    with ann_store(sample, threshold=10**9) as exact, ann_store(sample) as approx:
        for query in queries:
            assert top_paths(approx, use_provider, query) == top_paths(exact, use_provider, query), query
            qvec = use_provider.embed([query])[0]
            a_keys, a_scores = approx.top_k(qvec, 10)
            e_keys, e_scores = exact.top_k(qvec, 10)
            assert set(a_keys.tolist()) == set(e_keys.tolist())
            assert np.allclose(np.sort(a_scores), np.sort(e_scores), atol=1e-6)  # re-scored exactly
        assert approx.ann_recall() == 1.0  # type: ignore[attr-defined]
        assert exact.ann_recall() is None  # type: ignore[attr-defined]
    assert len(ann_files(sample)) == 1  # built once, by the index run, and kept beside the store


def _notes(n: int) -> dict[str, str]:
    topics = ["sourdough bread baking", "marathon training plan", "kubernetes deploy rollback", "tax return"]
    return {
        f"Area {i % 4}/Note {i:02d}.md": f"# Note {i:02d}\n\nThis note is about {topics[i % 4]}, part {i}. "
        + f"It mentions item-{i:02d} and the topic {topics[i % 4]} again in other words.\n"
        for i in range(n)
    }


@pytest.fixture
def small(tmp_path: Path, use_provider) -> tuple[Path, Path]:
    vault = write_vault(tmp_path / "vault", _notes(24))
    run_index(vault, tmp_path / "index", use_provider, ANN_ON)
    return vault, tmp_path / "index"


def test_an_edit_a_delete_and_a_move_update_only_those_notes(small: tuple[Path, Path], use_provider) -> None:
    vault, store_dir = small
    with ann_store(store_dir) as store:
        before = tier_of(store)
        base_file, base_size = before.path, len(before.base)
        assert base_file is not None and base_file.exists()
    (vault / "Area 0/Note 00.md").write_text("# Note 00\n\nNow about growing chili peppers on a balcony.\n")
    (vault / "Area 1/Note 01.md").unlink()
    (vault / "Area 2/Note 02.md").rename(vault / "Moved note.md")
    run_index(vault, store_dir, use_provider, ANN_ON)
    with ann_store(store_dir) as store:
        tier = tier_of(store)
        # caught up from the file and the change log: the base graph is the same file, untouched
        assert tier.path == base_file and len(tier.base) == base_size
        assert len(tier.delta) == 2  # the edited note's chunk and the moved one's: nothing else
        assert np.array_equal(tier.keys(), chunk_rowids(store))
        assert not any(store.ann_problems())  # type: ignore[attr-defined]
        assert top_paths(store, use_provider, "growing chili peppers on a balcony")[0] == "Area 0/Note 00.md"
        for query in ("item-01 marathon training plan", "sourdough bread baking"):
            assert "Area 1/Note 01.md" not in top_paths(store, use_provider, query, limit=30)
        assert "Moved note.md" in top_paths(
            store, use_provider, "item-02 kubernetes deploy rollback", limit=3
        )


def test_a_file_of_another_store_or_a_newer_generation_is_never_taken(
    small: tuple[Path, Path], use_provider
) -> None:
    vault, store_dir = small
    with ann_store(store_dir) as store:
        keys = chunk_rowids(store)
        gen, store_id = store.generation, store.store_id
        expected = top_paths(store, use_provider, "sourdough bread baking")
    for p in ann_files(store_dir):
        p.unlink()
    rng = np.random.default_rng(0)
    wrong = rng.standard_normal((keys.size, 512)).astype(np.float32)
    wrong /= np.linalg.norm(wrong, axis=1, keepdims=True)
    impostor = AnnTier.build(512, [(keys, wrong)], gen)
    impostor.save(store_dir / f"matrix-{'0' * 16}-{gen}.ann")  # another store's, this generation
    shutil.copy(store_dir / f"matrix-{'0' * 16}-{gen}.ann", store_dir / f"matrix-{store_id}-{gen + 5}.ann")
    with ann_store(store_dir) as store:
        assert top_paths(store, use_provider, "sourdough bread baking") == expected
        assert store.ann_tier() is None  # type: ignore[attr-defined]  # neither file taken: exact scan
        store.refresh_ann(NoProgress())  # the writer's: built afresh and saved
        tier = tier_of(store)
        assert tier.path == store_dir / f"matrix-{store_id}-{gen}.ann"
        keys_now, stored = store.vectors_of(keys)  # type: ignore[attr-defined]
        assert np.abs(tier.vectors(keys_now) - stored).max() < 1e-2


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other vectors"])
def test_doctor_reports_a_damaged_or_mismatched_ann_file(
    small: tuple[Path, Path], use_provider, damage
) -> None:
    vault, store_dir = small
    with ann_store(store_dir) as store:
        tier_of(store)
        assert store.problems() == []
        keys, gen = chunk_rowids(store), store.generation
    (path,) = ann_files(store_dir)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(os.urandom(path.stat().st_size))
    else:
        wrong = np.random.default_rng(1).standard_normal((keys.size, 512)).astype(np.float32)
        path.unlink()
        AnnTier.build(512, [(keys, wrong / np.linalg.norm(wrong, axis=1, keepdims=True))], gen).save(path)
    with ann_store(store_dir) as store:
        found = store.problems()
        assert len(found) == 1 and path.name in found[0], found
    path.unlink()
    with ann_store(store_dir) as store:
        assert top_paths(store, use_provider, "item-03 tax return")[0] == "Area 3/Note 03.md"
        (missing,) = store.problems()  # searches scan exactly until the writer rebuilds the file
        assert "no ANN index" in missing
    run_index(vault, store_dir, use_provider, ANN_ON)
    with ann_store(store_dir) as store:
        assert store.problems() == []


def test_kill_9_mid_index_leaves_a_usable_ann_tier(tmp_path: Path, use_provider) -> None:
    vault = write_vault(tmp_path / "vault", _notes(120))
    home = tmp_path / "home"
    env = cli_env(home, VAULTLENS_INDEX__BATCH_FILES="4", VAULTLENS_SEARCH__ANN_THRESHOLD="1")
    subprocess.run(
        [str(VAULTLENS_BIN), "index", "--vault", str(vault)], env=env, check=True, capture_output=True
    )
    search = [str(VAULTLENS_BIN), "search", "sourdough", "--vault", str(vault), "--json"]
    subprocess.run(search, env=env, check=True, capture_output=True)
    (store_dir,) = {p.parent for p in home.rglob("index.sqlite")}
    assert ann_files(store_dir)
    for i in range(0, 120, 2):
        (vault / f"Area {i % 4}/Note {i:02d}.md").write_text(
            f"# Note {i:02d}\n\nRewritten text number {i}.\n"
        )
    proc = subprocess.Popen(
        [str(VAULTLENS_BIN), "index", "--vault", str(vault)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while True:  # kill once a few batches are committed and the run is still going
            try:
                with ann_store(store_dir) as store:
                    changed = store.changed_keys(store.ann_floor())  # type: ignore[attr-defined]
            except IndexNotFound:
                changed = np.zeros(0)
            if changed.size >= 8 or proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with ann_store(store_dir) as store:
        tier = tier_of(store)
        assert np.array_equal(tier.keys(), chunk_rowids(store))
        assert store.problems() == []
        assert top_paths(store, use_provider, "item-01 marathon training plan")[0] == "Area 1/Note 01.md"


def test_similar_and_duplicates_past_the_threshold_match_the_full_scan(tmp_path: Path, use_provider) -> None:
    from test_discover import VAULT
    from vaultlens.services.finding import discover
    from vaultlens.services.finding.duplicates import report as dups

    vault = write_vault(tmp_path / "vault", VAULT)
    shutil.copytree(EXAMPLES / "vault", vault / "sample")
    run_index(vault, tmp_path / "index", use_provider, ANN_ON)
    with ann_store(tmp_path / "index", threshold=10**9) as exact, ann_store(tmp_path / "index") as approx:
        assert exact.neighbours(chunk_rowids(exact), 5) is None
        src, dst = approx.neighbours(chunk_rowids(approx), 5)  # type: ignore[misc]
        assert src.size and not (src == dst).any()
        want = dups.duplicates(exact, 0.93, 100, 32).as_dict()
        assert want["pairs"]  # the vault has near-copies: the comparison is not vacuous
        assert dups.duplicates(approx, 0.93, 100, 32).as_dict() == want
        sample_notes = sorted(p.relative_to(vault).as_posix() for p in (vault / "sample").rglob("*.md"))
        for path in ["coffee.md", "release.md", *sample_notes[:3]]:
            assert (
                discover.similar(approx, path, 5, 32).as_dict()
                == discover.similar(exact, path, 5, 32).as_dict()
            )


def test_the_index_run_writes_the_tier_file_for_the_generation_it_committed(
    small: tuple[Path, Path], use_provider
) -> None:
    vault, store_dir = small
    with ann_store(store_dir) as store:
        gen, store_id = store.generation, store.store_id
    assert ann_files(store_dir) == [store_dir / f"matrix-{store_id}-{gen}.ann"]
    with ann_store(store_dir) as store:
        assert tier_of(store).path == ann_files(store_dir)[0]  # mapped, not built
        assert np.array_equal(tier_of(store).keys(), chunk_rowids(store))


def test_a_reader_without_a_tier_file_scans_exactly_and_leaves_the_build_to_the_writer(
    tmp_path: Path, use_provider
) -> None:
    vault = write_vault(tmp_path / "vault", _notes(24))
    run_index(vault, tmp_path / "index", use_provider)  # the writer below the threshold: no file
    assert ann_files(tmp_path / "index") == []
    with ann_store(tmp_path / "index", threshold=10**9) as exact, ann_store(tmp_path / "index") as reader:
        for query in ("sourdough bread baking", "item-07 marathon training plan", "tax return"):
            assert top_paths(reader, use_provider, query) == top_paths(exact, use_provider, query)
            qvec = use_provider.embed([query])[0]
            r_keys, r_scores = reader.top_k(qvec, 10)
            e_keys, e_scores = exact.top_k(qvec, 10)
            assert set(r_keys.tolist()) == set(e_keys.tolist())
            assert np.allclose(np.sort(r_scores), np.sort(e_scores))
        assert reader.ann_tier() is None  # type: ignore[attr-defined]
        assert reader.neighbours(chunk_rowids(reader), 5) is None  # callers compare exactly too
        assert any("no ANN index" in p for p in reader.problems())
    assert ann_files(tmp_path / "index") == []  # the reader never wrote one


def vector_files(store_dir: Path) -> list[Path]:
    return sorted(store_dir.glob("matrix-*.vecs.npy"))


T = TypeVar("T")


def sqlite_vector_reads(store: Store, call: Callable[[], T]) -> tuple[T, list[str]]:
    """``call()``'s result and the statements that read vectors from SQLite while it ran."""
    seen: list[str] = []
    with store.snapshot():  # type: ignore[attr-defined]  # the SQLite backend's own
        store.db.set_trace_callback(seen.append)  # type: ignore[attr-defined]
        try:
            out = call()
        finally:
            store.db.set_trace_callback(None)  # type: ignore[attr-defined]
    return out, [s for s in seen if "JOIN vectors" in s]


def test_the_re_score_reads_rows_of_the_vector_file_and_stays_exact_after_an_edit(
    small: tuple[Path, Path], use_provider
) -> None:
    vault, store_dir = small
    queries = ("sourdough bread baking", "item-07 marathon training plan", "growing chili peppers")
    with ann_store(store_dir) as store:
        gen, store_id = store.generation, store.store_id
        assert vector_files(store_dir) == [store_dir / f"matrix-{store_id}-{gen}.vecs.npy"]
        truth_keys, truth = store._read_matrix()  # type: ignore[attr-defined]
        (keys, vecs), reads = sqlite_vector_reads(store, lambda: store.vectors_of(truth_keys[::-1]))  # type: ignore[attr-defined]
        assert reads == []  # every row from the file
        assert np.array_equal(keys, truth_keys) and np.array_equal(vecs, truth)
    (vault / "Area 0/Note 00.md").write_text("# Note 00\n\nNow about growing chili peppers on a balcony.\n")
    run_index(vault, store_dir, use_provider, ANN_ON)
    with ann_store(store_dir) as store, ann_store(store_dir, threshold=10**9) as exact:
        assert store.generation > gen
        # the one-note edit is not in the file (written at ``gen``): its chunk comes from SQLite
        assert vector_files(store_dir) == [store_dir / f"matrix-{store_id}-{gen}.vecs.npy"]
        truth_keys, truth = store._read_matrix()  # type: ignore[attr-defined]
        (keys, vecs), reads = sqlite_vector_reads(store, lambda: store.vectors_of(truth_keys))  # type: ignore[attr-defined]
        assert len(reads) == 1 and np.array_equal(keys, truth_keys) and np.array_equal(vecs, truth)
        for query in queries:
            assert top_paths(store, use_provider, query, 10) == top_paths(exact, use_provider, query, 10)
            qvec = use_provider.embed([query])[0]
            a_keys, a_scores = store.top_k(qvec, 10)
            e_keys, e_scores = exact.top_k(qvec, 10)
            assert np.array_equal(a_keys, e_keys[np.argsort(-e_scores, kind="stable")])
        assert top_paths(store, use_provider, "growing chili peppers on a balcony")[0] == "Area 0/Note 00.md"
        assert store.problems() == []
    (vec_file,) = vector_files(store_dir)
    vec_file.write_bytes(vec_file.read_bytes()[:300])  # truncated by a crash or a full disk
    with ann_store(store_dir) as store:
        (keys, vecs), reads = sqlite_vector_reads(store, lambda: store.vectors_of(truth_keys))  # type: ignore[attr-defined]
        assert reads and np.array_equal(keys, truth_keys) and np.array_equal(vecs, truth)  # SQLite's
        (found,) = store.problems()
        assert "cannot be read" in found and vec_file.name in found
    vec_file.unlink()
    with ann_store(store_dir) as store:
        assert np.array_equal(store.vectors_of(truth_keys)[1], truth)  # type: ignore[attr-defined]
        assert store.problems() == []  # only slower until the writer writes it again
    run_index(vault, store_dir, use_provider, ANN_ON)
    with ann_store(store_dir) as store:
        (vec_file,) = vector_files(store_dir)  # written again, for the generation it committed
        assert vec_file.name == f"matrix-{store_id}-{store.generation}.vecs.npy"
        np.save(vec_file.with_suffix(""), np.load(vec_file)[::-1].copy())  # np.save adds .npy again
        (found,) = store.problems()
        assert "differs from the stored vectors" in found


def test_an_open_store_keeps_its_vector_file_across_commits_and_reads_each_edit_from_sqlite(
    small: tuple[Path, Path], use_provider
) -> None:
    """A server's store opens the vector file once (opening checks every key); each commit after it
    adds only its own changed keys, which come from SQLite, so rows stay exact."""
    vault, store_dir = small
    with ann_store(store_dir) as store:
        opened: list[int] = []
        real_open = store._open_vector_file  # type: ignore[attr-defined]

        def counted(gen: int) -> VectorFile | None:
            opened.append(gen)
            return real_open(gen)  # type: ignore[no-any-return]

        store._open_vector_file = counted  # type: ignore[attr-defined]
        keys = store._read_matrix()[0]  # type: ignore[attr-defined]
        assert sqlite_vector_reads(store, lambda: store.vectors_of(keys))[1] == []  # type: ignore[attr-defined]
        for n, note in enumerate(("Area 0/Note 00.md", "Area 1/Note 01.md")):
            (vault / note).write_text(f"# Edited {n}\n\nNow about growing chili peppers, take {n}.\n")
            run_index(vault, store_dir, use_provider, ANN_ON)
            now_keys, truth = store._read_matrix()  # type: ignore[attr-defined]
            (got_keys, vecs), reads = sqlite_vector_reads(store, partial(store.vectors_of, now_keys))  # type: ignore[attr-defined]
            assert np.array_equal(got_keys, now_keys) and np.array_equal(vecs, truth)
            edited = {int(k) for k in now_keys} - {int(k) for k in keys}  # the rowids the edits gave
            assert len(edited) == n + 1 and len(reads) == 1 and all(str(k) in reads[0] for k in edited)
        assert len(opened) == 1  # one file, opened once, for three generations


def test_the_quality_tier_s_runtime_loads_after_the_graph_without_a_crash(tmp_path: Path) -> None:
    """onnxruntime imported after usearch segfaulted (rc 139) every English vault past the ANN
    threshold, whose `auto` tier loads onnxruntime after the graph; the tier module now loads first."""
    pytest.importorskip("onnxruntime", reason="the quality extra is not installed")
    script = "from vaultlens.index.sqlite import ann; ann._graph(8); import onnxruntime; print('alive')"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=cli_env(tmp_path)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "alive"


def test_the_writer_searches_its_saved_graph_as_wide_as_a_reader_does(tmp_path: Path) -> None:
    """After `save` the writer maps the file it wrote; it must search it with the same beam as a process
    that opens the file (usearch does not keep the beam in the file: the writer searched with its
    default of 64, recall@10 0.938 against 0.975 at 1,000,000 chunks)."""
    from vaultlens.index.sqlite import ann

    rng = np.random.default_rng(5)
    centres = rng.normal(size=(40, 32))
    vecs = (centres[rng.integers(0, 40, 6000)] + 0.6 * rng.normal(size=(6000, 32))).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    keys = np.arange(1, 6001, dtype=np.int64)
    writer = AnnTier.build(32, [(keys, vecs)], generation=1)
    writer.save(tmp_path / "g.ann")
    reader = AnnTier.open(tmp_path / "g.ann", 32, generation=1)
    assert reader is not None and len(writer) == len(reader) == 6000
    assert writer.base.expansion_search == reader.base.expansion_search == ann.EXPANSION_SEARCH
    queries = vecs[rng.integers(0, 6000, 50)] + 0.05 * rng.normal(size=(50, 32)).astype(np.float32)
    assert all(np.array_equal(writer.search(q, 10), reader.search(q, 10)) for q in queries)
