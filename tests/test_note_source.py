"""The note-loading seam: safe vault-relative paths, and bytes <-> text offsets that survive BOM and CRLF."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.chunking.source import (
    NoteReader,
    NoteSource,
    NotText,
    RawNote,
    load_note,
    note_from_bytes,
    read_note,
)
from vaultlens.errors import NoteNotFound, VaultError
from vaultlens.fsutil import sha256_hex
from vaultlens.vault.parse import decode_note, parse_note
from vaultlens.vault.safepath import check_relative, resolve_note_path
from vl_support import write_vault

CHUNKER = MarkdownChunker(target_chars=200, max_chars=300, overlap_chars=40)

NOTE = (
    "---\ntitle: Кэш и заголовки\ntags: [web]\n---\n"
    "# Кэш\n\n"
    "Браузер хранит ответ, пока не истечёт max-age. Второе предложение про ETag и «кавычки».\n\n"
    "## Заголовки `Cache-Control`\n\n"
    "```http\nCache-Control: max-age=3600\n```\n\n"
    "| ключ | значение |\n|---|---|\n| max-age | 3600 |\n\n"
    "## Итог\n\n"
    + " ".join(["Длинный абзац про политику кэширования и задержку ответа сервера."] * 8)
    + "\n\nПоследняя строка 🚀 без перевода"
)


def _check_round_trip(src: NoteSource) -> None:
    assert len(src.chunks) >= 4
    for c in src.chunks:
        # the exact bytes of the file, and decoding them gives the chunk's text
        start, end = src.byte_span(c.start, c.end)
        piece = src.raw[start:end]
        assert piece.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n") == c.text
    for offset in range(len(src.text) + 1):  # every offset, not just chunk edges
        b = src.byte_offset(offset)
        prefix = src.raw[:b].decode("utf-8")
        assert prefix.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n") == src.text[:offset]
    assert src.byte_offset(len(src.text)) == len(src.raw)


@pytest.mark.parametrize(
    ("bom", "newline"), [(False, "\n"), (True, "\n"), (False, "\r\n"), (True, "\r\n"), (True, "\r")]
)
def test_chunk_spans_are_the_exact_original_bytes(tmp_path: Path, bom: bool, newline: str) -> None:
    raw = (b"\xef\xbb\xbf" if bom else b"") + NOTE.replace("\n", newline).encode("utf-8")
    write_vault(tmp_path, {"notes/Кэш.md": raw})
    src = load_note(tmp_path, "notes/Кэш.md", CHUNKER)
    assert (src.path, src.raw, src.file_hash) == ("notes/Кэш.md", raw, sha256_hex(raw))
    assert src.text == NOTE  # normalised: no BOM, LF
    assert (src.bom, src.newline) == (bom, newline)
    _check_round_trip(src)
    if newline == "\r\n":
        assert any(b"\r\n" in src.raw[slice(*src.byte_span(c.start, c.end))] for c in src.chunks)
    # chunks, ids and hashes are those of the LF twin: loading adds nothing to what the index stores
    lf = CHUNKER.chunk(parse_note(NOTE, "notes/Кэш.md"), "notes/Кэш.md")
    assert src.chunks == lf
    # a byte-exact edit of one chunk keeps the BOM, every CRLF and every other byte
    target = src.chunks[2]
    start, end = src.byte_span(target.start, target.end)
    replacement = "Новый текст".encode()
    edited = src.raw[:start] + replacement + src.raw[end:]
    assert edited.startswith(b"\xef\xbb\xbf") == bom
    assert edited[:start] == raw[:start] and edited[start + len(replacement) :] == raw[end:]


def test_offsets_map_for_long_non_ascii_text_across_checkpoints(tmp_path: Path) -> None:
    # > 1024 code points of mixed 1-, 2-, 3- and 4-byte characters, ending exactly on a checkpoint
    body = ("Ёж ест 🦔 щи; 東京.\r\n" * 400)[: 1024 * 3]
    write_vault(tmp_path, {"big.md": body.encode("utf-8")})
    src = load_note(tmp_path, "big.md", CHUNKER)
    _check_round_trip(src)


def test_source_equals_the_indexer_pipeline(tmp_path: Path) -> None:
    raw = ("\ufeff" + NOTE.replace("\n", "\r\n")).encode("utf-8")
    write_vault(tmp_path, {"n.md": raw})
    src = load_note(tmp_path, "n.md", CHUNKER)
    text = decode_note(raw)
    note = parse_note(text, "n.md")
    assert (src.text, src.note, src.chunks) == (text, note, CHUNKER.chunk(note, "n.md"))
    # the two steps the indexer uses (read and hash, compare, then parse) give the same result
    first = read_note(tmp_path, "n.md")
    assert note_from_bytes(first, CHUNKER) == src


def test_not_text_and_empty_notes(tmp_path: Path) -> None:
    write_vault(tmp_path, {"bin.md": b"PNG\x00\x01", "cp.md": "Привет".encode("cp1251"), "empty.md": ""})
    with pytest.raises(NotText, match="binary content"):
        load_note(tmp_path, "bin.md", CHUNKER)
    with pytest.raises(NotText, match="not valid UTF-8"):
        load_note(tmp_path, "cp.md", CHUNKER)
    empty = load_note(tmp_path, "empty.md", CHUNKER)
    assert (empty.raw, empty.text, empty.chunks, empty.byte_offset(0)) == (b"", "", [], 0)


def test_missing_and_too_large_notes(tmp_path: Path) -> None:
    write_vault(tmp_path, {"Big.md": "x" * 2_500_000, "folder/Small.md": "small\n"})
    with pytest.raises(NoteNotFound, match="No note 'Nope.md' in the vault"):
        load_note(tmp_path, "Nope.md", CHUNKER)
    with pytest.raises(NoteNotFound):
        load_note(tmp_path, "Big.md/inside.md", CHUNKER)  # a file is not a folder
    with pytest.raises(VaultError, match=r"too large \(2.5 MB > 2 MB limit\)"):
        read_note(tmp_path, "Big.md", max_bytes=2_000_000)
    assert read_note(tmp_path, "folder/Small.md", max_bytes=6).raw == b"small\n"
    with pytest.raises(VaultError, match="it is a folder"):
        read_note(tmp_path, "folder")


@pytest.mark.parametrize(
    ("rel", "why"),
    [
        ("../x.md", "'..' segments are not allowed"),
        ("a/../../x", "'..' segments are not allowed"),
        ("a/../Note.md", "'..' segments are not allowed"),  # even when it would stay inside
        ("/etc/passwd", "absolute paths are not allowed"),
        ("C:/Windows/win.ini", "drive letters are not allowed"),
        ("C:x.md", "drive letters are not allowed"),
        ("..\\..\\etc\\passwd", "backslashes are not allowed"),
        ("a\\b.md", "backslashes are not allowed"),
        ("Note.md\x00.png", "NUL byte"),
        ("bad\nname.md", "control character U+000A"),
        ("evil\u202egpj.md", "bidirectional control character U+202E"),
        ("\udcff.md", "unpaired surrogate"),
        ("", "the path is empty"),
        ("./Note.md", "empty or '.' path segments"),
        ("a//Note.md", "empty or '.' path segments"),
        ("folder/", "empty or '.' path segments"),
        (".obsidian/app.json", "hidden files and folders"),
        ("a/.git/config", "hidden files and folders"),
    ],
)
def test_paths_that_could_leave_the_vault_are_refused(tmp_path: Path, rel: str, why: str) -> None:
    vault = write_vault(tmp_path / "vault", {"Note.md": "n\n", "a/b.md": "b\n", ".obsidian/app.json": "{}"})
    write_vault(tmp_path, {"x.md": "outside\n"})
    with pytest.raises(VaultError, match="Refusing note path") as info:
        load_note(vault, rel, CHUNKER)
    assert why in info.value.message
    assert not isinstance(info.value, NoteNotFound)
    with pytest.raises(VaultError):
        check_relative(rel)


def test_symlinks_that_lead_outside_are_refused(tmp_path: Path) -> None:
    outside = write_vault(tmp_path / "outside", {"Secret.md": "secret\n", "dir/Other.md": "other\n"})
    vault = write_vault(tmp_path / "vault", {"In.md": "in\n", "sub/Deep.md": "deep\n"})
    (vault / "leak.md").symlink_to(outside / "Secret.md")
    (vault / "leakdir").symlink_to(outside / "dir")
    (vault / "sub" / "up").symlink_to("../../outside")  # relative link that climbs out
    (vault / "loop.md").symlink_to("loop.md")
    for rel, shown in [
        ("leak.md", "leak.md"),
        ("leakdir/Other.md", "leakdir"),
        ("sub/up/Secret.md", "sub/up"),
    ]:
        with pytest.raises(VaultError, match="symlink that leads outside the vault") as info:
            load_note(vault, rel, CHUNKER)
        assert repr(shown) in info.value.message
    with pytest.raises(VaultError, match="symlink loop"):
        load_note(vault, "loop.md", CHUNKER)


def test_symlinks_that_stay_inside_are_followed(tmp_path: Path) -> None:
    real_vault = write_vault(tmp_path / "real", {"In.md": "in\n", "sub/Deep.md": "deep\n"})
    (real_vault / "alias.md").symlink_to("In.md")
    (real_vault / "subalias").symlink_to("sub")
    vault = tmp_path / "vault-link"
    vault.symlink_to(real_vault)  # the vault root itself may be a symlink
    assert load_note(vault, "alias.md", CHUNKER).raw == b"in\n"
    found = resolve_note_path(vault, "subalias/Deep.md")
    assert (found.rel, found.real) == ("subalias/Deep.md", real_vault.resolve() / "sub" / "Deep.md")


def test_nfd_name_on_disk_is_found_by_its_nfc_spelling(tmp_path: Path) -> None:
    nfd_folder = unicodedata.normalize("NFD", "Café")
    nfd_name = unicodedata.normalize("NFD", "Заметка про ёжика.md")  # ё decomposes to е + U+0308
    assert nfd_name != unicodedata.normalize("NFC", nfd_name)
    write_vault(tmp_path, {f"{nfd_folder}/{nfd_name}": "# Ёжик\n\nТекст.\n"})
    if not (tmp_path / nfd_folder / nfd_name).exists():
        pytest.skip("this filesystem does not store the name as given")
    nfc_rel = unicodedata.normalize("NFC", f"{nfd_folder}/{nfd_name}")
    src = load_note(tmp_path, nfc_rel, CHUNKER)
    # the path is spelled as on disk, so it equals what the scanner lists and the store keys
    assert src.path == f"{nfd_folder}/{nfd_name}"
    assert src.chunks[0].path == src.path
    assert src.raw == "# Ёжик\n\nТекст.\n".encode()


def test_an_exact_name_wins_and_several_normalised_matches_are_ambiguous(tmp_path: Path) -> None:
    # "ệ" (U+1EC7) has several spellings that are NFC-equal: NFD, and partly composed forms
    nfc = "\u1ec7.md"
    nfd = "e\u0323\u0302.md"
    partly = "\u00ea\u0323.md"  # ê + combining dot below
    assert unicodedata.normalize("NFC", nfd) == unicodedata.normalize("NFC", partly) == nfc
    write_vault(tmp_path, {nfd: "decomposed\n", partly: "partly composed\n"})
    if len(os.listdir(tmp_path)) != 2:
        pytest.skip("this filesystem normalises names")
    assert load_note(tmp_path, nfd, CHUNKER).raw == b"decomposed\n"  # an exact name wins
    assert load_note(tmp_path, partly, CHUNKER).raw == b"partly composed\n"
    with pytest.raises(VaultError, match="2 entries match '\u1ec7.md' once Unicode-normalised"):
        load_note(tmp_path, nfc, CHUNKER)  # absent as asked, and two candidates: never guess
    (tmp_path / partly).unlink()
    assert load_note(tmp_path, nfc, CHUNKER).path == nfd


def test_offsets_of_cyrillic_chunks_map_to_bytes(tmp_path: Path) -> None:
    text = "# Раздел\n\n" + "\n\n".join(f"Абзац номер {i}: ёлка, щука и съёмка." for i in range(30)) + "\n"
    write_vault(tmp_path, {"ru.md": text.replace("\n", "\r\n").encode("utf-8")})
    src = load_note(tmp_path, "ru.md", CHUNKER)
    assert len(src.chunks) > 3
    for c in src.chunks:
        start, end = src.byte_span(c.start, c.end)
        assert start == len(text[: c.start].replace("\n", "\r\n").encode("utf-8"))
        assert end - start == len(c.text.replace("\n", "\r\n").encode("utf-8"))
    with pytest.raises(ValueError, match="outside the note text"):
        src.byte_offset(len(src.text) + 1)
    with pytest.raises(ValueError, match="outside the note text"):
        src.byte_offset(-1)


def test_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")  # opening it for reading would block forever
    with pytest.raises(VaultError, match="it is not a regular file"):
        load_note(tmp_path, "pipe.md", CHUNKER)


def test_each_entry_of_a_plain_path_is_looked_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The indexer resolves every note it reads: a path without links costs one lstat per entry (the
    vault folder's own resolve aside), not a second one and a realpath walk over the whole path."""
    vault = write_vault(tmp_path / "v", {"a/b/Note.md": "x\n"}).resolve()
    seen: list[str] = []
    real_lstat = os.lstat

    def lstat(path: str | os.PathLike[str], **kw: object) -> os.stat_result:
        seen.append(os.fspath(path))
        return real_lstat(path, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "lstat", lstat)
    found = resolve_note_path(vault, "a/b/Note.md")
    assert found.real == vault / "a" / "b" / "Note.md"
    inside = [p for p in seen if p.startswith(f"{vault}{os.sep}")]
    assert sorted(inside) == sorted(str(vault / p) for p in ("a", "a/b", "a/b/Note.md"))


