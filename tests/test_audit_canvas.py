"""The Canvas map against the JSON Canvas 1.0 spec (https://jsoncanvas.org/spec/1.0/), on real and generated vaults.

The validator is written here from the spec, not taken from the code under test: required fields and their
types, enumerated values, unique ids, edges between existing nodes; plus what makes the map usable: file nodes
name files that exist, no two nodes overlap, each note sits inside its folder's group.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import SHARED
from vaultlens.services.app import App
from vaultlens.services.auditing import audit_structure
from vaultlens.services.auditing.report_files import ReportFiles
from vl_support import write_vault

NODE_TYPES = {"text", "file", "link", "group"}
SIDES = {"top", "right", "bottom", "left"}
ENDS = {"none", "arrow"}


def spec_problems(canvas: dict[str, Any]) -> list[str]:
    """Everything in ``canvas`` that JSON Canvas 1.0 does not allow."""
    problems: list[str] = []
    if set(canvas) - {"nodes", "edges"}:
        problems.append(f"unknown top-level keys {set(canvas) - {'nodes', 'edges'}}")
    ids: list[str] = []
    nodes = canvas.get("nodes", [])
    for n in nodes:
        for field in ("id", "type", "x", "y", "width", "height"):
            if field not in n:
                problems.append(f"node without {field}: {n}")
        if not isinstance(n.get("id"), str):
            problems.append(f"node id not a string: {n}")
        if n.get("type") not in NODE_TYPES:
            problems.append(f"unknown node type: {n}")
        if not all(
            isinstance(n.get(k), int) and not isinstance(n.get(k), bool)
            for k in ("x", "y", "width", "height")
        ):
            problems.append(f"node position or size not an integer: {n}")
        required = {"text": "text", "file": "file", "link": "url"}.get(n.get("type", ""))
        if required and not isinstance(n.get(required), str):
            problems.append(f"{n.get('type')} node without {required}: {n}")
        if n.get("type") == "group" and "label" in n and not isinstance(n["label"], str):
            problems.append(f"group label not a string: {n}")
        ids.append(n.get("id"))
    node_ids = set(ids)
    for e in canvas.get("edges", []):
        for field in ("id", "fromNode", "toNode"):
            if not isinstance(e.get(field), str):
                problems.append(f"edge without {field}: {e}")
        if e.get("fromNode") not in node_ids or e.get("toNode") not in node_ids:
            problems.append(f"edge to a node that does not exist: {e}")
        for side in ("fromSide", "toSide"):
            if side in e and e[side] not in SIDES:
                problems.append(f"bad {side}: {e}")
        for end in ("fromEnd", "toEnd"):
            if end in e and e[end] not in ENDS:
                problems.append(f"bad {end}: {e}")
        ids.append(e.get("id"))
    if len(ids) != len(set(ids)):
        problems.append("ids are not unique")
    return problems


def _box(n: dict[str, Any]) -> tuple[int, int, int, int]:
    return n["x"], n["y"], n["x"] + n["width"], n["y"] + n["height"]


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def overlaps(boxes: list[tuple[int, int, int, int]]) -> int:
    """Pairs of overlapping boxes (sweep over x, so a few thousand nodes stay quick)."""
    found = 0
    active: list[tuple[int, int, int, int]] = []
    for box in sorted(boxes):
        active = [a for a in active if a[2] > box[0]]
        found += sum(_overlap(a, box) for a in active)
        active.append(box)
    return found


def usability_problems(canvas: dict[str, Any], vault: Path) -> list[str]:
    problems: list[str] = []
    nodes = canvas["nodes"]
    files = [n for n in nodes if n["type"] == "file"]
    groups = {n["label"]: n for n in nodes if n["type"] == "group"}
    for n in files:
        if not (vault / n["file"]).is_file():
            problems.append(f"file node names no file: {n['file']}")
        folder = n["file"].rpartition("/")[0] or "/"
        g = groups.get(folder)
        if (
            g is None
            or not (g["x"] <= n["x"] and n["x"] + n["width"] <= g["x"] + g["width"])
            or not (g["y"] <= n["y"] and n["y"] + n["height"] <= g["y"] + g["height"])
        ):
            problems.append(f"{n['file']} is not inside the group of its folder")
    if overlaps([_box(n) for n in files]):
        problems.append("file nodes overlap")
    if overlaps([_box(g) for g in groups.values()]):
        problems.append("groups overlap")
    return problems


def test_the_validator_finds_what_it_forbids() -> None:
    """It cannot pass vacuously: each kind of fault in a broken canvas is reported."""
    broken = {
        "nodes": [
            {"id": "a", "type": "file", "x": 0, "y": 0, "width": 10, "height": 10},
            {"id": "a", "type": "shape", "x": 0.5, "y": 0, "width": 10, "height": 10},
        ],
        "edges": [{"id": "e", "fromNode": "a", "toNode": "zzz", "toEnd": "both"}],
    }
    found = " ".join(spec_problems(broken))
    for expected in (
        "without file",
        "unknown node type",
        "not an integer",
        "does not exist",
        "bad toEnd",
        "unique",
    ):
        assert expected in found
    assert overlaps([(0, 0, 10, 10), (5, 5, 15, 15), (20, 0, 30, 10)]) == 1


def _canvas(vault: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    audit = audit_structure(App.open(vault).files())
    return json.loads(ReportFiles.render(audit.report, audit.resolver).canvas), audit.report.as_dict()


@pytest.mark.parametrize("name", ["ru-wiki", "kepano"])
def test_real_vault_maps_are_valid_and_usable(name: str) -> None:
    vault = SHARED / "vaults" / name
    if not vault.is_dir():
        pytest.skip(f"{vault} is not here: the shared real vaults are needed")
    canvas, report = _canvas(vault)
    assert spec_problems(canvas) == []
    assert usability_problems(canvas, vault) == []
    files = {n["file"] for n in canvas["nodes"] if n["type"] == "file"}
    assert files == set(report["notes"])
    # one edge per linked pair of notes whose link resolves to exactly one note
    by_id = {n["id"]: n.get("file") for n in canvas["nodes"]}
    drawn = {(by_id[e["fromNode"]], by_id[e["toNode"]]) for e in canvas["edges"]}
    expected = {
        (src, link["target"])
        for src, links in report["links"].items()
        for link in links
        if link["target"] in files and link["target"] != src
    }
    assert drawn == expected and drawn


def test_a_generated_vault_with_many_folders_packs_without_overlap(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {}
    for i in range(400):
        folder = f"area{i % 13}/topic{i % 5}" if i % 3 else f"area{i % 13}"
        files[f"{folder}/note {i}.md"] = f"see [[note {(i * 7) % 400}]] and [[note {(i + 1) % 400}]]\n"
    files["root note.md"] = "[[note 1]]\n"
    vault = write_vault(tmp_path / "vault", files)
    canvas, _ = _canvas(vault)
    assert spec_problems(canvas) == []
    assert usability_problems(canvas, vault) == []
    pairs = {(i, j) for i in range(400) for j in ((i * 7) % 400, (i + 1) % 400) if j != i}
    assert len(canvas["edges"]) == len(pairs) + 1  # and root note -> note 1
