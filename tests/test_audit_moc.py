"""`vaultlens moc CLUSTER`: a Map of Content whose every link resolves to its intended note, written only after
the user confirmed the exact new note. The links are checked with the structure audit's resolution (tested
against an independent reference in test_audit_reference.py), not with the MOC's own code."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import vaultlens as services
import vaultlens.testing  # registers the deterministic "fake" provider
from vaultlens.services.app import App
from vl_support import run_cli, snapshot, write_vault

WORDS = [
    "sourdough",
    "starter",
    "flour",
    "water",
    "bake",
    "bread",
    "oven",
    "crust",
    "loaf",
    "rye",
    "dough",
    "knead",
    "proof",
]
FAKE = ["--set", "embedding.provider=fake"]


def _body(i: int) -> str:
    text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(10))
    return f"{text}. {text}.\n"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    files: dict[str, str | bytes] = {f"Kitchen/Bake {i}.md": f"# Bake {i}\n\n{_body(i)}" for i in range(3)}
    files["Archive/Bake 0.md"] = "# Old bake\n\n" + _body(0)  # same name as Kitchen/Bake 0.md
    files["Kitchen/index.md"] = "# Kitchen\n\n" + _body(1)
    files["Archive/index.md"] = "# Archive\n\n" + _body(2)  # index.md in two folders
    files["Sky/Telescope.md"] = "# Telescope\n\ntelescope star planet orbit galaxy nebula lens night\n"
    v = write_vault(tmp_path / "vault", files)
    services.index(App.open(v, {"embedding.provider": "fake"}))
    return v


def _cluster(vault: Path) -> dict[str, Any]:
    done = run_cli(
        ["audit", "deep", "--no-llm", "--json", "--threshold", "0.3", "--vault", str(vault), *FAKE]
    )
    assert done.exit_code == 0, done.stderr
    (cluster,) = [c for c in json.loads(done.stdout)["clusters"] if "Archive/Bake 0.md" in c["notes"]]
    assert {"Kitchen/Bake 0.md", "Kitchen/index.md", "Archive/index.md"} <= set(cluster["notes"])
    return cluster


def test_every_link_resolves_to_its_intended_note(vault: Path) -> None:
    cluster = _cluster(vault)
    done = run_cli(
        ["moc", str(cluster["id"]), "--yes", "--json", "--out-path", "Maps/Baking.md", "--vault", str(vault)]
    )
    assert done.exit_code == 0, done.output
    text = (vault / "Maps/Baking.md").read_text(encoding="utf-8")
    raw_links = re.findall(r"\[\[([^\]]+)\]\]", text)
    assert len(raw_links) == len(cluster["notes"])
    assert "Bake 0" not in raw_links and "index" not in raw_links  # a bare shared name would be ambiguous

    audit = run_cli(["audit", "structure", "--json", "--vault", str(vault)])
    assert audit.exit_code == 0, audit.stderr
    links = json.loads(audit.stdout)["links"]["Maps/Baking.md"]
    assert sorted(link["target"] for link in links) == sorted(cluster["notes"])  # no UNRESOLVED, no AMBIGUOUS


def test_nothing_is_written_without_confirmation(vault: Path) -> None:
    cluster = _cluster(vault)
    before = snapshot(vault)
    refused = run_cli(["moc", cluster["name"], "--vault", str(vault)])  # by name; not a terminal: no answer
    assert refused.exit_code != 0
    assert "+- [[Archive/Bake 0]]" in refused.stdout  # the exact new note was shown
    assert snapshot(vault) == before


def test_bad_requests_are_clear_errors(vault: Path, tmp_path: Path) -> None:
    none_saved = run_cli(["moc", "1", "--vault", str(vault)])
    assert none_saved.exit_code != 0 and "audit deep" in none_saved.stderr
    cluster = _cluster(vault)
    unknown = run_cli(["moc", "no such cluster", "--vault", str(vault)])
    assert unknown.exit_code != 0 and "Saved clusters:" in unknown.stderr
    taken = run_cli(
        ["moc", str(cluster["id"]), "--out-path", "Kitchen/index.md", "--yes", "--vault", str(vault)]
    )
    assert taken.exit_code != 0 and "already exists" in taken.stderr
    assert "Choose another --out-path" in " ".join(taken.stderr.split())  # it was given: not "pass it"
