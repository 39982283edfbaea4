"""Incremental indexing with the real model on a real SQLite store: what is embedded, what is reused,
what is deleted, and what status says about it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import vaultlens as services
from scripted_server import ScriptedEmbeddingServer
from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.errors import IndexEmpty, IndexLocked, SpaceMismatch
from vaultlens.index.indexing.texts import embed_text
from vaultlens.services.app import App
from vaultlens.vault.parse import decode_note, parse_note
from vl_support import (
    BILINGUAL,
    RecordingProvider,
    bilingual_vault,
    chunk_keys,
    db_rows,
    file_records,
    run_cli,
    write_vault,
)

pytestmark = pytest.mark.usefixtures("store_under_test")  # VAULTLENS_TEST_STORE=postgres: both stores


def expected_embed_texts(
    vault: Path, rel: str, chunker: MarkdownChunker | None = None
) -> dict[tuple[str, str], str]:
    """(chunk id, content hash) -> the text the model must see, computed from the file on disk."""
    text = decode_note((vault / rel).read_bytes())
    note = parse_note(text, rel)
    chunks = (chunker or MarkdownChunker()).chunk(note, rel)
    return {(c.id, c.content_hash): embed_text(note.title, c) for c in chunks}


def all_expected(vault: Path, chunker: MarkdownChunker | None = None) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for rel in BILINGUAL:
        out.update(expected_embed_texts(vault, rel, chunker))
    return out


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return bilingual_vault(tmp_path / "vault")


@pytest.fixture
def rec(use_provider) -> RecordingProvider:
    return RecordingProvider(use_provider)


def index(vault: Path, rec: RecordingProvider, **overrides: str):
    rec.reset()
    app = App.open(vault, overrides or None, provider=rec)
    try:
        return services.index(app)
    finally:
        app.close()


def status(vault: Path) -> dict:
    app = App.open(vault)
    try:
        return services.status(app).as_dict()
    finally:
        app.close()


def store_keys(vault: Path) -> set[tuple[str, str]]:
    return chunk_keys(App.open(vault).index_dir)


def chunk_paths(vault: Path) -> set[str]:
    """The note path of every stored chunk, read through the store contract (any backend)."""
    app = App.open(vault)
    try:
        with app.reading() as store:
            keys, _, _ = store.chunk_layout()
            return {c.path for c in store.chunks(keys.tolist()).values()}
    finally:
        app.close()


def test_the_index_stores_no_link_or_tag_from_indented_code_and_keeps_emoji_tags(
    tmp_path: Path, rec: RecordingProvider
) -> None:
    note = "# N\n\nSee [[Real]] #🚀launch\n\n    [[InCode]] #codetag\n"
    vault = write_vault(tmp_path / "v", {"N.md": note, "Real.md": "# Real\n", "InCode.md": "# InCode\n"})
    index(vault, rec)
    app = App.open(vault)
    try:
        assert file_records(app)["N.md"].tags == ("🚀launch",)
        with app.reading() as store:
            assert [link.target for link in store.links(["N.md"])["N.md"]] == ["Real"]
    finally:
        app.close()


def test_first_run_indexes_every_note(vault: Path, rec: RecordingProvider) -> None:
    stats = index(vault, rec)
    expected = all_expected(vault)
    assert stats.files_scanned == stats.files_changed == len(BILINGUAL)
    assert stats.chunks_embedded == len(set(expected.values()))
    assert sorted(rec.texts) == sorted(set(expected.values()))
    assert store_keys(vault) == set(expected)

    info = status(vault)
    assert info["files"] == {"indexed": len(BILINGUAL), "skipped": 0, "failed": 0}
    assert info["notes"] == len(BILINGUAL)
    assert info["chunks"] == info["vectors"] == len(expected)
    assert info["size_bytes"] > 0
    assert info["embedding_space"]["label"] == "local:use-multilingual-v3 (512-d)"
    assert info["configured_space_matches"] is True
    assert info["problems"] == []
    run = info["last_run"]
    assert (run["status"], run["files_scanned"], run["chunks_embedded"]) == ("ok", 8, len(expected))

    app = App.open(vault)
    records = file_records(app)
    assert records["Кулинария/Закваска.md"].tags == ("выпечка", "хлеб")
    assert records["Кулинария/Закваска.md"].aliases == ("Ржаная закваска",)
    assert records["Кулинария/Закваска.md"].title == "Закваска"
    assert services.doctor(app).healthy
    app.close()


def test_unchanged_vault_embeds_nothing(vault: Path, rec: RecordingProvider) -> None:
    index(vault, rec)
    before = store_keys(vault)
    stats = index(vault, rec)
    assert rec.calls == []
    assert (stats.files_changed, stats.chunks_embedded, stats.chunks_deleted) == (0, 0, 0)
    assert stats.files_scanned == len(BILINGUAL)
    assert store_keys(vault) == before


def test_touching_a_file_embeds_nothing_and_refreshes_its_stamp(vault: Path, rec: RecordingProvider) -> None:
    index(vault, rec)
    rel = "Tech/HTTP caching.md"
    later = time.time() + 120
    os.utime(vault / rel, (later, later))
    stats = index(vault, rec)
    assert rec.calls == []
    assert (stats.files_changed, stats.chunks_embedded) == (0, 0)
    app = App.open(vault)
    assert file_records(app)[rel].mtime_ns == (vault / rel).stat().st_mtime_ns
    app.close()


def test_editing_one_paragraph_embeds_exactly_the_changed_chunk(vault: Path, rec: RecordingProvider) -> None:
    rel = "Tech/HTTP caching.md"
    index(vault, rec)
    before = expected_embed_texts(vault, rel)
    path = vault / rel
    path.write_text(
        path.read_text().replace("Weak ETags are fine", "Weak ETags (W/) are fine"), encoding="utf-8"
    )
    after = expected_embed_texts(vault, rel)
    new_keys = set(after) - set(before)
    assert len(before) == len(after) >= 3 and len(new_keys) == 1  # the fixture really is multi-chunk

    stats = index(vault, rec)
    assert stats.files_changed == 1
    assert stats.chunks_embedded == len(new_keys)
    assert rec.texts == [after[k] for k in new_keys]
    assert "Weak ETags (W/)" in rec.texts[0]
    assert stats.chunks_reused == len(after) - len(new_keys)
    assert stats.chunks_deleted == len(set(before) - set(after))
    keys = store_keys(vault)
    assert set(after) <= keys and not (set(before) - set(after)) & keys


@pytest.mark.sqlite_only("reads the chunks, files, links and vectors tables of the SQLite file")
def test_a_deleted_note_leaves_nothing_behind(vault: Path, rec: RecordingProvider) -> None:
    rel = "Путешествия/Грузия 2023.md"
    index(vault, rec)
    gone = expected_embed_texts(vault, rel)
    (vault / rel).unlink()
    stats = index(vault, rec)
    assert (stats.files_deleted, stats.chunks_deleted, stats.chunks_embedded) == (1, len(gone), 0)
    app = App.open(vault)
    d = app.index_dir
    assert db_rows(d, "SELECT COUNT(*) FROM chunks WHERE path = ?", (rel,)) == [(0,)]
    assert db_rows(d, "SELECT COUNT(*) FROM files WHERE path = ?", (rel,)) == [(0,)]
    assert db_rows(d, "SELECT COUNT(*) FROM links WHERE src = ?", (rel,)) == [(0,)]
    # vectors are keyed by the embedded text; the deleted note's vectors are dropped too
    hashes = [hashlib.sha256(t.encode()).hexdigest() for t in gone.values()]
    marks = ",".join("?" * len(hashes))
    assert db_rows(d, f"SELECT COUNT(*) FROM vectors WHERE embed_hash IN ({marks})", hashes) == [(0,)]
    assert services.doctor(app).healthy
    hits = services.search(app, "Хачапури и хинкали в Тбилиси")
    assert rel not in [h.path for h in hits]
    app.close()


def test_moving_a_note_to_another_folder_embeds_nothing(vault: Path, rec: RecordingProvider) -> None:
    index(vault, rec)
    old, new = "Tech/HTTP caching.md", "Archive/Web/HTTP caching.md"
    n = len(expected_embed_texts(vault, old))
    (vault / "Archive/Web").mkdir(parents=True)
    shutil.move(vault / old, vault / new)
    stats = index(vault, rec)
    assert rec.calls == []
    assert stats.chunks_embedded == 0
    assert (stats.files_deleted, stats.files_changed) == (1, 1)
    assert stats.chunks_reused == n
    keys = store_keys(vault)
    assert set(expected_embed_texts(vault, new)) <= keys
    assert old not in chunk_paths(vault)


def test_renaming_a_note_with_a_title_embeds_nothing(vault: Path, rec: RecordingProvider) -> None:
    write_vault(vault, {"Draft.md": "---\ntitle: Release checklist\n---\n# Steps\n\nTag, build, publish.\n"})
    index(vault, rec)
    (vault / "Draft.md").rename(vault / "Release checklist (final).md")
    stats = index(vault, rec)
    assert (stats.chunks_embedded, rec.calls) == (0, [])


def test_renaming_a_note_without_a_title_re_embeds_only_that_note(
    vault: Path, rec: RecordingProvider
) -> None:
    """The file name is the note's title and the title is part of what the model sees."""
    index(vault, rec)
    (vault / "Books/Thinking in Systems.md").rename(vault / "Books/Meadows - Thinking in Systems.md")
    stats = index(vault, rec)
    expected = expected_embed_texts(vault, "Books/Meadows - Thinking in Systems.md")
    assert sorted(rec.texts) == sorted(expected.values())
    assert stats.chunks_embedded == len(expected)


