"""Search over a small bilingual vault with the real model: cross-language paraphrase, exact
identifiers, grouping per note, line ranges that point at the text, query limits."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import vaultlens
from vaultlens.config.settings import SearchSettings
from vaultlens.embedding.base import EmbeddingProvider
from vaultlens.errors import VaultlensError
from vaultlens.index.store import Store
from vaultlens.services.finding.search import NOTE_TAU, NoteHit, chunk_penalties, note_penalties, rank_notes
from vaultlens.services.finding.section import plain_text
from vl_support import (
    RecordingProvider,
    backend_args,
    bilingual_vault,
    open_app,
    opened_store,
    run_cli,
    run_index,
    write_vault,
)

LONG_NOTE = "Garden/Tomatoes.md"


def _tomato_note() -> str:
    intro = "Notes from five summers of growing tomatoes on a small balcony in pots and grow bags. " * 5
    parts = ["# Growing tomatoes", "", intro.strip(), ""]
    topics = [
        (
            "Seedlings",
            "Tomato seedlings need sixteen hours of light and a warm windowsill before transplanting.",
        ),
        (
            "Watering",
            "Water tomato plants deeply at the base twice a week; wet leaves invite blight on tomatoes.",
        ),
        ("Pruning", "Pinch the tomato suckers that grow between the stem and a branch to keep one leader."),
        ("Harvest", "Pick tomatoes when they blush and let them ripen indoors, away from direct sunlight."),
        (
            "Varieties",
            "Cherry tomatoes crack less than beefsteak tomatoes and ripen weeks earlier in the season.",
        ),
    ]
    for title, sentence in topics:
        parts += [f"## {title}", "", " ".join([sentence] * 5), ""]  # > 400 chars: a chunk each
    return "\n".join(parts)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, use_provider, backend: str) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("search")
    vault = bilingual_vault(root / "vault")
    write_vault(vault, {LONG_NOTE: _tomato_note()})
    run_index(vault, root / "index", use_provider, backend=backend)
    return vault, root / "index"


@pytest.fixture
def store(built: tuple[Path, Path], backend: str) -> Iterator[Store]:
    with opened_store(built[1], backend) as s:
        yield s


def search(
    store: Store,
    provider: EmbeddingProvider,
    query: str,
    limit: int = 10,
    sections: int = 3,
    max_query_chars: int = 2000,
) -> list[NoteHit]:
    return rank_notes(
        store, provider, query, SearchSettings(max_query_chars=max_query_chars), limit, sections
    )


def paths(hits: list[NoteHit]) -> list[str]:
    return [h.path for h in hits]


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("how do I keep my bread starter alive and how often should I feed it", "Кулинария/Закваска.md"),
        ("how often should I water indoor plants and when to repot them", "Дом/Комнатные растения.md"),
        ("saving money each month and building an emergency fund", "Финансы/Личный бюджет.md"),
        ("как подготовиться к марафону", "Health/Marathon training.md"),
    ],
)
def test_paraphrase_across_languages_finds_the_note(
    store: Store, use_provider, query: str, note: str
) -> None:
    hits = search(store, use_provider, query)
    assert note in paths(hits)[:3], paths(hits)


def test_exact_rare_identifier_ranks_its_note_first(store: Store, use_provider) -> None:
    hits = search(store, use_provider, "kx_rollout_guard_7731")
    assert paths(hits)[0] == "Tech/Deploy runbook.md"
    # inside the note, the section that holds the identifier is shown first
    first = hits[0].sections[0].snippet
    assert "kx_rollout_guard_7731" in first or "KX_ROLLOUT_GUARD" in first


def test_results_are_grouped_per_note_with_bounded_sections(store: Store, use_provider) -> None:
    hits = search(store, use_provider, "when should I water and prune tomato plants", limit=4, sections=2)
    assert paths(hits)[0] == LONG_NOTE
    assert len(hits) <= 4
    assert len(set(paths(hits))) == len(hits)
    assert len(hits[0].sections) == 2  # the note has five sections; only the best two are shown
    for hit in hits:
        assert 1 <= len(hit.sections) <= 2
        scores = [s.score for s in hit.sections]
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]  # every hit has a score
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    more = search(store, use_provider, "when should I water and prune tomato plants", limit=10, sections=6)
    assert len(more[0].sections) == 6


def test_line_ranges_point_at_the_matching_text(built: tuple[Path, Path], store: Store, use_provider) -> None:
    vault, _ = built
    hits = search(store, use_provider, "Pinch the tomato suckers between the stem and a branch", sections=5)
    assert hits[0].path == LONG_NOTE
    best = hits[0].sections[0]
    assert best.heading_path == ("Growing tomatoes", "Pruning")
    for hit in hits[:3]:
        lines = (vault / hit.path).read_text(encoding="utf-8").split("\n")
        keys = store.note_chunk_keys([hit.path])[hit.path]  # a backend's own keys, whatever they are
        texts = {r.id: r.text for r in store.chunks(keys).values()}
        for sec in hit.sections:
            assert 1 <= sec.start_line <= sec.end_line <= len(lines)
            shown = "\n".join(lines[sec.start_line - 1 : sec.end_line])
            assert shown == texts[sec.chunk_id]  # 1-based, inclusive, exactly the chunk
            assert " ".join(plain_text(shown).split()).startswith(sec.snippet.rstrip("…").rstrip())
    lines = (vault / LONG_NOTE).read_text(encoding="utf-8").split("\n")
    assert best.start_line == lines.index("## Pruning") + 1
    assert "Pinch the tomato suckers" in lines[best.end_line - 1]


def test_a_very_long_query_is_capped_not_rejected(store: Store, use_provider) -> None:
    rec = RecordingProvider(use_provider)
    query = "  " + "закваска и хлеб 🍞 " * 300  # ~5,700 code points, the emoji is one code point
    hits = search(store, rec, query, max_query_chars=2000)
    (sent,) = rec.calls
    assert sent == [query.strip()[:2000]]
    assert len(sent[0]) == 2000
    assert paths(hits)[0] == "Кулинария/Закваска.md"
    assert search(store, use_provider, query.strip()[:2000]) == hits


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_an_empty_query_is_a_clear_error(store: Store, use_provider, query: str) -> None:
    with pytest.raises(VaultlensError, match="The query is empty") as info:
        search(store, use_provider, query)
    assert info.value.exit_code == 2


@pytest.fixture
def placed(built: tuple[Path, Path], backend: str, use_provider) -> Path:
    """The built vault indexed where the App (and the CLI) look for it in this test's home."""
    vault, _ = built
    app = open_app(vault, backend, provider=use_provider)
    try:
        vaultlens.index(app)
    finally:
        app.close()
    return vault


