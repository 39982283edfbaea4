"""The Note view's whole-note read (issue 45 item 5): the note's file is opened and read once, and
the text shown is decoded from the very bytes its hash is of, so a note saved while the page reads
it shows as one version, never as the start of one and the rest of the other.

Real files on disk; the reads are counted (and a save injected between two of them) through
``builtins.open``, on that note's path only. The view is served by a real server on loopback.
"""

from __future__ import annotations

import builtins
import html
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

import vaultlens
from server_support import running_server
from vaultlens.errors import VaultError
from vaultlens.fsutil import sha256_hex
from vaultlens.web.pages import read_note
from vaultlens.web.state import WebState
from vl_support import write_vault

BIG = "Big.md"
EDITED = "Edited.md"


def lines(version: str, count: int) -> str:
    return "# Note\n\n" + "".join(f"Line {i} of version {version} about sourdough.\n" for i in range(count))


class _Counted:
    """A file object that counts its reads and runs ``after_read`` once the first read returned."""

    def __init__(self, inner: Any, reads: list[int], after_read: Callable[[], None] | None) -> None:
        self._inner, self._reads, self._after = inner, reads, after_read

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def read(self, *args: Any) -> Any:
        data = self._inner.read(*args)
        self._reads[0] += 1
        if self._reads[0] == 1 and self._after is not None:
            self._after()
        return data


@contextmanager
def counted_reads(
    monkeypatch: pytest.MonkeyPatch, note: Path, after_first_read: Callable[[], None] | None = None
) -> Iterator[tuple[list[int], list[int]]]:
    """([opens], [reads]) of ``note``'s file while the block runs (in every thread of this process)."""
    opens, reads = [0], [0]
    real_open = builtins.open
    target = note.resolve()

    def counting(file: Any, *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, *args, **kwargs)
        if isinstance(file, (str, Path)) and Path(file).resolve() == target:
            opens[0] += 1
            return _Counted(handle, reads, after_first_read)
        return handle

    with monkeypatch.context() as mp:
        mp.setattr(builtins, "open", counting)
        yield opens, reads


def test_the_note_view_reads_a_10_mb_note_with_one_open_and_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = lines("A", 10_000_000 // 42)  # 9.9 MB: under index.max_file_mb's default 10
    vault = write_vault(tmp_path / "vault", {BIG: text})
    raw = (vault / BIG).read_bytes()
    assert 9_500_000 < len(raw) <= 10_000_000
    app = vaultlens.App.open(vault, {"embedding.provider": "fake"})
    try:
        with counted_reads(monkeypatch, vault / BIG) as (opens, reads):
            note = read_note(WebState(app), BIG)
    finally:
        app.close()
    assert (opens[0], reads[0]) == (1, 1)  # the slices before: 495 opens, each reading the whole file
    assert note.text == text and note.length == len(text)
    assert note.content_hash == sha256_hex(raw)


def test_a_note_saved_while_the_page_reads_it_shows_one_version_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, after = lines("A", 3_000), lines("B", 3_000)  # 130,000 characters: 7 slices of 20,000
    vault = write_vault(tmp_path / "vault", {EDITED: before, "Other.md": "# Other\n\nA small note.\n"})
    note = vault / EDITED

    def saved() -> None:  # the user saves the note in their editor just after the page's first read
        note.write_bytes(after.encode("utf-8"))

    with running_server(vault, tmp_path / "home", watch=False) as server:
        with counted_reads(monkeypatch, note, saved) as (opens, _):
            page = httpx.get(server.url + "/note", params={"path": EDITED}, timeout=60)
        shown = html.unescape(page.text)
        assert page.status_code == 200
        assert "of version B" not in shown  # before: slices 2 to 7 came from the saved note
        assert opens[0] == 1
        assert all(f"Line {i} of version A " in shown for i in (0, 1_000, 2_999))
        app = server.app
        whole = vaultlens.note_text(app, EDITED)  # read again: the saved version, whole, under its hash
        assert whole.text == after and whole.content_hash == sha256_hex(after.encode("utf-8"))
        again = html.unescape(httpx.get(server.url + "/note", params={"path": EDITED}, timeout=60).text)
        assert "of version A" not in again and "Line 2999 of version B " in again


def test_a_note_over_the_size_limit_is_refused_saying_its_size_and_that_none_of_it_is_shown(
    tmp_path: Path,
) -> None:
    vault = write_vault(tmp_path / "vault", {BIG: lines("A", 2_000), "Small.md": "# Small\n\nShort.\n"})
    overrides = {"embedding.provider": "fake", "index.max_file_mb": "0.05"}
    said = f"Note {BIG!r} is too large (0.1 MB > 0.05 MB limit): vaultlens does not read it, so none of it is shown."
    with running_server(vault, tmp_path / "home", watch=False, overrides=overrides) as server:
        page = httpx.get(server.url + "/note", params={"path": BIG}, timeout=60)
        assert page.status_code == 400 and 'id="note-body"' not in page.text
        assert html.escape(said) in page.text
        with pytest.raises(VaultError) as refused:
            vaultlens.note_text(server.app, BIG)
    assert refused.value.message == said
    assert "index.max_file_mb" in (refused.value.hint or "") and "Obsidian" in (refused.value.hint or "")
