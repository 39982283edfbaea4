"""`vaultlens review` and the user's mistakes: a non-text note, a non-UTF-8 pairs file, a note too long
for one prompt, a wrong --after / --fragment, --batch mixed with two notes, a folder as --report, an
unreachable model. Each is a clear error (or a stated cut) before anything is sent, and no note changes.

The model is test_review's ReviewModel on a loopback ScriptedChatServer; a closed port stands for a
model server that is not running.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from test_review import CACHING, NOTES, SYSTEMS, ReviewModel, args, invented, link_answer, settings
from vaultlens.services.asking.ask import CONTEXT_CHARS
from vl_support import run_cli, snapshot, write_vault

LONG = "Study/Long.md"
LONG_TEXT = "# Long\n\n" + "".join(f"Paragraph {i} says something about caching.\n\n" for i in range(2_000))
LONG_TEXT += "TAIL-MARKER-NEVER-SENT\n"
HUGE_LINE = "word " * 400_000  # 2,000,000 characters on one line, under index.max_file_mb


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(
        tmp_path / "vault",
        {
            **NOTES,
            "garbage.md": b"abc\x00\x01\x02def",
            "latin1.md": "# Café\n\nCrème brûlée.\n".encode("latin-1"),
            LONG: LONG_TEXT,
            "hugeline.md": HUGE_LINE,
            "Code.md": "# Code\n\n```\nx = 1\n```\n",
        },
    )


def closed_port_settings() -> dict[str, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    return {"embedding.provider": "fake", "llm.provider": "openai-compatible", "llm.model": "review-test",
            "llm.endpoint": f"http://127.0.0.1:{port}/v1", "llm.max_retries": "0"}  # fmt: skip


@pytest.mark.parametrize(
    ("note", "why"),
    [("garbage.md", "binary content (NUL bytes)"), ("latin1.md", "not valid UTF-8")],
)
def test_a_note_that_is_not_text_is_a_clear_error_before_anything_is_sent(
    vault: Path, note: str, why: str
) -> None:
    original = snapshot(vault)
    with ReviewModel() as server:
        result = run_cli(["review", note, CACHING, "--yes", *args(vault, settings(server))])
        assert server.chats() == []
    assert result.exit_code == 2, result.output
    assert f"error: {note} is not a text note: {why}" in " ".join(result.stderr.split())
    assert "hint:" in result.stderr and "Prompt for" not in result.stderr
    assert snapshot(vault) == original


def test_a_batch_pair_with_a_binary_note_is_reported_as_failed(vault: Path, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"a": CACHING, "b": SYSTEMS}) + "\n" + json.dumps({"a": "garbage.md", "b": CACHING})
    )
    report = tmp_path / "report.md"
    with ReviewModel() as server:
        result = run_cli(["review", "--batch", str(pairs), "--report", str(report), "--yes", "--json",
                          *args(vault, settings(server))])  # fmt: skip
        assert len(server.chats()) == 1
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["valid"], data["failed"]) == (1, 1)
    assert "garbage.md is not a text note" in data["pairs"][1]["error"]["message"]
    assert "Failed: garbage.md is not a text note" in report.read_text()
    assert "1 of 2 pairs failed; the first, pair 2" in " ".join(result.stderr.split())


def test_malformed_pairs_lines_are_reported_per_line_and_the_batch_goes_on(
    vault: Path, tmp_path: Path
) -> None:
    """A typo on one line used to stop the whole batch before any pair was reviewed."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_bytes(
        b'{"a": "Caf\xe9.md", "b": "Other.md"}\n'  # not UTF-8
        + json.dumps({"a": CACHING, "b": SYSTEMS}).encode()
        + b'\n{"a": "x.md", "b": \n[1, 2]\n{"a": "Other.md"}\n\n'
        + json.dumps({"a": SYSTEMS, "b": CACHING}).encode()
    )
    report = tmp_path / "report.md"
    with ReviewModel() as server:
        result = run_cli(["review", "--batch", str(pairs), "--report", str(report), "--yes", "--json",
                          *args(vault, settings(server))])  # fmt: skip
        assert len(server.chats()) == 2
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["valid"], data["failed"]) == (2, 4)
    failed = [p["error"]["message"] for p in data["pairs"] if not p["ok"]]
    assert failed == [
        f"{pairs}:1: not UTF-8 text (byte 0xe9 at position 11 of the line).",
        f"{pairs}:3: not valid JSON (Expecting value: line 1 column 20 (char 19)).",
        f"{pairs}:4: expected a JSON object, got list.",
        f'{pairs}:5: expected a JSON object with "a" and "b" note paths.',
    ]
    text = report.read_text()
    assert text.count("### Model response") == 2 and text.count("Failed: ") == 4 and "## 4. line 4" in text
    assert "4 of 6 pairs failed; the first, pair 1" in " ".join(result.stderr.split())


