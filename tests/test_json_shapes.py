"""One JSON shape per verb, pinned on the sample vault: the CLI's ``--json``, the HTTP API and MCP
all print a result's ``as_dict()``, so a change to a shape shows here as a diff of its golden file.

A shape is the JSON with every value replaced by its type (a list by the shape of its first item),
so scores and timings may move while keys and types may not. After an intended change, run
``VAULTLENS_UPDATE_GOLDEN=1 pytest tests/test_json_shapes.py`` and review the diff of tests/golden/.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import vaultlens
from vaultlens.errors import ConfirmationRequired
from vl_support import GOLDEN, check_shape, run_cli, shape

REPO = Path(__file__).resolve().parents[1]


def test_shape_names_types_and_keeps_keys() -> None:
    """The shape function itself: keys kept, values typed, lists by their first item (it cannot pass vacuously)."""
    assert shape({"a": [{"b": 1.5, "c": None}], "d": True, "e": []}) == {
        "a": [{"b": "float", "c": "null"}],
        "d": "bool",
        "e": [],
    }
    assert shape({"a": 1}) != shape({"a": "1"})


def _proposal(run: Any) -> dict[str, Any]:
    try:
        run()
    except ConfirmationRequired as exc:
        return exc.to_dict()
    raise AssertionError("expected a proposal")


def _results(vault: Path) -> dict[str, Any]:
    """Every verb that needs no model server, run once on the sample vault: name -> its JSON."""
    app = vaultlens.App.open(vault)
    try:
        out: dict[str, Any] = {"index": vaultlens.index(app).as_dict()}
        hits = vaultlens.search(app, "how do I cache static files")
        out["search"] = [h.as_dict() for h in hits]
        out["similar"] = vaultlens.similar(app, hits[0].path).as_dict()
        out["duplicates"] = vaultlens.duplicates(app).as_dict()
        out["status"] = vaultlens.status(app).as_dict()
        out["doctor"] = vaultlens.doctor(app).as_dict()
        out["note"] = vaultlens.note(app, hits[0].path, 0, 200).as_dict()
        out["note_text"] = vaultlens.note_text(app, hits[0].path).as_dict()
        out["list_notes"] = vaultlens.list_notes(app, "", None, 5).as_dict()
        out["rebuild_in_background"] = vaultlens.rebuild_in_background(app).as_dict()
        out["providers"] = [p.as_dict() for p in vaultlens.providers(app)]
        out["bench_embed"] = vaultlens.bench_embed(app).as_dict()
        out["ask_extractive"] = vaultlens.ask(app, "how do I cache static files", extractive=True).as_dict()
        session = vaultlens.open_chat(app, extractive=True)
        out["chat_turn"] = vaultlens.chat_turn(session, "how do I cache static files").as_dict()
        out["audit_structure"] = vaultlens.audit_structure(app, vault.parent / "audit").as_dict()
        out["audit_clusters"] = vaultlens.audit_clusters_only(
            app, 0.3, 2, vault.parent / "clusters"
        ).as_dict()
        from vaultlens.services.changing import writes

        path = hits[0].path
        planned = writes.plan_write(app.vault, path, (vault / path).read_bytes() + b"\nSee also.\n", "append")
        out["plan"] = planned.as_dict()
        out["write_unconfirmed"] = _proposal(lambda: vaultlens.apply(app, planned.entry.op_id))
        out["apply"] = vaultlens.apply(app, planned.entry.op_id, planned.proposal).as_dict()
        out["history"] = [e.as_dict() for e in vaultlens.history(app)]
        out["show_before"] = vaultlens.show_before(app, planned.entry.op_id).as_dict()
        pair = vaultlens.duplicates(app, threshold=0.0).pairs[0]  # dismissed: only a listed pair
        out["dismiss"] = vaultlens.dismiss(app, pair.a, pair.b, threshold=0.0).as_dict()
        out["clear"] = vaultlens.clear(app).as_dict()
        return out
    finally:
        app.close()


def test_every_verb_keeps_its_json_shape(tmp_path: Path, use_provider: object) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(REPO / "examples" / "vault", vault)
    changed = []
    for name, data in _results(vault).items():
        try:
            check_shape(name, data)
        except AssertionError:
            changed.append(name)
    assert changed == [], f"JSON shapes changed or missing: {changed} (see the module docstring)"


def test_the_cli_prints_the_verbs_json(tmp_path: Path, use_provider: object) -> None:
    """``--json`` on the command line is the verb's ``as_dict()``: the same shape as its golden file."""
    vault = tmp_path / "vault"
    shutil.copytree(REPO / "examples" / "vault", vault)
    assert run_cli(["index", "--vault", str(vault)]).exit_code == 0
    for args, verb in (
        (["status"], "status"),
        (["doctor"], "doctor"),
        (["search", "how do I cache static files"], "search"),
    ):
        result = run_cli([*args, "--vault", str(vault), "--json"])
        assert result.exit_code == 0, result.output
        golden = json.loads((GOLDEN / f"{verb}.json").read_text(encoding="utf-8"))
        assert shape(json.loads(result.stdout)) == golden, verb
