"""Parser and chunker invariants over every note of the real vaults in ../shared (no embeddings):
exact spans, code blocks, tables and front matter whole or cut only between lines/rows, bounded
sizes, nothing lost, same output twice (the contract is in tests/chunk_contract.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunk_contract import chunk_invariant_errors
from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.vault.parse import NotText, decode_note, parse_note
from vaultlens.vault.scan import scan_vault

VAULTS = ["vaults/ru-wiki", "vaults/kepano", "vaults/fastapi-docs", "eval/dup-vault"]


@pytest.mark.slow
@pytest.mark.parametrize("name", VAULTS)
def test_every_real_note_chunks_within_the_contract(shared_dir: Path, name: str) -> None:
    root = shared_dir / name
    if not root.is_dir():
        pytest.skip(f"{root} is not present")
    scan = scan_vault(root, 10_000_000)
    assert scan.notes, f"no notes found in {root}"
    chunker = MarkdownChunker(1200, 1800, 200)
    failures: dict[str, list[str]] = {}
    n_chunks = 0
    for f in scan.notes:
        try:
            text = decode_note((root / f.path).read_bytes())
        except NotText:
            continue
        note = parse_note(text, f.path)
        chunks = chunker.chunk(note, f.path)
        n_chunks += len(chunks)
        errors = chunk_invariant_errors(note, chunks, 1800)
        if chunker.chunk(parse_note(text, f.path), f.path) != chunks:
            errors.append("a second run gives different chunks")
        if text.strip() and not chunks:
            errors.append("a non-empty note has no chunks")
        if errors:
            failures[f.path] = errors
    assert failures == {}
    assert n_chunks >= len(scan.notes) // 2


def test_the_real_vaults_are_scanned_without_surprises(shared_dir: Path) -> None:
    root = shared_dir / "vaults" / "kepano"
    if not root.is_dir():
        pytest.skip(f"{root} is not present")
    scan = scan_vault(root, 10_000_000)
    kinds = {f.kind for f in scan.files}
    assert {"note", "base"} <= kinds  # kepano ships .base files
    assert all(s.reason for s in scan.skipped)
    assert not any(f.path.startswith(".") or "/." in f.path for f in scan.files)