def test_the_reader_of_many_notes_agrees_with_read_note(tmp_path: Path) -> None:
    """NoteReader (the indexer's and the audits' reader) gives read_note's bytes, spelling and real path,
    or its error, on plain paths, links inside and out, an NFD name and a missing note."""
    outside = write_vault(tmp_path / "outside", {"Secret.md": "secret\n"})
    vault = write_vault(tmp_path / "vault", {"In.md": "in\n", "sub/Deep.md": "deep\n"})
    (vault / "alias.md").symlink_to("In.md")
    (vault / "subalias").symlink_to("sub")
    (vault / "leak.md").symlink_to(outside / "Secret.md")
    (vault / unicodedata.normalize("NFD", "Café.md")).write_text("café\n", encoding="utf-8")
    reader = NoteReader(vault)
    for rel in ("In.md", "sub/Deep.md", "alias.md", "subalias/Deep.md", "Café.md", "leak.md", "Gone.md"):
        try:
            expected: object = read_note(vault, rel)
        except VaultError as exc:
            expected = (type(exc), exc.message)
        try:
            got: object = reader.read(rel)
        except VaultError as exc:
            got = (type(exc), exc.message)
        assert got == expected, rel
        if isinstance(got, RawNote) and isinstance(expected, RawNote):
            assert got.path == expected.path and got.real == expected.real == str(
                resolve_note_path(vault, rel).real
            )
    assert reader.read("sub/Deep.md").real == str(vault.resolve() / "sub" / "Deep.md")
