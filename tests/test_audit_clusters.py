"""`audit deep --no-llm`: topic clusters from stored note vectors, named from headings and terms, no model."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

import vaultlens as services
import vaultlens.testing  # registers the deterministic "fake" provider
from vaultlens.services.app import App
from vaultlens.services.auditing import audit_clusters
from vaultlens.services.auditing.clusters import agglomerate
from vl_support import run_cli, write_vault

TOPICS = {
    "Kitchen": (
        "Sourdough",
        "sourdough starter flour water bake bread oven crust loaf rye dough knead proof",
    ),
    "Sky": ("Telescope", "telescope star planet orbit galaxy nebula lens night observe comet moon eclipse"),
    "Code": ("Python", "python function class module import test debug compile variable loop return list"),
}


def _vault(root: Path) -> Path:
    files: dict[str, str | bytes] = {}
    for folder, (heading, words) in TOPICS.items():
        w = words.split()
        for i in range(4):
            body = " ".join(w[(i + k) % len(w)] for k in range(10))
            files[f"{folder}/{folder} {i}.md"] = f"# {folder} {i}\n\n## {heading}\n\n{body}. {body}.\n"
    files["Misc/Shopping.md"] = "# Shopping\n\nbuy socks umbrella batteries stamps envelope\n"
    return write_vault(root, files)


@pytest.fixture
def app(tmp_path: Path) -> App:
    a = App.open(_vault(tmp_path / "vault"), {"embedding.provider": "fake"})
    services.index(a)
    return a


def test_topics_become_named_clusters(app: App) -> None:
    report = audit_clusters(app, threshold=0.3, min_size=3)
    by_folder = {c.notes[0].split("/")[0]: c for c in report.clusters}
    assert set(by_folder) == set(TOPICS)
    for folder, (heading, _) in TOPICS.items():
        c = by_folder[folder]
        assert sorted(c.notes) == [f"{folder}/{folder} {i}.md" for i in range(4)]
        assert c.name == heading.casefold()  # the heading every note of the cluster shares
        assert c.cohesion >= 0.3
    assert report.unclustered == ["Misc/Shopping.md"]


def test_a_high_threshold_leaves_notes_apart(app: App) -> None:
    report = audit_clusters(app, threshold=0.99, min_size=2)
    assert report.clusters == []
    assert len(report.unclustered) == 13


def test_agglomerate_matches_naive_average_linkage() -> None:
    """The incremental merge equals a from-scratch average linkage (mean pairwise cosine) on random data."""
    rng = np.random.default_rng(7)
    centres = rng.normal(size=(4, 16))
    vecs = np.concatenate([c + rng.normal(scale=0.6, size=(8, 16)) for c in centres]).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    threshold = 0.45

    groups = [[i] for i in range(len(vecs))]
    while True:
        best, pair = -2.0, None
        for a, b in combinations(range(len(groups)), 2):
            mean = float(np.mean([vecs[i] @ vecs[j] for i in groups[a] for j in groups[b]]))
            if mean > best:
                best, pair = mean, (a, b)
        if pair is None or best < threshold:
            break
        a, b = pair
        groups[a] = groups[a] + groups[b]
        del groups[b]
    naive = sorted(sorted(g) for g in groups)
    assert sorted(agglomerate(vecs, threshold)) == naive
    assert 1 < len(naive) < len(vecs)  # the comparison is not vacuous


def test_cli_without_a_model_writes_clusters_outside_the_vault(app: App) -> None:
    refused = run_cli(["audit", "deep", "--vault", str(app.vault), "--set", "embedding.provider=fake"])
    assert refused.exit_code == 7 and "Nothing was sent" in refused.stderr  # the model audit asks first
    done = run_cli(
        ["audit", "deep", "--no-llm", "--vault", str(app.vault), "--set", "embedding.provider=fake", "--json"]
        + ["--threshold", "0.3"]
    )
    assert done.exit_code == 0, done.stderr
    data = json.loads(done.stdout)
    assert len(data["clusters"]) == 3
    saved = json.loads(Path(data["files"]["clusters.json"]).read_text(encoding="utf-8"))
    assert saved["clusters"] == data["clusters"]
    assert not Path(data["files"]["clusters.json"]).is_relative_to(app.vault)


def test_without_an_index_the_error_says_what_to_do(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "v")
    result = run_cli(["audit", "deep", "--no-llm", "--vault", str(vault)])
    assert result.exit_code == 4
    assert "vaultlens index" in result.stderr
