"""`vaultlens write flashcards`: Spaced Repetition cards under ## Flashcards, each citing note lines that
code checks (inside the body, not blank, holding the answer); questions the note already has (compared
normalised) are not added again; the cards are one planned write, undone byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import vaultlens
from vaultlens.services.app import App
from vaultlens.services.verbs import changing
from vl_support import check_shape, run_cli, write_vault
from write_support import ToolModel, cli_args, llm_settings

NOTE = "Biology/Cells.md"
TEXT = """---
tags: [biology]
---
# Cells

The mitochondrion produces ATP for the cell.
Ribosomes build proteins from amino acids.

The nucleus holds the DNA.

## Flashcards

What produces ATP in the cell?::The mitochondrion

## Sources

Textbook, chapter 2.
"""


def card(question: str, answer: str, first: int, last: int) -> dict[str, Any]:
    return {"question": question, "answer": answer, "first_line": first, "last_line": last}


CARDS = {
    "cards": [
        card("what produces ATP in the cell", "The mitochondrion", 6, 6),  # already there (normalised)
        card("What do ribosomes build?", "Proteins, from amino acids", 7, 7),
        card("Where is the DNA?", "In the nucleus", 9, 9),
        card("Where is the DNA kept?", "In the nucleus", 9, 9),  # new question, same lines: kept
        card("What does the Golgi do?", "Packages proteins", 6, 7),  # the answer is not in lines 6-7
        card("Who wrote it?", "Textbook", 40, 41),  # outside the note
        card("Front matter?", "biology", 2, 2),  # inside the front matter
        card("Explain the cell", "Mitochondrion: ATP.\nRibosomes: proteins.", 6, 7),  # a multi-line card
    ]
}


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", {NOTE: TEXT, "Empty.md": "# Empty\n\nPlants need light.\n"})


def test_cards_are_checked_deduplicated_and_placed_in_the_section(vault: Path) -> None:
    with ToolModel(CARDS) as server:
        app = App.open(vault, llm_settings(server))
        result = vaultlens.write_flashcards(app, NOTE)
        [user] = server.user_messages()
    assert "6| The mitochondrion produces ATP for the cell." in user  # numbered lines, to cite
    data = result.as_dict()
    check_shape("write_flashcards", data)
    assert [c["question"] for c in data["cards"]] == [
        "What do ribosomes build?", "Where is the DNA?", "Where is the DNA kept?", "Explain the cell",
    ]  # fmt: skip
    reasons = {s["question"]: s["reason"] for s in data["skipped"]}
    assert reasons["what produces ATP in the cell"] == "the note already has this question"
    assert "not in lines 6-7" in reasons["What does the Golgi do?"]
    assert "not a passage" in reasons["Who wrote it?"] and "not a passage" in reasons["Front matter?"]
    before = (vault / NOTE).read_bytes()
    applied = changing.apply(app, result.plan.entry.op_id, result.plan.proposal) if result.plan else None
    assert applied is not None
    text = (vault / NOTE).read_text()
    section = text.split("## Flashcards\n", 1)[1].split("## Sources", 1)[0]
    assert section == (
        "\nWhat produces ATP in the cell?::The mitochondrion\n\n"
        "What do ribosomes build?::Proteins, from amino acids\nWhere is the DNA?::In the nucleus\n"
        "Where is the DNA kept?::In the nucleus\n\n"
        "Explain the cell\n?\nMitochondrion: ATP.\nRibosomes: proteins.\n\n"
    )
    undo = changing.plan_undo(app, applied.entry.op_id)
    changing.apply(app, undo.entry.op_id, undo.proposal)
    assert (vault / NOTE).read_bytes() == before


def test_a_second_run_adds_nothing_the_note_already_has(vault: Path) -> None:
    with ToolModel(CARDS) as server:
        app = App.open(vault, llm_settings(server))
        first = vaultlens.write_flashcards(app, NOTE)
        assert first.plan is not None
        changing.apply(app, first.plan.entry.op_id, first.plan.proposal)
        again = vaultlens.write_flashcards(app, NOTE)
    assert again.cards == () and again.plan is None
    assert {s.reason for s in again.skipped} >= {"the note already has this question"}
    assert "Explain the cell" in {s.question for s in again.skipped}  # the ? card is found again too


def test_a_note_without_the_section_gets_one_at_the_end(vault: Path) -> None:
    with ToolModel({"cards": [card("What do plants need?", "Light", 3, 3)]}) as server:
        done = run_cli(
            ["write", "flashcards", "Empty.md", "--yes", "--json", *cli_args(vault, llm_settings(server))]
        )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["applied"]["state"] == "applied"
    assert (vault / "Empty.md").read_text() == (
        "# Empty\n\nPlants need light.\n\n## Flashcards\n\n#flashcards\n\nWhat do plants need?::Light\n"
    )
