"""The fragment catalog of a candidate pair, built by code before any model call.

Each top-level block of both notes (paragraph, list, quote, heading, code, table) becomes a
fragment: its side (``A`` or ``B``), its exact text and lines, and an id ``<nonce>:<side>:<n>``
whose nonce is random per request, so a model cannot reuse ids from another review or guess
them. The model cites fragments by id only; every quote a user sees is the catalog's text,
never the model's. The catalog also keeps each note's SHA-256, so a note edited since the
catalog was built is caught (``source_changed``) before anything is planned from it.

A prompt carries at most ``max_chars`` code points of each note (default: Ask's
:data:`~vaultlens.services.asking.ask.CONTEXT_CHARS`, 12,000): a longer note is cut there, the prompt
and the preview say so, and only blocks that end within the cut become fragments, so the model
can cite, and a user is shown, only text that was sent.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vaultlens.chunking.chunker import MarkdownChunker
from vaultlens.chunking.source import NoteSource, NotText, load_note, read_note
from vaultlens.errors import VaultError, VaultlensError
from vaultlens.services.asking.ask import CONTEXT_CHARS
from vaultlens.vault.model import BlockKind

__all__ = ["Catalog", "Fragment", "Side", "build_catalog", "current_hashes"]

Side = Literal["A", "B"]
MAX_FRAGMENTS_PER_SIDE = 60  # the sent texts go too: blocks past the 60th are still seen, not citable


@dataclass(frozen=True, slots=True)
class Fragment:
    """One block of one side. Lines are 1-based and inclusive, as an editor shows them."""

    id: str
    side: Side
    kind: BlockKind
    start_line: int
    end_line: int
    text: str
    start: int  # code-point offsets into the side's decoded text (block end includes its newline)
    end: int
    heading_path: tuple[str, ...] = ()  # the headings it sits under (a heading: itself last), for labels

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "side": self.side, "kind": self.kind,
            "start_line": self.start_line, "end_line": self.end_line, "text": self.text,
        }  # fmt: skip


@dataclass(frozen=True)
class Catalog:
    nonce: str
    paths: dict[Side, str]
    sources: dict[Side, NoteSource]
    fragments: tuple[Fragment, ...]
    max_chars: int = CONTEXT_CHARS  # code points of each note's text that the prompt carries

    def sent_text(self, side: Side) -> str:
        """The part of ``side``'s text that the prompt carries (all of it unless the note is longer)."""
        return self.sources[side].text[: self.max_chars]

    def cut(self, side: Side) -> bool:
        """True when ``side``'s note is longer than what the prompt carries."""
        return len(self.sources[side].text) > self.max_chars

    def get(self, fragment_id: str) -> Fragment | None:
        return next((f for f in self.fragments if f.id == fragment_id), None)

    def side(self, side: Side) -> list[Fragment]:
        return [f for f in self.fragments if f.side == side]

    def hashes(self) -> dict[Side, str]:
        return {s: src.file_hash for s, src in self.sources.items()}


def _fragments(nonce: str, side: Side, source: NoteSource, max_chars: int) -> list[Fragment]:
    out: list[Fragment] = []
    headings: list[tuple[int, str]] = []
    for block in source.note.blocks:
        if block.kind == "heading":
            headings = [(lv, t) for lv, t in headings if lv < block.level] + [(block.level, block.text)]
        text = source.text[block.start : block.end].rstrip("\n")
        if block.start + len(text) > max_chars:  # not (wholly) in the prompt: not citable
            break
        if not text.strip() or block.kind == "hr":
            continue
        n = len(out)
        out.append(
            Fragment(f"{nonce}:{side}:{n}", side, block.kind, block.start_line + 1, block.end_line, text,
                     block.start, block.end, tuple(t for _, t in headings))
        )  # fmt: skip
        if len(out) == MAX_FRAGMENTS_PER_SIDE:
            break
    return out


def _load(vault: Path, rel: str, chunker: MarkdownChunker, max_bytes: int | None) -> NoteSource:
    try:
        return load_note(vault, rel, chunker, max_bytes)
    except NotText as exc:  # a ValueError for the indexer's skip list; here the user named the file
        raise VaultError(
            f"{rel} is not a text note: {exc}.",
            hint="A review compares two Markdown notes stored as UTF-8 text; choose another file.",
        ) from None


def build_catalog(
    vault: Path,
    path_a: str,
    path_b: str,
    chunker: MarkdownChunker,
    max_bytes: int | None = None,
    max_chars: int = CONTEXT_CHARS,
) -> Catalog:
    """Load both notes through the note-loading seam and number their blocks under a fresh nonce.

    Raises :class:`VaultError` for a refused, missing, too large (``max_bytes``) or non-text file.
    """
    a, b = _load(vault, path_a, chunker, max_bytes), _load(vault, path_b, chunker, max_bytes)
    if a.path == b.path:
        raise VaultError(f"A review needs two different notes; both sides are {a.path}.")
    nonce = secrets.token_hex(4)
    return Catalog(
        nonce,
        {"A": a.path, "B": b.path},
        {"A": a, "B": b},
        (*_fragments(nonce, "A", a, max_chars), *_fragments(nonce, "B", b, max_chars)),
        max_chars,
    )


def current_hashes(vault: Path, catalog: Catalog) -> dict[Side, str | None]:
    """Each side's SHA-256 as the note is now (through the note-loading seam); None when it cannot be read."""
    out: dict[Side, str | None] = {}
    for side, path in catalog.paths.items():
        try:
            out[side] = read_note(vault, path).file_hash
        except VaultlensError:
            out[side] = None
    return out