def test_service_applies_settings_limits(placed: Path, backend: str, use_provider) -> None:
    rec = RecordingProvider(use_provider)
    limits = {"search.limit": "2", "search.sections": "1", "search.max_query_chars": "40"}
    app = open_app(placed, backend, limits, provider=rec)
    hits = vaultlens.search(
        app, "tomato seedlings need light and a warm windowsill before transplanting outside"
    )
    app.close()
    assert len(hits) == 2 and all(len(h.sections) == 1 for h in hits)
    assert len(rec.calls[0][0]) == 40


def test_cli_reports_an_empty_query_without_traceback(placed: Path, backend: str) -> None:
    result = run_cli(["search", "   ", "--vault", str(placed), *backend_args(backend)])
    assert result.exit_code == 2
    assert "The query is empty" in result.stderr
    assert "Traceback" not in result.output


HANDBOOK_TOPICS = [
    ("Fences", "A cedar fence lasts twenty years if the posts sit in gravel rather than concrete."),
    ("Compost", "Turn the compost heap every two weeks and keep it as damp as a wrung-out sponge."),
    (
        "Watering tomatoes",
        "How often to water tomato plants: deeply at the base twice a week, more in a heatwave; "
        "wet leaves invite blight.",
    ),
    ("Lawn", "Mow the lawn high in summer so the grass shades its own roots from the heat."),
    ("Tools", "Oil the blades of pruning shears after each use so they do not rust over winter."),
    ("Birds", "A shallow bird bath near a hedge brings more birds than any feeder in the open."),
]


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory, use_provider, backend: str) -> tuple[Path, Path]:
    """A long note with one section on the query's subject, and a short note wholly about it."""
    root = tmp_path_factory.mktemp("handbook")
    long_note = ["# Garden handbook", ""]
    for title, sentence in HANDBOOK_TOPICS:
        long_note += [f"## {title}", "", " ".join([sentence] * 4), ""]  # > 300 chars: a chunk each
    vault = write_vault(
        root / "vault",
        {
            "Garden handbook.md": "\n".join(long_note),
            "Watering tomatoes.md": "# Watering tomatoes\n\nTomatoes want a deep soak at the roots two times a week.\n",
            "Bread.md": "# Bread\n\nFeed the sourdough starter every morning with flour and water.\n",
        },
    )
    run_index(vault, root / "index", use_provider, backend=backend)
    return vault, root / "index"


