"""`similar` and `duplicates`: real stores of each backend in tmp dirs, the real bundled model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import vaultlens
from vaultlens.config.settings import DiscoverSettings
from vaultlens.embedding.local import LocalUSEProvider
from vaultlens.errors import InvalidInput, VaultError
from vaultlens.index.store import Store
from vaultlens.services.finding import discover
from vaultlens.services.finding.duplicates import report as dups
from vaultlens.services.finding.duplicates import vector_pairs
from vl_support import (
    RecordingProvider,
    backend_args,
    open_app,
    opened_store,
    run_cli,
    run_index,
    write_vault,
)

BREAD = (
    "Sourdough bread needs a lively starter made of flour and water. Feed the starter daily, let the "
    "dough ferment slowly overnight, shape the loaf gently and bake it in a very hot dutch oven so the "
    "crust blisters and the crumb stays open and moist. Rye flour makes the starter more active."
)
K8S = (
    "Kubernetes networking gives every pod its own IP address. Services load-balance traffic across "
    "pods through kube-proxy rules, an ingress controller routes external HTTP requests to services, "
    "and the CNI plugin such as Calico or Cilium wires the pod network and enforces network policies."
)
BREAD_MORE = (
    "For a tangier loaf, retard the shaped dough in the fridge for a day. Score the top with a razor "
    "blade before it goes into the oven, bake covered for twenty minutes to trap steam, then uncover it "
    "and bake until the crust turns deep brown. Let the bread cool for an hour before slicing it."
)
K8S_MORE = (
    "When a pod cannot reach a service, check the endpoints object, the DNS resolution through CoreDNS, "
    "and whether a NetworkPolicy blocks the traffic. kubectl exec into a debug container with curl and "
    "dig, and compare the service's cluster IP with the iptables or eBPF rules on the node."
)
GARDEN = (
    "Tomato seedlings want warm soil, six hours of sun and deep watering twice a week. Pinch the "
    "suckers, stake the stems and mulch the beds so the roots stay cool during the hot summer months."
)
CHESS = (
    "The Sicilian defence answers 1.e4 with c5 and leads to sharp, unbalanced positions. Black trades "
    "a wing pawn for a centre pawn and counterattacks on the queenside while White attacks the king."
)
ORIGINAL = (
    "# Release checklist\n\n"
    "Before a release we freeze the main branch, run the full integration test suite against the "
    "staging database, and write the changelog from the merged pull requests. The version number "
    "follows semantic versioning: breaking changes bump the major number.\n\n"
    "After tagging, the build server publishes wheels to the package index, the documentation site is "
    "rebuilt from the tag, and an announcement goes to the mailing list with the highlights.\n"
)
LIGHT_EDIT = ORIGINAL.replace("Before a release we freeze", "Before every release we freeze").replace(
    "the highlights", "the main highlights"
)
SECTION_A = (
    "## Espresso\n\n"
    "Espresso is brewed by forcing hot water at nine bars of pressure through finely ground, tightly "
    "tamped coffee for about twenty-five seconds. A good shot has a thick hazelnut crema, balanced "
    "acidity and sweetness, and the grind size is the main dial for fixing sour or bitter shots. "
    "Fresh beans roasted one to three weeks earlier give the best results, and the portafilter basket "
    "should be dry and clean before dosing eighteen grams of coffee into it for a double shot.\n"
)
SECTION_B = (
    "## Pour over\n\n"
    "Pour over brewing uses a paper filter in a cone dripper. Bloom the grounds with twice their weight "
    "of water for thirty seconds, then pour slowly in circles. A medium-fine grind and water just off "
    "the boil extract a clean cup with bright fruity notes, and the total brew time should stay near "
    "three minutes; a longer time means the grind is too fine and the cup will taste harsh and dry.\n"
)
SECTION_C = (
    "## Storing beans\n\n"
    "Keep coffee beans in an airtight opaque container at room temperature, away from light, heat and "
    "moisture. Do not refrigerate them: condensation ruins the oils. Buy small amounts every two weeks "
    "and grind right before brewing, because ground coffee goes stale within an hour of exposure.\n"
)
COFFEE = "# Coffee brewing\n\n" + SECTION_A + "\n" + SECTION_B + "\n" + SECTION_C

VAULT = {
    "multi.md": f"# Weekend notes\n\n## Baking\n\n{BREAD}\n\n{BREAD_MORE}\n\n## Cluster work\n\n{K8S}\n\n{K8S_MORE}\n",
    "bread.md": "# Sourdough\n\n" + BREAD.replace("Sourdough bread", "A sourdough loaf") + "\n",
    "k8s.md": "# Pod networking\n\n"
    + K8S.replace("Kubernetes networking", "Cluster networking in k8s")
    + "\n",
    "garden.md": f"# Tomatoes\n\n{GARDEN}\n",
    "chess.md": f"# Sicilian\n\n{CHESS}\n",
    "short.md": "# Hi\n\nok then.\n",
    "release.md": ORIGINAL,
    "backup/release copy.md": ORIGINAL,
    "export/release crlf.md": "\ufeff" + ORIGINAL.replace("\n", "\r\n"),
    "published/release fm.md": "---\ntitle: Release\ntags: [process]\n---\n" + ORIGINAL,
    "drafts/release edit.md": LIGHT_EDIT,
    "coffee.md": COFFEE,
    "inbox/espresso only.md": "# Espresso notes\n\n" + SECTION_A,
    "a/notes.md": f"# Notes\n\n{GARDEN}\n",
    "b/notes.md": f"# Notes\n\n{CHESS}\n",
}


@pytest.fixture(scope="module")
def indexed(
    tmp_path_factory: pytest.TempPathFactory, use_provider: LocalUSEProvider, backend: str
) -> Iterator[Path]:
    """The test vault indexed once into a real store; yields the store directory."""
    root = tmp_path_factory.mktemp("discover")
    vault = write_vault(root / "vault", VAULT)
    store_dir = root / "store"
    run_index(vault, store_dir, use_provider, backend=backend)
    yield store_dir


@pytest.fixture
def store(indexed: Path, backend: str) -> Iterator[Store]:
    with opened_store(indexed, backend) as s:
        yield s


def _pairs(report: dups.DuplicateReport) -> dict[frozenset[str], dups.DuplicatePair]:
    return {frozenset((p.a, p.b)): p for p in report.pairs}


def _exact(report: dups.DuplicateReport) -> dict[frozenset[str], str]:
    return {frozenset((a, b)): g.kind for g in report.exact for a in g.paths for b in g.paths if a < b}


MIN_CHARS = DiscoverSettings().min_chars


# ---- similar -----------------------------------------------------------------------------------
def test_multi_topic_note_finds_a_note_for_each_topic_with_the_right_sections(store: Store) -> None:
    result = discover.similar(store, "multi.md", 4, MIN_CHARS)
    top = [r.path for r in result.results[:3]]
    assert "bread.md" in top and "k8s.md" in top, top
    by_path = {r.path: r for r in result.results}
    lines = VAULT["multi.md"].split("\n")
    baking, cluster = lines.index("## Baking") + 1, lines.index("## Cluster work") + 1  # 1-based
    bread_src = by_path["bread.md"].matches[0].source
    k8s_src = by_path["k8s.md"].matches[0].source
    assert bread_src.start_line <= baking < bread_src.end_line < cluster  # the baking section
    assert k8s_src.start_line >= cluster  # the cluster section
    assert by_path["bread.md"].matches[0].other.start_line >= 1
    assert by_path["bread.md"].score > 0.6 and by_path["k8s.md"].score > 0.6


def test_too_short_note_gets_a_notice_and_no_results(store: Store) -> None:
    result = discover.similar(store, "short.md", 10, MIN_CHARS)
    assert result.results == []
    assert result.notice is not None and "too little text" in result.notice


def test_similar_makes_no_embedding_call(
    tmp_path: Path, backend: str, use_provider: LocalUSEProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = write_vault(tmp_path / "v", {"multi.md": VAULT["multi.md"], "bread.md": VAULT["bread.md"]})
    indexing = open_app(vault, backend)
    vaultlens.index(indexing)
    indexing.close()
    recorder = RecordingProvider(use_provider)
    app = open_app(vault, backend, provider=recorder)
    # a guard, not a substitute: any local embedding, through the recorder or around it, fails the test
    monkeypatch.setattr(LocalUSEProvider, "embed", lambda *a, **k: pytest.fail("embedding call"))
    result = vaultlens.similar(app, "multi")
    app.close()
    assert [r.path for r in result.results] == ["bread.md"]
    assert recorder.calls == []


# ---- duplicates --------------------------------------------------------------------------------
def test_duplicates_finds_copies_edits_and_contained_notes(store: Store) -> None:
    report = dups.duplicates(store, 0.95, 100, MIN_CHARS)
    exact, pairs = _exact(report), _pairs(report)
    assert exact[frozenset(("release.md", "backup/release copy.md"))] == "identical"
    assert exact[frozenset(("release.md", "export/release crlf.md"))] == "identical"  # CRLF + BOM
    # one note of the identical group (its first path) stands for the group: no note shows twice
    assert exact[frozenset(("backup/release copy.md", "published/release fm.md"))] == "same_body"
    edit = pairs[frozenset(("drafts/release edit.md", "release.md"))]
    assert edit.score >= 0.95 and edit.kind == "near_duplicate"
    part = pairs[frozenset(("coffee.md", "inbox/espresso only.md"))]
    assert part.kind == "contained" and part.score >= 0.95
    assert part.evidence.score >= 0.95
    for p in report.pairs:  # exact copies are reported as a group, not again as pairs
        assert frozenset((p.a, p.b)) not in exact


def test_unrelated_notes_and_same_names_are_not_duplicates(store: Store) -> None:
    report = dups.duplicates(store, 0.95, 100, MIN_CHARS)
    pairs = _pairs(report)
    for a, b in [("garden.md", "chess.md"), ("bread.md", "k8s.md"), ("a/notes.md", "b/notes.md")]:
        assert frozenset((a, b)) not in pairs
        assert frozenset((a, b)) not in _exact(report)
    assert ["a/notes.md", "b/notes.md"] in report.same_name
    assert "short.md" not in {x for p in report.pairs for x in (p.a, p.b)}
    assert report.excluded_short >= 1


def test_dismissed_pair_is_hidden_until_a_note_changes(tmp_path: Path, backend: str) -> None:
    files = {k: VAULT[k] for k in ("release.md", "drafts/release edit.md", "garden.md")}
    vault = write_vault(tmp_path / "v", files)
    app = open_app(vault, backend)
    vaultlens.index(app)
    key = frozenset(("release.md", "drafts/release edit.md"))
    assert key in _pairs(vaultlens.duplicates(app))
    vaultlens.dismiss(app, "release", "drafts/release edit.md")
    assert key not in _pairs(vaultlens.duplicates(app))
    (vault / "drafts/release edit.md").write_text(LIGHT_EDIT + "\nOne more line.\n", encoding="utf-8")
    vaultlens.index(app)
    assert key in _pairs(vaultlens.duplicates(app))
    app.close()


def test_only_a_pair_duplicates_lists_can_be_dismissed(tmp_path: Path, backend: str) -> None:
    """A pair that was never listed used to be stored anyway: a typo hid nothing, a guess hid a pair
    before anyone had seen it."""
    files = {k: VAULT[k] for k in ("release.md", "drafts/release edit.md", "garden.md")}
    app = open_app(write_vault(tmp_path / "v", files), backend)
    vaultlens.index(app)
    with pytest.raises(
        InvalidInput, match="release.md and garden.md are not a pair `vaultlens duplicates` lists"
    ):
        vaultlens.dismiss(app, "release", "garden")
    with app.reading() as store:
        assert store.dismissed_pairs() == set()
    listed = frozenset(("release.md", "drafts/release edit.md"))
    assert listed in _pairs(vaultlens.duplicates(app))
    assert vaultlens.dismiss(app, "release.md", "drafts/release edit.md").as_dict() == {
        "dismissed": ["release.md", "drafts/release edit.md"]
    }
    vaultlens.dismiss(app, "drafts/release edit.md", "release.md")  # once dismissed, again is fine
    assert listed not in _pairs(vaultlens.duplicates(app))
    app.close()


# ---- CLI ---------------------------------------------------------------------------------------
@pytest.fixture
def cli_vault(tmp_path: Path, backend: str) -> list[str]:
    """``--vault V`` and the backend's ``--set``, for every command of a test on one indexed vault."""
    vault = write_vault(tmp_path / "v", VAULT)
    args = ["--vault", str(vault), *backend_args(backend)]
    assert run_cli(["index", *args]).exit_code == 0
    return args


