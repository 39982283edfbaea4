"""bm25_top.best_rows: FTS5's own best rows, without scoring the rows that hold only common terms."""

from __future__ import annotations

import math
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from vaultlens.index.bm25_top import any_of, best_rows


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


def runner(db: sqlite3.Connection, log: list[str]) -> Any:
    def run(match: str, limit: int) -> list[tuple[Any, float]]:
        log.append(match)
        sql = "SELECT rowid, -bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?"
        return [(r, float(s)) for r, s in db.execute(sql, (match, limit))]

    return run


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
def test_best_rows_are_the_plain_querys(fts: sqlite3.Connection, terms: list[str], limit: int) -> None:
    idf = idf_of(fts, terms)
    plain = runner(fts, [])(any_of(list(idf)), limit)
    pruned = best_rows(runner(fts, []), idf, limit)
    assert [s for _, s in pruned] == pytest.approx([s for _, s in plain], rel=1e-12)
    mine, fts5 = dict(pruned), dict(plain)
    assert all(mine[r] == pytest.approx(fts5[r], rel=1e-12) for r in mine.keys() & fts5.keys())
    # rows tied on the last score may be cut differently; any other row is in both
    assert all(mine[r] == pytest.approx(plain[-1][1], rel=1e-12) for r in mine.keys() - fts5.keys())


def test_the_common_word_is_only_sought_beside_the_rare_ones(fts: sqlite3.Connection) -> None:
    """No query of the search reads the common word's rows on their own: it is only ANDed with the rare
    words (FTS5 then seeks in its list), so its thousands of rows are never scored."""
    idf = idf_of(fts, ["w0", "w150", "w151"])
    common = fts.execute("SELECT COUNT(*) FROM t WHERE t MATCH 'w0'").fetchone()[0]
    assert common > 1000
    log: list[str] = []
    best_rows(runner(fts, log), idf, 5)
    assert log[-1] == '("w150" OR "w151") AND ("w0")' or log[-1] == '("w151" OR "w150") AND ("w0")'
    assert all(m.count('"w0"') == 0 or " AND " in m for m in log)


def test_nothing_to_find(fts: sqlite3.Connection) -> None:
    assert best_rows(runner(fts, []), {}, 10) == []
    assert best_rows(runner(fts, []), idf_of(fts, ["w0"]), 0) == []


def test_the_store_prunes_to_the_same_hits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLiteStore.lexical with pruning on from the first row gives the chunks and notes, with their
    scores, of the plain FTS5 queries it runs below _PRUNE_FROM_ROWS."""
    from test_store_contract import note_update
    from vaultlens.index import sqlite_store
    from vaultlens.index.lexical import query_terms

    rng = random.Random(5)
    words = [f"word{i}" for i in range(150)]
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(words))]
    store = sqlite_store.SQLiteStore(tmp_path / "index")
    updates, vectors = [], {}
    for n in range(400):
        sections = [((f"N{n}",), " ".join(rng.choices(words, weights, k=20))) for _ in range(3)]
        update, vecs = note_update(f"n{n}.md", sections)
        updates.append(update)
        vectors.update(vecs)
    store.apply(updates=updates, vectors=vectors)
    queries = ["word0 word90 word91", "word1 word3 word140", "word2 word5", "word149", "word0 nothere"]
    plain = [store.lexical(query_terms(q), 30, 60) for q in queries]
    monkeypatch.setattr(sqlite_store, "_PRUNE_FROM_ROWS", 0)
    store._df_cache.clear()
    pruned = [store.lexical(query_terms(q), 30, 60) for q in queries]
    for a, b in zip(plain, pruned, strict=True):
        assert a.chunks.keys() == b.chunks.keys() and a.notes.keys() == b.notes.keys()
        assert list(b.chunks.values()) == pytest.approx(list(a.chunks.values()), rel=1e-12)
        assert list(b.notes.values()) == pytest.approx(list(a.notes.values()), rel=1e-12)
    assert plain[0].chunks  # the queries do find rows
    store.close()
