"""bm25_top.best_rows: FTS5's own best rows, without scoring the rows that hold only common terms."""

from __future__ import annotations

import math
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from vaultlens.index.bm25_top import Query, best_rows
from vaultlens.index.sqlite import fulltext as sqlite_fulltext
from vaultlens.index.sqlite.fulltext import fts5_query


@pytest.fixture(scope="module")
def fts(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    """3,000 rows over a Zipf-like vocabulary: a few words in most rows, most words in few."""
    db = sqlite3.connect(Path(tmp_path_factory.mktemp("bm25")) / "fts.sqlite")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(terms)")
    rng = random.Random(11)
    words = [f"w{i}" for i in range(400)]
    weights = [1.0 / (i + 1) for i in range(len(words))]
    for _ in range(3000):
        db.execute("INSERT INTO t(terms) VALUES (?)", (" ".join(rng.choices(words, weights, k=25)),))
    db.commit()
    return db


def idf_of(db: sqlite3.Connection, terms: list[str]) -> dict[str, float]:
    n = db.execute("SELECT COUNT(*) FROM t").fetchone()[0]
    out = {}
    for term in terms:
        df = db.execute("SELECT COUNT(*) FROM t WHERE t MATCH ?", (f'"{term}"',)).fetchone()[0]
        if df:
            out[term] = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
    return out


def runner(db: sqlite3.Connection, log: list[tuple[str, str]], idf: dict[str, float]) -> Query:
    """The store's query over table t, logging each (statement, FTS5 expression) it runs."""

    def execute(sql: str, params: tuple[Any, ...]) -> list[Any]:
        if " MATCH " in sql:
            log.append((sql, params[0]))
        return db.execute(sql, params).fetchall()

    return fts5_query(execute, "t", idf)


QUERIES = [
    ["w0", "w150", "w151"],  # the most common word beside two rare ones
    ["w3", "w7", "w120"],
    ["w1", "w2", "w300", "w301", "w302"],
    ["w0", "w1"],  # common words only
    ["w250"],
    ["w5", "w390"],
]


@pytest.mark.parametrize("terms", QUERIES)
@pytest.mark.parametrize("limit", [5, 50, 400])
@pytest.mark.parametrize("head", [1, 60, 2000])  # the probe's head: too short, partly long enough, every row
def test_best_rows_are_the_plain_querys(
    fts: sqlite3.Connection, terms: list[str], limit: int, head: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_fulltext, "PROBE_HEAD", head)
    idf = idf_of(fts, terms)
    plain = runner(fts, [], idf)(list(idf), [], limit)
    pruned = best_rows(runner(fts, [], idf), idf, limit)
    assert [s for _, s in pruned] == pytest.approx([s for _, s in plain], rel=1e-12)
    mine, fts5 = dict(pruned), dict(plain)
    assert all(mine[r] == pytest.approx(fts5[r], rel=1e-12) for r in mine.keys() & fts5.keys())
    # rows tied on the last score may be cut differently; any other row is in both
    assert all(mine[r] == pytest.approx(plain[-1][1], rel=1e-12) for r in mine.keys() - fts5.keys())


def test_the_common_word_is_never_scored_by_fts5(fts: sqlite3.Connection) -> None:
    """No bm25() query of the search holds the common word (FTS5 would count and score its thousands of
    rows): it is only looked up AND the rare words, and its share added to their rows here."""
    idf = idf_of(fts, ["w0", "w150", "w151"])
    common = fts.execute("SELECT COUNT(*) FROM t WHERE t MATCH 'w0'").fetchone()[0]
    assert common > 1000
    log: list[tuple[str, str]] = []
    best_rows(runner(fts, log, idf), idf, 5)
    with_common = [(sql, m) for sql, m in log if '"w0"' in m]
    assert with_common and all("bm25" not in sql and ") AND (" in m for sql, m in with_common)


def test_nothing_to_find(fts: sqlite3.Connection) -> None:
    assert best_rows(runner(fts, [], {}), {}, 10) == []
    idf = idf_of(fts, ["w0"])
    assert best_rows(runner(fts, [], idf), idf, 0) == []


@pytest.mark.parametrize("terms", QUERIES)
def test_the_probes_rows_are_scored_by_fts5_once(fts: sqlite3.Connection, terms: list[str]) -> None:
    """The pruned query over the probe's terms scores the rows the probe fetched (PROBE_HEAD of them,
    here every one) instead of asking FTS5's bm25() for them again."""
    idf = idf_of(fts, terms)
    log: list[tuple[str, str]] = []
    best_rows(runner(fts, log, idf), idf, 5)
    scored = [m for sql, m in log if "bm25" in sql]
    assert scored and len(scored) == len(set(scored))