def test_a_pairs_file_of_nothing_but_malformed_lines_fails_with_nothing_sent(
    vault: Path, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("not json\n")
    report = tmp_path / "report.md"
    with ReviewModel() as server:
        result = run_cli(["review", "--batch", str(pairs), "--report", str(report), "--yes", "--json",
                          *args(vault, settings(server))])  # fmt: skip
        assert server.chats() == []
    assert result.exit_code == 2, result.output
    [pair] = json.loads(result.stdout)["pairs"]
    assert pair["error"]["message"].startswith(f"{pairs}:1: not valid JSON")
    assert "no pair got a valid answer" in " ".join(result.stderr.split())


def test_a_long_note_is_cut_at_the_documented_limit_and_the_preview_says_so(vault: Path) -> None:
    with ReviewModel() as server:
        result = run_cli(["review", CACHING, LONG, "--yes", *args(vault, settings(server))])
        [body] = server.chats()
    assert result.exit_code == 0, result.output
    user = body["messages"][1]["content"]
    assert "TAIL-MARKER-NEVER-SENT" not in user and "TAIL-MARKER-NEVER-SENT" not in result.stderr
    assert f"only its first {CONTEXT_CHARS:,} of {len(LONG_TEXT):,} characters" in user
    shown = " ".join(result.stderr.split())
    assert f"Note B, {LONG}, has {len(LONG_TEXT):,} characters: only its first {CONTEXT_CHARS:,}" in shown
    assert len(user) < 3 * CONTEXT_CHARS  # the cut text plus the catalog of the blocks inside it
    assert "Planned as" in result.stdout  # the model cited B:1, a block inside the cut


def test_a_note_of_one_huge_line_is_not_echoed_or_sent_whole(vault: Path) -> None:
    original = snapshot(vault)
    with ReviewModel() as server:
        result = run_cli(
            ["review", CACHING, "hugeline.md", "--yes", "--json", *args(vault, settings(server))]
        )
        [body] = server.chats()
    assert result.exit_code == 3, result.output  # the answer cites a block that was not sent: rejected
    assert sum(len(m["content"]) for m in body["messages"]) < 3 * CONTEXT_CHARS
    data = json.loads(result.stdout)
    assert data["notes_cut"] == [
        {"side": "B", "path": "hugeline.md", "chars": len(HUGE_LINE), "sent": CONTEXT_CHARS}
    ]
    assert data["validation"]["ok"] is False  # B:1 is no block: the one line does not fit in the prompt
    assert len(result.output) < 100_000
    with ReviewModel() as server:
        shown = run_cli(["review", CACHING, "hugeline.md", "--yes", *args(vault, settings(server))])
    assert len(shown.stderr) < 3 * CONTEXT_CHARS + 2_000 and "only its first 12,000" in shown.stderr
    assert snapshot(vault) == original


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--after", "zzz"], "--after 'zzz' names no block of this review (its blocks: A:0-A:1, B:0-B:2)"),
        (["--fragment", "zzz"], "--fragment 'zzz' names no block of this review"),
        (["--after", "A:7"], "--after 'A:7' names no block of this review"),
        (["--after", "0badc0de:A:1"], "--after '0badc0de:A:1' names no block"),
        (["--after", "B:1", "--fragment", "B:0"], "are blocks of the same note"),
    ],
)
def test_a_wrong_after_or_fragment_is_refused_before_the_model_is_called(
    vault: Path, options: list[str], says: str
) -> None:
    with ReviewModel() as server:
        result = run_cli(["review", CACHING, SYSTEMS, "--yes", *options, *args(vault, settings(server))])
        assert server.chats() == []
    assert result.exit_code == 2, result.output
    assert says in " ".join(result.stderr.split()) and "hint:" in result.stderr
    assert "Prompt for" not in result.stderr


def test_after_a_code_block_is_refused_before_the_model_is_called(vault: Path) -> None:
    with ReviewModel() as server:
        result = run_cli(
            ["review", "Code.md", SYSTEMS, "--yes", "--after", "A:1", *args(vault, settings(server))]
        )
        assert server.chats() == []
    assert result.exit_code == 2, result.output
    assert "--after A:1 is a code block (lines 3-5 of Code.md)" in " ".join(result.stderr.split())


def test_after_as_side_and_number_places_the_link_there(vault: Path) -> None:
    with ReviewModel() as server:
        result = run_cli(
            ["review", CACHING, SYSTEMS, "--yes", "--json", "--after", "A:0", *args(vault, settings(server))]
        )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)["plan"]
    assert plan is not None, result.stdout
    assert " # Cache lifetime\n \n+See also: [[Systems/Cache lifetime]]\n+\n A cached value" in plan["diff"]


