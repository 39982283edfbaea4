"""Model output is untrusted data, checked in code before anything is shown (issue 43.4): split never
cuts a code block (in a list item or a quote either) nor makes a part's first lines front matter;
continue never writes front matter into a note nor echoes it; transform never plans a deletion for an
empty answer; flashcard questions carry no heading, link or embed; ``--after`` never points inside a
code block or a table; and an answer has a size cap past which nothing more is read.

The model is ToolModel (tests/write_support.py) or a ScriptedChatServer on loopback.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

import vaultlens
from scripted_chat_server import ChatStep, ScriptedChatServer
from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.chunking.source import NoteSource, RawNote, note_from_bytes
from vaultlens.errors import AnswerTooLong, InvalidInput, InvalidModelOutput, PlanRefused
from vaultlens.fsutil import sha256_hex
from vaultlens.llm.base import MAX_ANSWER_CHARS, Message
from vaultlens.llm.http_chat import OpenAICompatibleChat
from vaultlens.services.app import App
from vaultlens.services.changing import writes
from vaultlens.services.restructuring import split
from vl_support import snapshot, write_vault
from write_support import ToolModel, llm_settings


def source_of(text: str, path: str = "Folder/Note.md") -> NoteSource:
    raw = text.encode()
    return note_from_bytes(RawNote(path, raw, sha256_hex(raw)), MarkdownChunker())


def plan_of(*ranges: tuple[str, int, int]) -> dict[str, Any]:
    return {"notes": [{"title": t, "ranges": [{"first": a, "last": b}], "links": []} for t, a, b in ranges]}


# ---- split --------------------------------------------------------------------------------------------

IN_A_QUOTE = "# Shell\n\nIntro.\n\n> Run this:\n> ```sh\n> make build\n>\n> make test\n> ```\n\nAfter.\n"
IN_A_NESTED_LIST = "# Steps\n\n- Build\n  - Compile:\n\n    ```sh\n    make build\n\n    make test\n    ```\n- Ship\n\nAfter.\n"


@pytest.mark.parametrize(
    ("text", "cut", "block"),
    [(IN_A_QUOTE, 8, "6-10"), (IN_A_NESTED_LIST, 8, "6-10")],
    ids=["in a block quote", "in a nested list item"],
)
def test_split_refuses_a_cut_through_a_code_block_inside_a_list_or_quote(
    text: str, cut: int, block: str
) -> None:
    source = source_of(text)
    lines = split.note_lines(source.text)
    answer = plan_of(("Before", 3, cut), ("After", cut + 1, len(lines)))
    with pytest.raises(PlanRefused, match=f"cuts the code block of lines {block}"):
        split.partition(answer, lines, 0)
    whole = plan_of(("Before", 3, 10), ("After", 11, len(lines)))
    assert split.partition(whole, lines, 0).parts, "a plan around the block is fine"


def test_a_split_part_that_would_start_with_front_matter_is_refused() -> None:
    text = "# Parts\n\nPart one.\n\n---\n\nPart two.\n\n---\n\nPart three.\n"
    source = source_of(text)
    with pytest.raises(PlanRefused, match=r"starts 'Two' with line 5 \('---'\).*front matter"):
        split.propose(source, plan_of(("Two", 5, 9), ("Three", 10, 11)), ["Note"], index=False)
    fine = split.propose(source, plan_of(("Two", 6, 8), ("Three", 10, 11)), ["Note"], index=False)
    assert len(fine.changes) == 2


# ---- continue -----------------------------------------------------------------------------------------

STEPS = "Notes/Steps.md"
STEPS_TEXT = (
    "# Steps\n\nGather the flour and the water.\nMix them into a rough dough.\nLet it rest an hour.\n"
)


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(
        tmp_path / "vault",
        {
            STEPS: STEPS_TEXT,
            "Notes/Empty.md": "",
            "Notes/Code.md": "# Code\n\n- Run:\n\n  ```sh\n  make\n\n  make test\n  ```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nEnd.\n",
        },
    )


@pytest.mark.parametrize(
    ("note", "text", "match"),
    [
        ("Notes/Empty.md", "---\ntitle: Injected\ntags: [x]\n---\nBody.", "front matter"),
        (STEPS, STEPS_TEXT + "\nThen bake it at 230 degrees.", "repeats 3 of the 3 lines"),
        (
            STEPS,
            "Mix them into a rough dough.\nLet it rest an hour.\nThen bake it.",
            "repeats 2 of the 3 lines",
        ),
    ],
    ids=["front matter into an empty note", "the whole note echoed", "half the note echoed"],
)
def test_continue_refuses_front_matter_and_an_echo_of_the_note(
    vault: Path, note: str, text: str, match: str
) -> None:
    before = snapshot(vault)
    with ToolModel({"text": text}) as server:
        app = App.open(vault, llm_settings(server))
        with pytest.raises(PlanRefused, match=match):
            vaultlens.write_continue(app, note)
    assert snapshot(vault) == before and writes.history(vault) == []


def test_continue_still_adds_new_text_that_repeats_a_line_or_two_of_a_long_note(vault: Path) -> None:
    with ToolModel(
        {"text": "Let it rest an hour.\nThen shape the loaf and bake it at 230 degrees."}
    ) as server:
        app = App.open(vault, llm_settings(server))
        result = vaultlens.write_continue(app, STEPS)
    assert "+Then shape the loaf" in result.plan.diff


@pytest.mark.parametrize(
    ("after", "what", "block"),
    [(5, "a code block", "5-9"), (8, "a code block", "5-9"), (11, "a table", "11-13")],
)
def test_after_a_line_inside_a_code_block_or_a_table_is_refused_before_the_model_is_asked(
    vault: Path, after: int, what: str, block: str
) -> None:
    with ToolModel({"text": "New text."}) as server:
        app = App.open(vault, llm_settings(server))
        with pytest.raises(
            InvalidInput,
            match=f"--after {after} is inside {what} of Notes/Code.md \\(lines {block}\\): line {after} is",
        ):
            vaultlens.write_continue(app, "Notes/Code.md", after_line=after)
        with pytest.raises(InvalidInput, match=f"--after {after} is inside {what}"):
            vaultlens.write_dataview(app, "notes", insert="Notes/Code.md", after_line=after)
        assert server.chats() == []
        done = vaultlens.write_continue(app, "Notes/Code.md", after_line=int(block.split("-")[1]))
    assert done.plan is not None, "after the block's last line is fine"


# ---- transform and flashcards -------------------------------------------------------------------------


@pytest.mark.parametrize("replacement", ["", "\n\n", "   \n"])
def test_transform_refuses_an_empty_replacement_instead_of_deleting_the_selection(
    vault: Path, replacement: str
) -> None:
    with ToolModel({"replacement": replacement}) as server:
        app = App.open(vault, llm_settings(server))
        with pytest.raises(InvalidModelOutput, match="empty replacement for lines 3-4 .* would delete them"):
            vaultlens.write_transform(app, STEPS, 3, 4, preset="summarize")
    assert writes.history(vault) == []


def test_flashcards_with_a_heading_a_link_or_an_embed_are_not_added(vault: Path) -> None:
    def card(question: str, answer: str = "flour and water") -> dict[str, Any]:
        return {"question": question, "answer": answer, "first_line": 3, "last_line": 3}

    cards = [
        card("## What do you gather?"),
        card("What do you gather for [[Secret plan]]?"),
        card("What do you gather? ![[evil.png]]"),
        card("What do you [gather](http://evil.example)?"),
        card("What do you gather first?", "flour and water\n# Injected section"),
        card("What do you gather?"),
    ]
    with ToolModel({"cards": cards}) as server:
        app = App.open(vault, llm_settings(server))
        result = vaultlens.write_flashcards(app, STEPS)
    assert [c.question for c in result.cards] == ["What do you gather?"]
    reasons = [s.reason for s in result.skipped]
    assert (
        reasons[0]
        == reasons[4]
        == "it contains a Markdown heading, which would start a new section of the note"
    )
    assert all("its question contains a link or an embed" in r for r in reasons[1:4])
    assert result.plan is not None
    assert "[[Secret plan]]" not in result.plan.diff and "Injected" not in result.plan.diff


# ---- the size of an answer ----------------------------------------------------------------------------


def test_an_answer_of_three_megabytes_is_refused(vault: Path) -> None:
    with ToolModel({"text": "word " * 600_000}) as server:
        app = App.open(vault, llm_settings(server))
        with pytest.raises(AnswerTooLong, match=f"more than {MAX_ANSWER_CHARS:,} characters"):
            vaultlens.write_continue(app, STEPS)
        assert len(server.chats()) == 1, "no retry: the answer was refused, not found invalid"
    assert writes.history(vault) == []


class EndlessModel(ScriptedChatServer):
    """Streams pieces of an answer forever (or until 50 MB): only a reader that stops ends the test."""

    def __init__(self, one_line: bool) -> None:
        super().__init__()
        self.one_line = one_line
        self.written = 0

    def _respond(self, handler: BaseHTTPRequestHandler, body: Any, step: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        chunk = {"choices": [{"index": 0, "delta": {"content": "x" * 10_000}, "finish_reason": None}]}
        piece = (
            (b'data: {"choices": [{"delta": {"content": "' + b"x" * 65_536)
            if self.one_line
            else (f"data: {json.dumps(chunk)}\n\n".encode())
        )
        try:
            while self.written < 50_000_000:
                handler.wfile.write(piece)
                self.written += len(piece)
        except OSError:  # the client closed the connection: it stopped reading
            return


@pytest.mark.parametrize("one_line", [False, True], ids=["endless pieces", "one endless line"])
def test_the_stream_reader_stops_at_the_cap(one_line: bool) -> None:
    with EndlessModel(one_line) as server:
        provider = _provider(server)
        try:
            with pytest.raises(AnswerTooLong):
                provider.chat([Message("user", "hi")])
        finally:
            provider.close()
        time.sleep(0.2)
        # what the server wrote past the cap sat in the loopback socket buffers (a few MB)
        assert server.written < 25_000_000, "reading stopped at the cap, long before the stream's end"


def _provider(server: ScriptedChatServer) -> OpenAICompatibleChat:
    return OpenAICompatibleChat("cap-test", server.url + "/v1", max_retries=0, read_timeout_s=5)


def test_a_normal_answer_is_not_capped(vault: Path) -> None:
    with ScriptedChatServer(reply="y" * 50_000, script=[ChatStep()]) as server:
        provider = _provider(server)
        try:
            assert provider.chat([Message("user", "hi")]).text == "y" * 50_000
        finally:
            provider.close()
