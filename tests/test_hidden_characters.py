"""What the user confirms is what is written (issue 43.1): a model's text carrying terminal control
sequences (ESC ``[2K``, a carriage return, a backspace) or a bidi override would make a diff show a
harmless line while the note receives another. Every tool refuses such model text before anyone is
asked (one retry, then ``hidden_characters``), and every diff and preview names each hidden
character (``<ESC>``, ``<U+202E>``) instead of printing it; where a note already holds one, the
diff shows it by name.

The model is ToolModel (tests/write_support.py), a scripted OpenAI-compatible server on loopback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import vaultlens
from vaultlens.errors import HiddenCharacters, InvalidInput
from vaultlens.safewrite import render_diff
from vaultlens.services.app import App
from vaultlens.services.changing import writes
from vaultlens.services.changing.review.session import PlanOptions
from vaultlens.vault.hidden import SHOWN, visible
from vl_support import run_cli, snapshot, write_vault
from write_support import ToolModel, cli_args, llm_settings

NOTE = "Notes/Plan.md"
NOTES = {
    NOTE: "# Plan\n\nThe plan has three steps.\n\nFirst we gather the notes.\n",
    "Notes/Other.md": "# Other\n\nAnother note about the plan and its steps.\n",
}
# what the terminal shows: "+A short, harmless summary sentence."; what the note would receive: both
ATTACK = "Evil: send your passwords to http://evil.example [[Secret plan]]\x1b[2K\x1b[1G\rA short, harmless summary sentence."
# every character a terminal or an editor does not show as itself
HIDDEN = ["\x1b", "\r", "\x08", "\x07", "\x00", "\x0b", "\x0c", "\x7f", "\x85", "\x9b", "\u202e", "\u2066",
          "\u200f", "\u200b", "\u2028", "\ufeff"]  # fmt: skip


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", NOTES)


def raw_controls(text: str) -> list[str]:
    """The hidden characters printed as themselves (a diff or a message may hold tabs and newlines)."""
    return sorted({c for c in text if SHOWN.fullmatch(c)})


@pytest.mark.parametrize("ch", HIDDEN, ids=[f"U+{ord(c):04X}" for c in HIDDEN])
def test_a_diff_names_every_hidden_character_and_prints_none(ch: str) -> None:
    before = b"# Plan\n\nFirst line.\n"
    after = f"# Plan\n\nFirst{ch}line.\nEnd{ch}\n".encode("utf-8", "surrogatepass")
    diff = render_diff(NOTE, before, after)
    assert raw_controls(diff) == [], diff
    assert visible(ch) in {"<ESC>", "<CR>", "<BS>", "<BEL>", "<NUL>", "<VT>", "<FF>", "<DEL>", "<BOM>"} | {
        f"<U+{ord(ch):04X}>"
    }
    added = [line for line in diff.split("\n") if line.startswith("+") and not line.startswith("+++")]
    if ch == "\r":  # a lone CR ends a line, as the note parser counts lines: named apart from a CRLF
        assert added == ["+First<CR><no LF>", "+line.", "+End<CR>"], diff
    else:  # a form feed or U+2028 inside a line does not split it
        assert added == [f"+First{visible(ch)}line.", f"+End{visible(ch)}"], diff


def test_a_note_with_classic_mac_line_endings_diffs_line_by_line() -> None:
    diff = render_diff(NOTE, b"# Plan\rFirst.\r", b"# Plan\rFirst.\rSecond.\r")
    assert diff.endswith("@@ -1,2 +1,3 @@\n # Plan<CR><no LF>\n First.<CR><no LF>\n+Second.<CR><no LF>\n"), (
        diff
    )


TOOLS: list[tuple[str, list[str], Any]] = [
    ("continue", ["write", "continue", NOTE], {"text": ATTACK}),
    ("transform", ["write", "transform", NOTE, "--lines", "3-3", "--preset", "summarize"], {"replacement": ATTACK}),
    ("flashcards", ["write", "flashcards", NOTE],
     {"cards": [{"question": "How many steps\u202e?", "answer": "three steps", "first_line": 3, "last_line": 3}]}),
    ("split titles", ["write", "split", NOTE],
     {"notes": [{"title": "Steps\u202etxt.exe", "ranges": [{"first": 3, "last": 5}], "links": []}]}),
    ("dataview", ["write", "dataview", "plans", "--insert", NOTE],
     {"query": 'LIST FROM "Notes"', "explanation": ATTACK}),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "argv", "answer"), TOOLS, ids=[t[0] for t in TOOLS])
def test_a_tool_refuses_model_text_with_control_characters_before_asking(
    vault: Path, tool: str, argv: list[str], answer: Any
) -> None:
    before = snapshot(vault)
    with ToolModel(answer) as server:
        done = run_cli([*argv, "--plan-only", *cli_args(vault, llm_settings(server))])
        asked = len(server.chats())
    assert done.exit_code == 3, done.output
    assert raw_controls(done.output) == [], done.output
    said = " ".join(done.stderr.split())
    assert "twice answered with text a terminal would not show" in said and "Planned as" not in done.output
    assert "<ESC>" in said or "<U+202E>" in said
    assert asked == 2, "one retry quoting the problem, then the refusal"
    assert snapshot(vault) == before and writes.history(vault) == []


def test_write_continue_json_names_the_error_code(vault: Path) -> None:
    with ToolModel({"text": ATTACK}) as server:
        app = App.open(vault, llm_settings(server))
        with pytest.raises(HiddenCharacters, match=r"\$\.text holds the control character <ESC>"):
            vaultlens.write_continue(app, NOTE)
        done = run_cli(["write", "continue", NOTE, "--json", *cli_args(vault, llm_settings(server))])
    assert json.loads(done.stdout)["error"]["code"] == "hidden_characters"


def test_a_batch_refuses_each_such_answer_and_shows_no_control_character(vault: Path) -> None:
    before = snapshot(vault)
    with ToolModel({"replacement": ATTACK}) as server:
        done = run_cli(["write", "batch", "--folder", "Notes", "--preset", "summarize", "--yes",
                        *cli_args(vault, llm_settings(server))])  # fmt: skip
        data = run_cli(["write", "batch", "--resume", done.stdout.split()[1].rstrip(":"), "--json",
                        *cli_args(vault, llm_settings(server))])  # fmt: skip
    assert raw_controls(done.output) == [], done.output
    assert "Evil" not in done.stdout and snapshot(vault) == before
    notes = json.loads(data.stdout)["notes"]
    assert [n["status"] for n in notes] == ["failed", "failed"]
    assert all("$.replacement holds the control character <ESC>" in n["detail"] for n in notes)


def test_a_note_that_already_holds_control_characters_shows_them_by_name_in_the_diff_and_apply(
    vault: Path,
) -> None:
    """The note's own ESC and CRLF are kept (the bytes outside the new text are the note's), and
    neither the plan's diff nor `apply`'s shows one raw."""
    held = "# Plan\r\n\r\nColours: \x1b[31mred\x1b[0m and \u202eright-to-left.\r\n"
    (vault / NOTE).write_bytes(held.encode())
    with ToolModel({"text": "A clean sentence."}) as server:
        planned = run_cli(["write", "continue", NOTE, "--plan-only", *cli_args(vault, llm_settings(server))])
    assert planned.exit_code == 0, planned.output
    assert raw_controls(planned.stdout) == [], planned.stdout
    assert " Colours: <ESC>[31mred<ESC>[0m and <U+202E>right-to-left.<CR>" in planned.stdout
    op = writes.history(vault)[0].op_id
    shown = run_cli(["apply", op, "--vault", str(vault)])  # no terminal, no --yes: shown, not written
    assert shown.exit_code == 9 and raw_controls(shown.output) == [], shown.output
    assert "+A clean sentence.<CR>" in shown.stdout and "<ESC>[31mred" in shown.stdout
    written = run_cli(["apply", op, "--yes", "--vault", str(vault)])
    assert written.exit_code == 0, written.output
    assert (vault / NOTE).read_bytes() == (held + "\r\nA clean sentence.\r\n").encode()


REVIEW_ANSWER = {
    "schema": "vaultlens.relationship.refs.v2", "relation": "partial_overlap",
    "claims": [{"id": "c1", "kind": "shared", "text": ATTACK, "evidenceA": "x:A:1", "evidenceB": "x:B:1"}],
    "explanation": {"text": "Same.", "evidence": ["c1"]},
    "recommendation": {"action": "add_link", "reason": "Link\u202e them.", "evidence": ["c1"]}, "limitations": [],
}  # fmt: skip


def test_review_rejects_an_answer_with_control_characters_and_prints_none(vault: Path) -> None:
    with ToolModel(REVIEW_ANSWER) as server:
        done = run_cli(["review", NOTE, "Notes/Other.md", "--yes", *cli_args(vault, llm_settings(server))])
        data = run_cli(
            ["review", NOTE, "Notes/Other.md", "--yes", "--json", *cli_args(vault, llm_settings(server))]
        )
    assert raw_controls(done.output) == [], done.output
    assert "hidden_character" in done.stdout and "<ESC>" in done.stdout
    diagnostics = json.loads(data.stdout)["validation"]["diagnostics"]
    assert [d["code"] for d in diagnostics] == ["hidden_character"]
    assert writes.history(vault) == []


@pytest.mark.parametrize("label", ["See\x1b[2K also", "See also\u202e", "See\nalso"])
def test_review_link_text_with_a_control_character_or_a_line_break_is_refused(
    vault: Path, label: str
) -> None:
    with ToolModel(REVIEW_ANSWER) as server:
        app = App.open(vault, llm_settings(server))
        with pytest.raises(InvalidInput, match="The link text .* holds"):
            vaultlens.review(app, NOTE, "Notes/Other.md", PlanOptions(label=label))
        assert server.chats() == [], "refused before anything is sent"
    assert writes.history(vault) == []


def test_ask_prints_a_models_hidden_characters_by_name_as_text_and_escaped_in_json(vault: Path) -> None:
    """An Ask answer is the model's free text (not refused like a tool's): the terminal gets each
    hidden character by name (``<ESC>`` survives the Markdown renderer, which drops what looks like
    an HTML tag), and ``--json`` writes them as ``\\u`` escapes, which parse back to the same answer."""
    answer = "Plan [S1]. \x1b[2J\x1b]0;pwned\x07 cleared \u202eevil\u202c and \x9b done."
    with ToolModel(answer) as server:
        settings = llm_settings(server)
        assert run_cli(["index", *cli_args(vault, settings)]).exit_code == 0
        text = run_cli(["ask", "what is the plan", *cli_args(vault, settings)])
        data = run_cli(["ask", "what is the plan", "--json", *cli_args(vault, settings)])
    assert text.exit_code == 0 and data.exit_code == 0, text.output + data.output
    assert raw_controls(text.stdout) == [] and raw_controls(data.stdout) == [], (text.stdout, data.stdout)
    assert "<ESC>[2J<ESC>]0;pwned<BEL> cleared <U+202E>evil<U+202C>" in " ".join(text.stdout.split())
    assert json.loads(data.stdout)["answer"] == answer
