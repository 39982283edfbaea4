"""Every note tool asks before note text (or, for dataview, the vault's field names) goes to a remote
model: ConsentRequired names the destination and what, nothing reaches the server, and the grant
(this call's, or one remembered by the CLI) lets the same call through."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vaultlens
from vaultlens.errors import ConsentRequired
from vaultlens.services.app import App
from vl_support import run_cli, write_vault
from write_support import ToolModel, cli_args, llm_settings

NOTE = "Cells.md"
TEXT = "---\nkind: note\n---\n# Cells\n\nThe mitochondrion produces ATP.\n"
ANSWERS: dict[str, dict[str, Any]] = {
    "continue": {"text": "Ribosomes build proteins."},
    "transform": {"replacement": "Mitochondria produce ATP."},
    "dataview": {"query": "TABLE kind", "explanation": "Kinds."},
    "flashcards": {"cards": [{"question": "What makes ATP?", "answer": "The mitochondrion",
                              "first_line": 6, "last_line": 6}]},
}  # fmt: skip
CALLS: dict[str, Callable[[App, bool], Any]] = {
    "continue": lambda app, consent: vaultlens.write_continue(app, NOTE, consent=consent),
    "transform": lambda app, consent: vaultlens.write_transform(app, NOTE, 6, 6, "simplify", consent=consent),
    "dataview": lambda app, consent: vaultlens.write_dataview(app, "kinds", consent=consent),
    "flashcards": lambda app, consent: vaultlens.write_flashcards(app, NOTE, consent=consent),
}
ARGS = {
    "continue": ["continue", NOTE],
    "transform": ["transform", NOTE, "--lines", "6", "--preset", "simplify"],
    "dataview": ["dataview", "kinds"],
    "flashcards": ["flashcards", NOTE],
}


@pytest.mark.parametrize("tool", list(CALLS))
def test_a_remote_model_gets_nothing_before_consent(tmp_path: Path, tool: str) -> None:
    vault = write_vault(tmp_path / "vault", {NOTE: TEXT})
    with ToolModel(ANSWERS[tool]) as server:
        remote = llm_settings(server, remote=True)
        app = App.open(vault, remote)
        with pytest.raises(ConsentRequired) as caught:
            CALLS[tool](app, False)
        assert server.chats() == [] and caught.value.destination.startswith("LLM openai-compatible")
        refused = run_cli(["write", *ARGS[tool], *cli_args(vault, remote)])
        assert refused.exit_code == 7 and "Nothing was sent" in refused.stderr and server.chats() == []
        CALLS[tool](app, True)
        assert len(server.chats()) == 1
        agreed = run_cli(["write", *ARGS[tool], "--yes", "--plan-only", *cli_args(vault, remote)])
        assert agreed.exit_code == 0, agreed.output
        again = run_cli(["write", *ARGS[tool], "--plan-only", *cli_args(vault, remote)])  # remembered
        assert again.exit_code == 0 and "will send" not in again.stderr, again.output
        assert len(server.chats()) == 3
    assert (vault / NOTE).read_text() == TEXT
