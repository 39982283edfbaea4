"""`vaultlens write continue`: new text at the end (or after a line) as one planned block; with
--with-context, passages of other notes found by search and re-read as Ask does (a passage edited
since indexing is not sent) go to the model as data and are listed as the sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vaultlens
from vaultlens.errors import InvalidInput
from vaultlens.services.app import App
from vaultlens.services.verbs import changing
from vl_support import check_shape, run_cli, write_vault
from write_support import ToolModel, cli_args, llm_settings

STARTER = "Bread/Starter.md"
NOTES = {
    STARTER: "# Rye starter\r\n\r\nFeed the rye starter every morning with rye flour.\r\n\r\n## Storage\r\n\r\nKeep it cold.",
    "Bread/Loaf.md": "# Rye loaf\n\nA rye loaf needs the rye starter, rye flour, salt and water.\n",
    "Bread/Crumb.md": "# Crumb\n\nThe rye starter makes an open crumb when fed with rye flour twice.\n",
    "Travel/Trains.md": "# Night trains\n\nThe night train to Vienna leaves at nine.\n",
}
MORE = "Warm water helps the starter rise."


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", NOTES)


def test_continue_appends_a_block_at_the_end_and_undo_restores_it(vault: Path) -> None:
    before = (vault / STARTER).read_bytes()
    with ToolModel({"text": MORE}) as server:
        app = App.open(vault, llm_settings(server))
        result = vaultlens.write_continue(app, STARTER)
        [user] = server.user_messages()
    assert "Keep it cold." in user and result.sources == () and result.text == MORE
    applied = changing.apply(app, result.plan.entry.op_id, result.plan.proposal)
    assert (vault / STARTER).read_bytes() == before + f"\r\n\r\n{MORE}\r\n".encode()  # the note's CRLF
    undo = changing.plan_undo(app, applied.entry.op_id)
    changing.apply(app, undo.entry.op_id, undo.proposal)
    assert (vault / STARTER).read_bytes() == before


def test_continue_after_a_line_inserts_there(vault: Path) -> None:
    with ToolModel({"text": MORE + "\n"}) as server:
        app = App.open(vault, llm_settings(server))
        result = vaultlens.write_continue(app, STARTER, after_line=3)
        with pytest.raises(InvalidInput, match="--after 99"):
            vaultlens.write_continue(app, STARTER, after_line=99)
        assert len(server.chats()) == 1
    changing.apply(app, result.plan.entry.op_id, result.plan.proposal)
    lines = (vault / STARTER).read_bytes().decode().split("\r\n")
    assert lines[2:7] == ["Feed the rye starter every morning with rye flour.", "", MORE, "", "## Storage"]


def test_with_context_sends_current_passages_of_other_notes_as_data_and_lists_them(vault: Path) -> None:
    with ToolModel({"text": MORE}) as server:
        app = App.open(vault, llm_settings(server))
        vaultlens.index(app)
        (vault / "Bread/Crumb.md").write_text("# Crumb\n\nEdited after indexing: rye starter.\n")
        result = vaultlens.write_continue(app, STARTER, with_context=True)
        [user] = server.user_messages()
    data = result.as_dict()
    check_shape("write_continue", data)
    paths = [s["path"] for s in data["sources"]]
    assert (
        "Bread/Loaf.md" in paths and STARTER not in paths and "Bread/Crumb.md" not in paths
    )  # stale: dropped
    nonce = user.split("NONCE is ", 1)[1].split(".", 1)[0]
    data_part = user.split(f"<data-{nonce}>", 1)[1].split(f"</data-{nonce}>", 1)[0]
    assert "<sources>" in data_part and "A rye loaf needs the rye starter" in data_part
    assert "Edited after indexing" not in user
    assert "(with vault context)" in result.plan.entry.summary


def test_cli_continue_json_plan_only(vault: Path) -> None:
    with ToolModel({"text": MORE}) as server:
        done = run_cli(["write", "continue", STARTER, "--json", *cli_args(vault, llm_settings(server))])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert (
        data["applied"] is None and data["plan"]["state"] == "planned" and f"+{MORE}" in data["plan"]["diff"]
    )
    assert (vault / STARTER).read_bytes() == NOTES[STARTER].encode()
