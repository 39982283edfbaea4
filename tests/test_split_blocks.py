"""Tables, code blocks and front matter larger than max_chars are split along their structure
(issue 9), so every part of them is embedded and a row deep inside a long table can be found.

Search runs through the real CLI with the deterministic hashing provider
(``--set embedding.provider=fake``); what reaches the model is recorded with the real indexer.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from chunk_contract import chunk_invariant_errors
from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.embedding.local import MAX_CHARS
from vaultlens.index.sqlite.schema import DB_NAME
from vaultlens.index.sqlite.store import SQLiteStore
from vaultlens.testing import HashingEmbeddingProvider
from vaultlens.vault.parse import parse_note
from vl_support import RecordingProvider, run_cli, run_index, write_vault

FAKE = ["--set", "embedding.provider=fake"]
HEADER = "| part | supplier | material | weight |\n|------|----------|----------|--------|"
DEEP_ROW = 157  # of 200: far past the first 2,400 characters of the table
NEEDLE = "quokka saffron lighthouse"


def inventory_table(rows: int = 200) -> str:
    lines = [HEADER]
    for i in range(rows):
        material = NEEDLE if i == DEEP_ROW else f"steel grade {i % 7}"
        lines.append(f"| P-{i:04d} | Northwind depot {i % 13} | {material} | {i * 3} kg |")
    return "\n".join(lines)


def long_listing(lines: int = 300) -> str:
    body = []
    for i in range(lines):
        if i % 10 == 9:
            body.append("")
        elif i == 233:
            body.append("    marmot_velocity = calibrate_gyroscope(zenith)  # the one odd line")
        else:
            body.append(f"    total_{i} = accumulate(ledger[{i}], window)")
    return "```python\n" + "\n".join(body) + "\n```"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(
        tmp_path / "v",
        {
            "Inventory.md": f"# Inventory\n\nEvery part we stock.\n\n{inventory_table()}\n",
            "Listing.md": f"# Listing\n\nThe batch job.\n\n{long_listing()}\n",
            "Garden.md": "# Garden\n\nTomatoes need sun, water at the roots and a stake.\n",
            "Bread.md": "# Bread\n\nRye sourdough rises overnight in a warm kitchen.\n",
        },
    )


def search(vault: Path, query: str, *extra: str) -> list[dict[str, object]]:
    result = run_cli(["search", query, "--vault", str(vault), "--json", *FAKE, *extra])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert isinstance(hits, list)
    return hits


def line_no(vault: Path, rel: str, needle: str) -> int:
    """1-based line of the first line of ``rel`` that contains ``needle``."""
    lines = (vault / rel).read_text(encoding="utf-8").split("\n")
    return next(i + 1 for i, line in enumerate(lines) if needle in line)


@pytest.mark.parametrize(
    ("rel", "query", "needle"),
    [
        ("Inventory.md", NEEDLE, NEEDLE),
        ("Listing.md", "marmot velocity calibrate gyroscope", "marmot_velocity"),
    ],
    ids=["table-row", "code-line"],
)
def test_search_finds_a_line_deep_inside_a_long_block(vault: Path, rel: str, query: str, needle: str) -> None:
    result = run_cli(["index", "--vault", str(vault), *FAKE])
    assert result.exit_code == 0, result.output
    hits = search(vault, query)
    assert hits and hits[0]["path"] == rel
    sections = hits[0]["sections"]
    assert isinstance(sections, list)
    best = sections[0]
    line = line_no(vault, rel, needle)
    assert best["start_line"] <= line <= best["end_line"]
    assert best["end_line"] - best["start_line"] < 60  # a part of the block, not all of it


def test_every_part_of_a_long_table_reaches_the_model_whole_with_its_header(
    vault: Path, tmp_path: Path
) -> None:
    rec = RecordingProvider(HashingEmbeddingProvider())
    run_index(vault, tmp_path / "store", rec)
    texts = rec.texts
    assert texts and all(len(t) <= MAX_CHARS for t in texts)  # nothing is cut by the local model
    table = [t for t in texts if "| P-" in t]
    assert len(table) >= 5
    assert all(HEADER in t for t in table)
    holding = [t for t in table if NEEDLE in t]
    assert len(holding) == 1  # the row is in exactly one part
    rows = [line for t in table for line in t.split("\n") if line.startswith("| P-")]
    assert sorted(rows) == sorted(inventory_table().split("\n")[2:])  # every row, once
    code = [t for t in texts if "accumulate(" in t]
    assert len(code) >= 5 and all("```python" in t for t in code)


def _random_note(rng: random.Random) -> str:
    words = ["alpha", "beta", "gamma", "кэш", "сервер", "数据", "🙂", "x"]

    def line(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    parts = []
    if rng.random() < 0.5:
        fm = ["---"]
        for i in range(rng.randint(1, 50)):
            fm.append(f"k{i}: {line(rng.choice([1, 5, 40, 300]))}")
            if rng.random() < 0.3:
                fm += [f"  - {line(rng.randint(1, 30))}" for _ in range(rng.randint(1, 30))]
        parts.append("\n".join([*fm, "---"]))
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.5:
            parts.append("#" * rng.randint(1, 3) + " " + line(3))
        kind = rng.random()
        if kind < 0.35:
            rows = [
                f"| {line(2)} | {line(rng.choice([1, 3, 10, 80, 400]))} |" for _ in range(rng.randint(1, 90))
            ]
            parts.append("| a | b |\n|---|---|\n" + "\n".join(rows))
        elif kind < 0.7:
            fence = rng.choice(["```py", "~~~", "````"])
            body = [
                "" if rng.random() < 0.1 else "  " + line(rng.choice([0, 2, 8, 30, 400])) for _ in range(90)
            ]
            parts.append(f"{fence}\n" + "\n".join(body) + "\n" + fence.rstrip("py"))
        else:
            parts.append(line(rng.choice([5, 50, 400])))
    return "\n\n".join(parts) + "\n"


@pytest.mark.parametrize("seed", range(30))
def test_random_big_blocks_keep_the_chunk_contract(seed: int) -> None:
    rng = random.Random(seed)
    text = _random_note(rng)
    note = parse_note(text, "n.md")
    for target, limit, overlap in [(200, 300, 50), (400, 600, 80), (1200, 1800, 200), (500, 500, 0)]:
        chunks = MarkdownChunker(target, limit, overlap).chunk(note, "n.md")
        assert chunk_invariant_errors(note, chunks, limit) == [], (target, limit, overlap)
        assert MarkdownChunker(target, limit, overlap).chunk(parse_note(text, "n.md"), "n.md") == chunks


def test_an_index_from_before_contexts_were_stored_gets_them_without_embedding(
    vault: Path, tmp_path: Path
) -> None:
    """SQLite-specific: an SQLite index of schema 4, migrated."""
    provider = HashingEmbeddingProvider()
    store_dir = tmp_path / "index"
    run_index(vault, store_dir, provider)
    con = sqlite3.connect(store_dir / DB_NAME)  # turn it back into a schema-4 index (no contexts)
    con.execute("ALTER TABLE chunks DROP COLUMN context")
    con.execute("DROP TABLE tier_vectors")
    con.execute("ALTER TABLE chunks DROP COLUMN page")  # added by the migration to schema 9
    con.execute("ALTER TABLE chunks DROP COLUMN card")  # likewise
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    recording = RecordingProvider(provider)
    stats = run_index(vault, store_dir, recording)
    assert stats.chunks_embedded == 0 and recording.calls == []  # re-chunked, nothing re-embedded
    store = SQLiteStore(store_dir)
    try:
        keys, _ = store.matrix()
        parts = [c for c in store.chunks(keys.tolist()).values() if c.path == "Inventory.md" and c.context]
    finally:
        store.close()
    assert parts and all(c.context.startswith(HEADER) for c in parts)