def test_cli_json_shapes_and_errors(cli_vault: list[str]) -> None:
    r = run_cli(["similar", "multi", *cli_vault, "--json", "--limit", "3"])
    assert r.exit_code == 0, r.output
    items = json.loads(r.stdout)["results"]
    assert items and all(isinstance(i["path"], str) and isinstance(i["score"], float) for i in items)
    r = run_cli(["duplicates", *cli_vault, "--json"])
    assert r.exit_code == 0, r.output
    pairs = json.loads(r.stdout)["pairs"]
    assert pairs and all({"a", "b", "score"} <= set(p) for p in pairs)

    r = run_cli(["similar", "no such note", *cli_vault])
    assert r.exit_code != 0 and "no such note" in r.output and "Traceback" not in r.output
    r = run_cli(["similar", "notes", *cli_vault])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "a/notes.md" in r.output and "b/notes.md" in r.output


def test_resolve_note_errors(store: Store) -> None:
    with pytest.raises(VaultError, match="several notes"):
        discover.resolve_note(store, "/vault", "notes")
    with pytest.raises(VaultError, match="No indexed note"):
        discover.resolve_note(store, "/vault", "missing")


# ---- pair finders --------------------------------------------------------------------------------
def test_exact_pairs_match_brute_force() -> None:
    rng = np.random.default_rng(42)
    n, d = 3000, 64
    centres = rng.standard_normal((60, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    spread = rng.uniform(0.05, 0.6, (n, 1)) * rng.standard_normal((n, d)) / np.sqrt(d)
    x = centres[rng.integers(0, 60, n)] + spread
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    gram = x @ x.T
    for t in (0.8, 0.9, 0.95, 0.99):
        rows, cols = np.nonzero(np.triu(gram >= t, 1))
        brute = set(zip(rows.tolist(), cols.tolist(), strict=True))
        got: set[tuple[int, int]] = set()
        for a, b, _ in vector_pairs.exact_pairs(x, t):
            got |= set(zip(a.tolist(), b.tolist(), strict=True))
        assert got == brute, t
        assert len(brute) > 100


def _planted(n: int, d: int, copies: int, seed: int) -> npt.NDArray[np.float32]:
    """Unit vectors shaped like a model's (a shared mean, a decaying spectrum) with the last
    ``copies`` rows near-copies of the first ones."""
    rng = np.random.default_rng(seed)
    spectrum = (1.0 / np.arange(1, d + 1)) ** 0.5
    x = 0.1 + rng.standard_normal((n, d)) * spectrum
    x[-copies:] = x[:copies] + 0.05 * rng.standard_normal((copies, d)) * spectrum
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_partitioned_pairs_find_near_copies_with_exact_cosines() -> None:
    n, d, copies = 4000, 256, 200
    x = _planted(n, d, copies, 3)
    rows = np.arange(n, dtype=np.int64)
    got: dict[tuple[int, int], float] = {}
    yielded = 0
    for ra, rb, sims in vector_pairs.partitioned_pairs(x, rows, 0.95):
        got.update({(int(a), int(b)): float(v) for a, b, v in zip(ra, rb, sims, strict=True)})
        yielded += len(ra)
    planted = {(i, n - copies + i) for i in range(copies)}
    assert len(planted & set(got)) >= 198
    assert yielded == len(got)  # a pair in several partitions is scored and given once
    gram = x @ x.T
    assert all(a < b and abs(gram[a, b] - v) < 1e-5 and v >= 0.95 for (a, b), v in got.items())


def test_a_tight_topics_partitions_are_scored_as_one_product_with_the_same_pairs() -> None:
    """Sections of a few tight topics: most pairs of a partition pass the projected filter, so each
    partition is scored as a whole (no pair at a time), with the pairs that scoring them one at a time
    finds and their exact cosines."""
    rng = np.random.default_rng(8)
    n, d = 3000, 64
    centres = rng.standard_normal((6, d))
    x = centres[rng.integers(0, 6, n)] / np.sqrt(d) * 3 + rng.standard_normal((n, d)) / np.sqrt(d)
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    gram = x @ x.T
    runs: list[dict[tuple[int, int], float]] = []
    score = vector_pairs._cosines
    one_at_a_time: list[object] = []
    for share in (vector_pairs.DENSE_SHARE, 2.0):  # 2.0: never dense, a pair at a time
        one_at_a_time.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(vector_pairs, "DENSE_SHARE", share)

            def counted(*a: Any) -> Any:
                one_at_a_time.append(a)
                return score(*a)

            mp.setattr(vector_pairs, "_cosines", counted)
            got: dict[tuple[int, int], float] = {}
            yielded = 0
            for ra, rb, sims in vector_pairs.partitioned_pairs(x, np.arange(n, dtype=np.int64), 0.9):
                got.update({(int(a), int(b)): float(v) for a, b, v in zip(ra, rb, sims, strict=True)})
                yielded += len(ra)
        assert yielded == len(got)  # a pair in several partitions is given once
        floor = float(np.float32(0.9))  # compared in float32
        assert all(a < b and abs(gram[a, b] - v) < 1e-5 and v >= floor for (a, b), v in got.items())
        assert bool(one_at_a_time) == (share > 1)
        runs.append(got)
    whole, single = runs
    assert len(whole) > 100_000
    assert all(abs(gram[a, b] - 0.9) < 1e-5 for a, b in set(whole) ^ set(single))  # a float's last bit


def test_close_pairs_keep_the_callers_row_numbers() -> None:
    """Only pairs of the given rows, named by their rows in the whole matrix, on both paths."""
    n, d, copies = 1200, 256, 200
    x = _planted(n, d, copies, 5)
    rows = np.flatnonzero(np.arange(n) % 3 != 1).astype(np.int64)  # every third row left out
    expected = {
        (int(a), int(b)) for a in rows.tolist() for b in rows.tolist() if a < b and float(x[a] @ x[b]) >= 0.95
    }
    assert len(expected) >= 50
    for large in (False, True):
        limit = 10 if large else vector_pairs.EXACT_MAX_ROWS
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(vector_pairs, "EXACT_MAX_ROWS", limit)
            found = {
                (int(a), int(b))
                for ra, rb, _ in vector_pairs.close_pairs(x, rows, 0.95)
                for a, b in zip(ra, rb, strict=True)
            }
        assert found <= expected
        assert len(found) >= 0.98 * len(expected), large


def test_the_projected_distance_filter_drops_no_pair_within_it() -> None:
    """The filter's bound is a proof, not a heuristic: brute force on projections agrees exactly."""
    rng = np.random.default_rng(11)
    z = rng.standard_normal((1500, 16)).astype(np.float32) * rng.uniform(0.2, 1.0, (1500, 1)).astype(
        np.float32
    )
    z[750:] = z[:750] + 0.1 * rng.standard_normal((750, 16)).astype(np.float32)
    norms = np.linalg.norm(z, axis=1).astype(np.float32)
    unit = z / norms[:, None]
    for limit in (0.05, 0.2, 0.5):
        a, b = vector_pairs._within_distance(unit, norms, limit)
        d2 = ((z[:, None, :] - z[None, :, :]) ** 2).sum(axis=2)
        ii, jj = np.nonzero(np.triu(d2 <= limit - 1e-4, 1))
        found = set(zip(a.tolist(), b.tolist(), strict=True))
        assert set(zip(ii.tolist(), jj.tolist(), strict=True)) <= found, limit
        assert all(d2[i, j] <= limit + 1e-4 for i, j in found), limit


def _rss_file_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) / 1024
    pytest.skip("no /proc/self/status here: resident memory cannot be read")


def test_row_reader_reads_a_mapped_matrix_without_keeping_it_resident(tmp_path: Path) -> None:
    x = np.random.default_rng(2).standard_normal((60_000, 256)).astype(np.float32)  # 61 MB
    np.save(tmp_path / "m.npy", x)
    mapped = np.load(tmp_path / "m.npy", mmap_mode="r")
    reader = vector_pairs.RowReader(np.asarray(mapped, dtype=np.float32))
    before = _rss_file_mb()
    total = np.zeros(256, dtype=np.float64)
    for s0 in range(0, 60_000, 5000):  # a pass over every row, as the projections make
        total += reader.take(np.arange(s0, s0 + 5000)).astype(np.float64).sum(axis=0)
    assert np.allclose(total, x.sum(axis=0, dtype=np.float64), rtol=1e-4)
    assert _rss_file_mb() - before < 20  # the mapping itself would hold ~61 MB
    picks = np.array([59_999, 3, 3, 40_000, 0], dtype=np.int64)  # sparse, repeated, unordered
    assert np.array_equal(reader.take(picks), x[picks])
    assert np.array_equal(reader.take(np.arange(100, 140)), x[100:140])  # one read of a span
    (tmp_path / "m.npy").unlink()  # a newer generation drops the file: the open one still reads
    assert np.array_equal(reader.take(picks), x[picks])
    in_memory = vector_pairs.RowReader(x)
    assert np.array_equal(in_memory.take(picks), x[picks])
