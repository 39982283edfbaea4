"""The outline cache makes a second audit cheap and never stale: a changed note is read again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vaultlens.config.paths import audit_dir
from vaultlens.services.app import App
from vaultlens.services.auditing import OUTLINE_CACHE, audit_structure
from vaultlens.services.auditing import graph as graph_module
from vl_support import write_vault


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", {"a.md": "[[b]] #one\n", "b.md": "# B\n", "c.md": "[[a]]\n"})


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = graph_module._outline

    def counting(reader: object, rel: str) -> object:
        read.append(rel)
        return real(reader, rel)  # type: ignore[arg-type]

    monkeypatch.setattr(graph_module, "_outline", counting)
    return read


def test_unchanged_notes_come_from_the_cache_and_changed_ones_are_read(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = App.open(vault)
    read = _count_reads(monkeypatch)
    first = audit_structure(app.files()).report
    assert sorted(read) == ["a.md", "b.md", "c.md"]
    assert (audit_dir(vault) / OUTLINE_CACHE).is_file()

    read.clear()
    second = audit_structure(app.files()).report
    assert read == []
    assert second.as_dict() == first.as_dict()

    # same size, new content and mtime: read again (the tag changes, so a stale outline would show)
    (vault / "a.md").write_text("[[c]] #two\n", encoding="utf-8")
    stat = (vault / "a.md").stat()
    os.utime(vault / "a.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    read.clear()
    third = audit_structure(app.files()).report
    assert read == ["a.md"]
    assert third.tags["a.md"] == ["two"]
    assert [r.target for r in third.links["a.md"]] == ["c.md"]


def test_a_cache_from_other_code_or_garbage_is_ignored(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = App.open(vault)
    audit_structure(app.files())
    cache = audit_dir(vault) / OUTLINE_CACHE
    data = json.loads(cache.read_bytes())
    data["version"] = -1
    cache.write_text(json.dumps(data), encoding="utf-8")
    read = _count_reads(monkeypatch)
    audit_structure(app.files())
    assert len(read) == 3
    cache.write_bytes(b"\x00not json")
    read.clear()
    assert audit_structure(app.files()).report.tags["a.md"] == ["one"]
    assert len(read) == 3
