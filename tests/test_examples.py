"""The sample vault in examples/: the demo queries give the first results EXPECTED.md lists, ignore
rules keep the excluded notes out, and indexing and searching it leaves it byte-for-byte unchanged."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

import vaultlens as services
from vaultlens.services.app import App
from vaultlens.services.finding.search import NoteHit
from vl_support import REPO, file_records, snapshot

EXAMPLES = REPO / "examples"
VAULT = EXAMPLES / "vault"
EXPECTED = EXAMPLES / "EXPECTED.md"


@dataclass(frozen=True)
class Expectation:
    query: str
    first: str
    section: str | None
    absent: tuple[str, ...]


def expectations() -> list[Expectation]:
    """Rows of the `| # | Query | Kind | Rank 1 | Must not appear |` table in EXPECTED.md."""
    if not EXPECTED.is_file():
        return []
    rows = []
    for line in EXPECTED.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].isdigit():
            continue
        first = re.findall(r"`([^`]+)`", cells[3])
        section = re.search(r"«([^»]+)»", cells[3])
        rows.append(
            Expectation(
                query=cells[1],
                first=first[0],
                section=section.group(1) if section else None,
                absent=tuple(re.findall(r"`([^`]+)`", cells[4])),
            )
        )
    return rows


def fact(name: str) -> str:
    for line in EXPECTED.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] == name:
            return cells[1]
    raise AssertionError(f"EXPECTED.md has no fact {name!r}")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, use_provider):
    """The sample vault indexed once (in a private home), with a snapshot taken before."""
    if not EXPECTED.is_file() or not VAULT.is_dir():
        pytest.skip("examples/vault or examples/EXPECTED.md is not there yet")
    before = snapshot(VAULT)
    home = tmp_path_factory.mktemp("examples-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(home))
        app = App.open(VAULT)
        stats = services.index(app)
        app.close()
    return home, stats, before


@pytest.fixture
def indexed(built, monkeypatch: pytest.MonkeyPatch):
    home, stats, before = built
    monkeypatch.setenv("VAULTLENS_HOME", str(home))
    app = App.open(VAULT)
    yield app, stats, before
    app.close()


def test_expected_md_has_the_demo_queries() -> None:
    if not EXPECTED.is_file():
        pytest.skip("examples/EXPECTED.md is not there yet")
    rows = expectations()
    assert rows, "EXPECTED.md has no result table"
    demo = [
        q.strip()
        for q in (EXAMPLES / "demo_queries.txt").read_text(encoding="utf-8").splitlines()
        if q.strip()
    ]
    assert [r.query for r in rows] == demo
    for r in rows:
        assert (VAULT / r.first).is_file(), r.first
        for p in r.absent:
            assert (VAULT / p).is_file(), p


@pytest.mark.parametrize("row", range(len(expectations()) or 1))
def test_demo_query_ranks_the_expected_note_first(indexed, row: int) -> None:
    app, _, _ = indexed
    rows = expectations()
    if row >= len(rows):
        pytest.skip("EXPECTED.md lists no queries")
    exp = rows[row]
    hits: list[NoteHit] = services.search(app, exp.query)
    paths = [h.path for h in hits]
    assert paths[0] == exp.first, paths
    if exp.section:  # the named section is among the note's strongest sections shown
        assert any(exp.section in sec.heading_path for sec in hits[0].sections), hits[0].sections
    for p in exp.absent:
        assert p not in paths


def test_ignored_notes_are_reported_and_the_rest_indexed(indexed) -> None:
    app, stats, _ = indexed
    on_disk = sorted(p.relative_to(VAULT).as_posix() for p in VAULT.rglob("*.md"))
    assert len(on_disk) == int(fact("Markdown files on disk"))
    excluded = {p for r in expectations() for p in r.absent}
    info = services.status(app).as_dict()
    reported = {p["path"]: p["reason"] for p in info["problems"]}
    for p in excluded:
        assert (
            "userIgnoreFilters" in reported.get(p, "")
            or "vaultlensignore" in reported.get(p, "")
            or any(p.startswith(folder) and "userIgnoreFilters" in why for folder, why in reported.items())
        ), (p, reported)
    assert stats.files_scanned == len(on_disk) - len(excluded)
    assert services.doctor(app).healthy
    records = file_records(app)
    for p in on_disk:
        if p in excluded:
            assert p not in records or records[p].status == "skipped"
        else:
            assert records[p].status in ("indexed", "skipped"), p
            if (VAULT / p).stat().st_size:
                assert records[p].status == "indexed" and records[p].n_chunks > 0, p


def test_the_sample_vault_is_left_unchanged(indexed) -> None:
    app, _, before = indexed
    services.search(app, "кэш")
    services.status(app).as_dict()
    services.doctor(app)
    assert snapshot(VAULT) == before


def test_identifier_query_opens_the_section_that_holds_it(indexed) -> None:
    app, _, _ = indexed
    hit = services.search(app, "retry_serializable", limit=1)[0]
    assert hit.path == "tech/databases/Транзакции и изоляция.md"
    first = hit.sections[0]
    lines = (VAULT / hit.path).read_text(encoding="utf-8").splitlines()[first.start_line - 1 : first.end_line]
    assert any("retry_serializable" in line for line in lines)  # the lines shown, not just the note, hold it