def test_an_unreachable_model_fails_the_batch_with_its_reason_and_a_review_hint(
    vault: Path, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        json.dumps({"a": CACHING, "b": SYSTEMS}) + "\n" + json.dumps({"a": "1", "b": "2"}) + "\n"
    )
    report = tmp_path / "report.md"
    original = snapshot(vault)
    s = closed_port_settings()
    result = run_cli(["review", "--batch", str(pairs), "--report", str(report), "--yes", *args(vault, s)])
    assert result.exit_code == 3, result.output  # a provider error, the first failure
    assert "0 valid answers, 0 rejected by the validator, 2 failed" in " ".join(result.stdout.split())
    err = " ".join(result.stderr.split())
    assert "2 of 2 pairs failed; the first, pair 1" in err and "Cannot reach" in err
    assert "no pair got a valid answer" in err
    assert "--extractive" not in err and "llm.provider" in err
    text = report.read_text()
    assert "Failed: Cannot reach" in text and "Failed: No note '1'" in text
    assert snapshot(vault) == original
    as_json = run_cli(
        ["review", "--batch", str(pairs), "--report", str(report), "--yes", "--json", *args(vault, s)]
    )
    assert as_json.exit_code == 3 and json.loads(as_json.stdout)["failed"] == 2


def test_a_batch_of_rejected_answers_exits_nonzero(vault: Path, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"a": CACHING, "b": SYSTEMS}) + "\n")
    with ReviewModel(invented) as server:
        result = run_cli(["review", "--batch", str(pairs), "--report", str(tmp_path / "r.md"), "--yes",
                          *args(vault, settings(server))])  # fmt: skip
    assert result.exit_code == 3, result.output
    assert "1 rejected by the validator" in result.stdout and "no pair got a valid answer" in result.stderr


def test_an_unreachable_model_hint_fits_review(vault: Path) -> None:
    result = run_cli(["review", CACHING, SYSTEMS, "--yes", *args(vault, closed_port_settings())])
    assert result.exit_code == 3, result.output
    err = " ".join(result.stderr.split())
    assert "Cannot reach" in err and "--extractive" not in err
    assert "--set llm.provider=NAME --set llm.endpoint=URL" in err


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ([CACHING, SYSTEMS], "Give either two notes or --batch, not both"),
        (["--after", "A:0"], "--after and --fragment choose the edit of one review"),
    ],
)
def test_batch_refuses_arguments_it_would_ignore(
    vault: Path, tmp_path: Path, extra: list[str], says: str
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"a": CACHING, "b": "Other.md"}) + "\n")
    report = tmp_path / "report.md"
    with ReviewModel() as server:
        result = run_cli(["review", *extra, "--batch", str(pairs), "--report", str(report), "--yes",
                          *args(vault, settings(server))])  # fmt: skip
        assert server.chats() == []
    assert result.exit_code == 2, result.output
    assert says in " ".join(result.stderr.split())
    assert not report.exists()


def test_report_without_batch_is_refused(vault: Path, tmp_path: Path) -> None:
    with ReviewModel() as server:
        result = run_cli(["review", CACHING, SYSTEMS, "--report", str(tmp_path / "r.md"), "--yes",
                          *args(vault, settings(server))])  # fmt: skip
        assert server.chats() == []
    assert result.exit_code == 2 and "--report is for --batch" in result.stderr


def test_a_folder_as_report_is_refused_before_any_prompt(vault: Path, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"a": CACHING, "b": SYSTEMS}) + "\n")
    folder = tmp_path / "reports"
    folder.mkdir()
    with ReviewModel() as server:
        result = run_cli(["review", "--batch", str(pairs), "--report", str(folder), "--yes",
                          *args(vault, settings(server))])  # fmt: skip
        assert server.chats() == []
    assert result.exit_code == 2, result.output
    assert f"--report {folder} is a folder" in " ".join(result.stderr.split())
    assert "Prompt for" not in result.stderr and list(folder.iterdir()) == []


def link_citing_b_only(nonce: str) -> dict[str, Any]:
    data = link_answer(nonce)
    data["claims"][0]["evidenceA"] = None
    return data


def test_no_link_is_planned_into_a_note_the_review_saw_no_whole_block_of(vault: Path) -> None:
    original = snapshot(vault)
    with ReviewModel(link_citing_b_only) as server:
        result = run_cli(
            ["review", "hugeline.md", CACHING, "--yes", "--json", *args(vault, settings(server))]
        )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["validation"]["ok"] is True and data["plan"] is None
    assert data["plan_refused"] == (
        f"No whole block of hugeline.md fits in the {CONTEXT_CHARS:,} characters the review sent; "
        "nothing was planned."
    )
    assert snapshot(vault) == original