def test_clear_stays_cleared_after_reopening(vault: Path, rec: RecordingProvider) -> None:
    index(vault, rec)
    app = App.open(vault)
    services.clear(app)
    app.close()

    reopened = App.open(vault)  # a new process would do exactly this
    info = services.status(reopened).as_dict()
    assert info["indexed"] is True
    assert (info["notes"], info["chunks"], info["vectors"]) == (0, 0, 0)
    assert info["files"] == {"indexed": 0, "skipped": 0, "failed": 0}
    assert not list(reopened.index_dir.glob("matrix-*"))  # no stale vector cache survives
    with pytest.raises(IndexEmpty, match="cleared"):
        services.search(reopened, "закваска")
    assert services.doctor(reopened).healthy
    reopened.close()

    stats = index(vault, rec)  # indexing again is the explicit way back
    assert stats.chunks_embedded == len(set(all_expected(vault).values()))


def test_a_different_embedding_space_is_refused_with_a_way_out(vault: Path, rec: RecordingProvider) -> None:
    index(vault, rec)
    before = store_keys(vault)
    with ScriptedEmbeddingServer(dims=8) as server:
        app = App.open(vault, {"embedding.provider": "ollama", "embedding.endpoint": server.url})
        with pytest.raises(SpaceMismatch) as info:
            services.index(app)
        assert "local:use-multilingual-v3 (512-d)" in str(info.value)
        assert "vaultlens rebuild" in str(info.value)
        with pytest.raises(SpaceMismatch):
            services.search(app, "anything")
        assert services.status(app).as_dict()["configured_space_matches"] is False
        app.close()
        assert server.requests == []  # refused before a single text was sent
        assert store_keys(vault) == before

        result = run_cli(["search", "закваска", "--vault", str(vault), "--set", "embedding.provider=ollama",
                          "--set", f"embedding.endpoint={server.url}"])  # fmt: skip
        assert result.exit_code == SpaceMismatch.exit_code
        assert "vaultlens rebuild" in result.stderr and "Traceback" not in result.output

        rebuilt = run_cli(["rebuild", "--json", "--vault", str(vault), "--set", "embedding.provider=ollama",
                           "--set", f"embedding.endpoint={server.url}"])  # fmt: skip
        assert rebuilt.exit_code == 0, rebuilt.output
    rebuilt_status = status(vault)
    assert rebuilt_status["embedding_space"]["provider"] == "ollama"
    assert rebuilt_status["chunks"] == len(before)


