"""The diff a user confirms reads back to the bytes written, and to those bytes only.

A write is confirmed by the SHA-256 of its rendered diff (the token), so the rendering must be
one-to-one: two changes with different bytes must never show the same diff. Here a reader written
from the diff's documented form alone (names in angle brackets, ``<LT>`` for a ``<`` of the text,
``<CR>`` before a CRLF's LF, ``<CR><no LF>`` for a lone CR ending a line, the unified diff's
marker for a last line with no ending) applies a diff to the ``before`` bytes; it must give the
``after`` bytes exactly, for seeded random notes mixing line endings, control characters, text
that spells those names, and bytes that are not UTF-8. Then the same through safewrite: the bytes
a confirmed diff reads back to are the bytes on disk.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

import vaultlens
from vaultlens.fsutil import sha256_hex
from vaultlens.safewrite import render_diff
from vaultlens.services.changing import writes
from vaultlens.testing import HashingEmbeddingProvider
from vaultlens.vault.parse import decode_note
from vl_support import write_vault

C0 = "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US"
CHARS = {name: chr(i) for i, name in enumerate(C0.split())} | {"DEL": "\x7f", "BOM": "\ufeff", "LT": "<"}
NAME = re.compile(r"<(" + "|".join(CHARS) + r"|U\+[0-9A-F]{4,6}|0x[0-9A-F]{2})>")
LINE = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")  # a line ends after LF, CRLF or a lone CR
HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def unnamed(shown: str) -> str:
    def char(m: re.Match[str]) -> str:
        name = m[1]
        if name.startswith("U+"):
            return chr(int(name[2:], 16))
        if name.startswith("0x"):
            return chr(0xDC00 + int(name[2:], 16))  # the byte, as surrogateescape decodes it
        return CHARS[name]

    return NAME.sub(char, shown)


def line_of(shown: str, no_ending: bool) -> str:
    """A diff line's text (its prefix gone) → the note's line, with its line ending."""
    if shown.endswith("<CR><no LF>"):
        return unnamed(shown[: -len("<CR><no LF>")]) + "\r"
    if shown.endswith("<CR>") and not no_ending:
        return unnamed(shown[: -len("<CR>")]) + "\r\n"
    return unnamed(shown) + ("" if no_ending else "\n")


def read_back(before: bytes, diff: str) -> bytes:
    """``before`` with ``diff`` applied, checking every context and removed line against it."""
    old = [line for line in LINE.split(before.decode("utf-8", "surrogateescape")) if line]
    rows = diff.split("\n")
    assert rows[-1] == "" and rows[0].startswith("--- ") and rows[1].startswith("+++ "), diff
    rows = rows[2:-1]
    new: list[str] = []
    at = 0  # lines of ``old`` used
    i = 0
    while i < len(rows):
        hunk = HUNK.fullmatch(rows[i])
        assert hunk, rows[i]
        start = int(hunk[1]) - (0 if hunk[2] == "0" else 1)
        new += old[at:start]
        at = start
        i += 1
        while i < len(rows) and not rows[i].startswith("@@"):
            kind, shown = rows[i][0], rows[i][1:]
            last = i + 1 < len(rows) and rows[i + 1] == "\\ No newline at end of file"
            line = line_of(shown, last)
            if kind in " -":
                assert old[at] == line, (old[at], line)
                at += 1
            if kind in " +":
                new.append(line)
            i += 2 if last else 1
    new += old[at:]
    return "".join(new).encode("utf-8", "surrogateescape")


ATOMS = ["a", "b", " ", "<", ">", "CR", "LT", "no LF", "<CR>", "<LT>", "<no LF>", "<U+202E>", "<0xFF>",
         "\r", "\n", "\r\n", "\x1b[2K", "\u202e", "\ufeff", "\t", "é", "\udcff"]  # fmt: skip


def random_note(rng: random.Random) -> str:
    return "".join(rng.choice(ATOMS) for _ in range(rng.randint(0, 40)))


def edited(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(text))
        cut = rng.randint(0, 3)
        text = text[:at] + random_note(rng)[: rng.randint(0, 6)] + text[at + cut :]
    return text


CASES = [
    (b"a\r\nb\r\n", b"a\rb\r\n"),  # a CRLF becomes a lone CR: both once showed as "a<CR>"
    (b"x\n", b"x\n<CR>\n"),  # the text "<CR>" once showed as a CRLF line
    (b"x\n", b"x\n\r\n"),
    (b"x\n", b"x\n<LT>CR>\n"),
    (b"one\rtwo\n", b"one\rtwo\nthree"),
    (b"# Plan\rFirst.\r", b"# Plan\rFirst.\rSecond.\r"),
    (b"x\n", b"x\n\xff bytes that are not UTF-8\n"),
    (b"kept\x1b[2K\rfake line\r\n", b"kept\x1b[2K\rreal line\r\n"),
]


@pytest.mark.parametrize("seed", range(4))
def test_every_diff_reads_back_to_exactly_the_bytes_after(seed: int) -> None:
    rng = random.Random(seed)
    cases = [*CASES] if seed == 0 else []
    for _ in range(150):
        text = random_note(rng)
        cases.append(
            (text.encode("utf-8", "surrogateescape"), edited(rng, text).encode("utf-8", "surrogateescape"))
        )
    tokens: dict[str, bytes] = {}
    for before, after in cases:
        diff = render_diff("n.md", before, after)
        assert read_back(before, diff) == after, (before, after, diff)
        token = sha256_hex(diff)  # what a confirmation names
        assert tokens.setdefault(f"{before!r}{token}", after) == after, (before, after, diff)


def test_a_lone_cr_ending_a_line_reads_apart_from_a_crlf_and_keeps_the_notes_line_numbers() -> None:
    diff = render_diff("n.md", b"one\rtwo\nthree\r\n", b"one\rtwo\nthree\r")
    assert diff.endswith("@@ -1,3 +1,3 @@\n one<CR><no LF>\n two\n-three<CR>\n+three<CR><no LF>\n"), diff
    # line 3 of the diff is line 3 of the note, as the parser, the note view and --lines count
    assert decode_note(b"one\rtwo\nthree\r\n").split("\n")[2] == "three"


def test_the_bytes_written_are_the_bytes_the_confirmed_diff_reads_back_to(tmp_path: Path) -> None:
    before = b"# Log\r\nkept\x1b[2K\rfake line\r\nSee <CR> and <U+202E> in text.\n"
    after = b"# Log\r\nkept\x1b[2K\rfake line\rAdded <LT>CR> line.\r\nSee <CR> and <U+202E> in text.\n"
    vault = write_vault(tmp_path / "vault", {"Log.md": before})
    app = vaultlens.App.open(vault, provider=HashingEmbeddingProvider())
    try:
        planned = writes.plan_write(app.vault, "Log.md", after, "edit")
        shown = planned.diff  # what the user reads and confirms
        writes.apply(app.vault, planned.entry.op_id, sha256_hex(shown))
    finally:
        app.close()
    assert (vault / "Log.md").read_bytes() == read_back(before, shown) == after
