"""The lexical stage's chunk rows (and, on a database server, its note rows) on workers beside the
dense stage (services/finding/beside.py): the same hits as on the search's own thread, and never the rows of
a generation other than the search's."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from vaultlens.config.settings import SearchSettings
from vaultlens.index.lexical import query_terms
from vaultlens.services.finding import beside as lb
from vaultlens.services.finding.search import rank_notes
from vl_support import bilingual_vault, opened_store, run_index, write_vault

QUERIES = [  # each shares words with a note of its own language, so every worker answer has full-text hits
    "how long may a CDN keep fingerprinted static assets",
    "как часто подкармливать ржаную закваску",
    "saving money each month and building an emergency fund",
]


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any]]]:
    """Every index size goes to the worker; each worker answer is recorded with the thread that gave it
    (None: it saw another generation than the search's)."""
    answered: list[tuple[str, Any]] = []
    original = lb._in_generation

    def recorded(*args: Any) -> Any:
        answer = original(*args)
        answered.append((threading.current_thread().name, answer and answer[0]))
        return answer

    monkeypatch.setattr(lb, "BESIDE_FROM_CHUNKS", 0)
    monkeypatch.setattr(lb, "_in_generation", recorded)
    yield answered


def test_searches_with_the_lexical_stage_beside_return_the_same_hits(
    tmp_path: Path, use_provider, backend: str, workers: list[tuple[str, Any]]
) -> None:
    vault = bilingual_vault(tmp_path / "vault")
    run_index(vault, tmp_path / "index", use_provider, backend=backend)
    with opened_store(tmp_path / "index", backend) as store:
        beside = [rank_notes(store, use_provider, q, SearchSettings(), 10, 3) for q in QUERIES]
        # where reads run in a database server the note rows go beside too (on SQLite they stay)
        per_search = 2 if store.reads_in_server else 1
        assert len(workers) == per_search * len(QUERIES)
        assert all(name.startswith("vaultlens-beside") and found.scores for name, found in workers)
        lb.BESIDE_FROM_CHUNKS = 10**12  # the search's own thread (monkeypatch restores it)
        serial = [rank_notes(store, use_provider, q, SearchSettings(), 10, 3) for q in QUERIES]
    assert len(workers) == per_search * len(QUERIES), "a small index went to a worker"
    assert beside == serial and all(beside)


def test_a_commit_between_the_two_snapshots_leaves_the_worker_s_rows_out(
    tmp_path: Path, use_provider, backend: str, workers: list[tuple[str, Any]]
) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "# Pelicans\n\nThe pelican fishes in the bay.\n"})
    run_index(vault, tmp_path / "index", use_provider, backend=backend)
    terms = query_terms("pelican")
    with opened_store(tmp_path / "index", backend) as store:
        with store.snapshot() as generation:
            before = store.lexical(terms, 10, 10)
            write_vault(vault, {"b.md": "# More pelicans\n\nA pelican, a pelican and a pelican.\n"})
            run_index(vault, tmp_path / "index", use_provider, backend=backend)  # another writer commits
            hits = lb.beside(store, generation, partial(store.lexical, terms, 10, 10))()
        after = store.lexical(terms, 10, 10)
    assert workers == [(workers[0][0], None)], "the worker answered from another generation"
    assert hits == before and set(before.notes) == {"a.md"}
    assert set(after.notes) == {"a.md", "b.md"}  # the commit is real: a later snapshot sees it


def test_a_store_error_in_the_worker_reaches_the_search(
    tmp_path: Path, use_provider, workers: list[tuple[str, Any]]
) -> None:
    vault = bilingual_vault(tmp_path / "vault")
    run_index(vault, tmp_path / "index", use_provider)

    class Broken(RuntimeError):
        pass

    threads: list[str] = []

    def broken(*_: object) -> dict[int, float]:
        threads.append(threading.current_thread().name)
        raise Broken("the full-text index cannot be read")

    with opened_store(tmp_path / "index") as store:
        store.lexical_chunks = broken  # type: ignore[assignment]
        with pytest.raises(Broken):
            rank_notes(store, use_provider, QUERIES[0], SearchSettings(), 10, 3)
    assert len(threads) == 1 and threads[0].startswith("vaultlens-beside")