def _hold_lock(index_dir: Path) -> subprocess.Popen[str]:
    code = (
        "import sys, time; from pathlib import Path; from vaultlens.index.lock import WriterLock\n"
        "lock = WriterLock(Path(sys.argv[1])); lock.acquire(); print('locked', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(index_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_writer_is_refused_naming_the_holder(vault: Path, rec: RecordingProvider) -> None:
    index(vault, rec)
    app = App.open(vault)
    holder = _hold_lock(app.index_dir)
    try:
        with pytest.raises(IndexLocked) as info:
            index(vault, rec)
        assert f"PID {holder.pid}" in str(info.value)
        with pytest.raises(IndexLocked):
            services.clear(app)
        cli = run_cli(["index", "--vault", str(vault)])
        assert cli.exit_code == IndexLocked.exit_code
        assert f"PID {holder.pid}" in cli.stderr
        # readers are not blocked by the writer lock
        assert services.search(app, "закваска")[0].path == "Кулинария/Закваска.md"
    finally:
        holder.kill()
        holder.wait()
        app.close()
    # the kernel released the lock with the process: no stale lock
    assert index(vault, rec).chunks_embedded == 0


def test_odd_file_names_are_indexed(tmp_path: Path, rec: RecordingProvider) -> None:
    names = ["with space.md", "Привет мир.md", "🚀 launch plan.md", "-leading-dash.md", "a/b c/Ω omega.md"]
    vault = write_vault(tmp_path / "odd", {n: f"# {n}\n\nSome text about {n}.\n" for n in names})
    stats = index(vault, rec)
    assert stats.files_changed == len(names)
    info = status(vault)
    assert info["files"]["indexed"] == len(names) and info["problems"] == []
    app = App.open(vault)
    assert sorted(file_records(app)) == sorted(names)
    app.close()


def test_a_note_that_turns_binary_is_dropped_then_comes_back(vault: Path, rec: RecordingProvider) -> None:
    rel = "Books/Thinking in Systems.md"
    index(vault, rec)
    original = (vault / rel).read_bytes()
    (vault / rel).write_bytes(b"\x00\x01binary now")
    stats = index(vault, rec)
    assert stats.files_skipped == 1
    info = status(vault)
    assert {
        "path": rel,
        "status": "skipped",
        "reason": "binary content (NUL bytes), not a text note",
    } in info["problems"]
    assert rel not in chunk_paths(vault)
    (vault / rel).write_bytes(original)
    stats = index(vault, rec)
    assert stats.files_changed == 1
    assert stats.chunks_embedded == len(expected_embed_texts(vault, rel))  # its vectors were dropped
    assert status(vault)["problems"] == []


def test_edits_made_while_vaultlens_was_off_are_reconciled(vault: Path, rec: RecordingProvider) -> None:
    index(vault, rec)
    write_vault(vault, {"Inbox/New idea.md": "# New idea\n\nA brand new thought about gardens.\n"})
    (vault / "Health/Marathon training.md").unlink()
    p = vault / "Финансы/Личный бюджет.md"
    p.write_text(p.read_text() + "\nДобавил категорию «подарки».\n", encoding="utf-8")
    stats = index(vault, rec)
    assert (stats.files_changed, stats.files_deleted) == (2, 1)
    assert store_keys(vault) == {
        k
        for rel in [*BILINGUAL, "Inbox/New idea.md"]
        if (vault / rel).exists()
        for k in expected_embed_texts(vault, rel)
    }


def test_new_chunk_sizes_rechunk_every_note_and_embed_only_new_texts(
    vault: Path, rec: RecordingProvider
) -> None:
    index(vault, rec)
    old_texts = set(all_expected(vault).values())
    smaller = {"index.chunk_target": "400", "index.chunk_max": "600", "index.chunk_overlap": "100"}
    stats = index(vault, rec, **smaller)
    new = all_expected(vault, MarkdownChunker(400, 600, 100))
    assert set(new) != set(all_expected(vault))  # the sizes really change some chunks
    assert stats.files_changed == len(BILINGUAL)
    assert sorted(rec.texts) == sorted(set(new.values()) - old_texts)  # unchanged chunk texts are reused
    assert store_keys(vault) == set(new)
    again = index(vault, rec, **smaller)
    assert (again.files_changed, again.chunks_embedded, rec.calls) == (0, 0, [])


@pytest.mark.sqlite_only("counts the passes of SQLiteStore.note_texts")
def test_the_script_mix_counted_while_writing_equals_a_recount_of_the_store(
    vault: Path, rec: RecordingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first index counts each note's script mix as it commits it; the sums equal a pass over the
    stored chunk texts (what a later run does), on notes split into overlapping chunks, front matter
    alone, code spans, links and URLs in both scripts."""
    from vaultlens.chunking.scripts import ScriptMix, script_mix
    from vaultlens.index.indexing.tier_fill import stored_scripts
    from vaultlens.index.sqlite.store import SQLiteStore

    write_vault(
        vault,
        {
            "Only front matter.md": "---\ntitle: Заголовок only\ntags: [x]\n---\n",
            "Code.md": "# Код `inline код` and [link](http://пример.рф/путь)\n\n"
            + "Текст text {\n#id} <span>тег</span> https://example.com/ёж [[Цель|shown показ]]\n\n" * 12,
        },
    )
    passes: list[int] = []
    real = SQLiteStore.note_texts

    def note_texts(self: SQLiteStore):  # type: ignore[no-untyped-def]
        passes.append(1)
        return real(self)

    monkeypatch.setattr(SQLiteStore, "note_texts", note_texts)

    def recount() -> tuple[ScriptMix | None, ScriptMix]:
        app = App.open(vault)
        try:
            with app.reading() as store:
                assert isinstance(store, SQLiteStore)
                return stored_scripts(store), sum((script_mix(n.body) for n in real(store)), ScriptMix())
        finally:
            app.close()

    small = {"index.chunk_target": "200", "index.chunk_max": "300", "index.chunk_overlap": "60"}
    index(vault, rec, **small)
    assert passes == []  # counted while writing, no pass over the store
    recorded, recounted = recount()
    assert recorded == recounted and recounted.cyrillic > 100 and recounted.latin > 100
    (vault / "Code.md").write_text("# Код\n\nНовый текст only.\n", encoding="utf-8")
    index(vault, rec, **small)
    assert passes == [1]  # a later run recounts the store
    recorded, recounted = recount()
    assert recorded == recounted