def test_a_long_note_cannot_win_by_the_count_of_its_sections(
    handbook: tuple[Path, Path], use_provider, backend: str
) -> None:
    query = "как часто поливать помидоры"  # no word in common: the dense part alone decides
    with opened_store(handbook[1], backend) as store:
        hits = search(store, use_provider, query)
        assert paths(hits)[:2] == ["Watering tomatoes.md", "Garden handbook.md"]
        # the handbook's best section is the closer one: it lost on its other, unrelated sections
        assert hits[1].similarity > hits[0].similarity
        # the soft maximum: log-mean-exp of all the note's chunks on the pool's scale (0 for one chunk)
        keys, _ = store.matrix()
        qvec = use_provider.embed([query])[0]
        cos = store.scores(qvec, keys).astype(np.float64)
        low, scale = float(cos.min()), float(cos.max() - cos.min())
        penalty = note_penalties(
            store.note_chunk_scores(qvec, {"Garden handbook.md", "Bread.md"}), low, scale
        )
        chunk_note = store.chunk_paths(keys.tolist())
        mine = np.array(
            [c for k, c in zip(keys.tolist(), cos, strict=True) if chunk_note[k] == "Garden handbook.md"]
        )
        v = (mine - low) / scale
        assert len(v) > 1  # several chunks, one of them on the query's subject
        assert penalty["Garden handbook.md"] == pytest.approx(
            NOTE_TAU * np.log(np.mean(np.exp((v - v.max()) / NOTE_TAU)))
        )
        assert penalty["Garden handbook.md"] < 0.0 and penalty["Bread.md"] == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_penalties_for_the_best_notes_only_give_the_same_top_notes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_notes, n_chunks, exact = 400, 1500, 10
    names = [f"n{i:03d}" for i in range(n_notes)]
    note = np.concatenate([np.arange(n_notes), rng.integers(0, n_notes, n_chunks - n_notes)])  # each has one
    upper = rng.random(n_chunks)
    true_penalty = {name: -0.2 * rng.random() for name in names}
    asked: list[set[str]] = []

    def penalties_of(chosen: set[str]) -> dict[str, float]:
        asked.append(chosen)
        return {n: true_penalty[n] for n in chosen}

    def top(pen: np.ndarray) -> list[str]:
        final = upper + pen
        best = {names[j]: max(final[note == j]) for j in range(n_notes)}
        return sorted(best, key=lambda n: (-best[n], n))[:exact]

    full = chunk_penalties(names, note, upper, penalties_of, 0.7, None)
    assert len(asked) == 1 and len(asked[0]) == n_notes
    asked.clear()
    pruned = chunk_penalties(names, note, upper, penalties_of, 0.7, exact)
    assert top(pruned) == top(full)
    assert sum(len(a) for a in asked) < n_notes  # fewer notes' chunks fetched


def test_snippets_show_the_words_without_markdown_marks_tables_or_front_matter_delimiters() -> None:
    text = (
        "---\ntags: [cache]\n---\n## Lifetime **rules**\n\n| Item | TTL |\n|:-----|----:|\n| page | 60 |\n\n"
        "> [!note] Keep\n> See [[Cache#Rules|the rules]] and [docs](Docs.md). %%hidden%%\n- [ ] check `ttl`\n"
    )
    shown = " ".join(plain_text(text).split())
    assert shown == "tags: [cache] Lifetime rules Item · TTL page · 60 Keep See the rules and docs. check ttl"
