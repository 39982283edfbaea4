"""A place inside a note that a result points at: its chunk, heading path and lines.

Search hits, similar-note matches and duplicate evidence all point at sections the same way,
so every interface can open the exact place (1-based, inclusive lines) and check by
``chunk_id`` (with the store's content hash) that the text is still current.
"""

from __future__ import annotations

from dataclasses import dataclass

from vaultlens.chunking.chunker import Chunk

SNIPPET_CHARS = 240


@dataclass(frozen=True, slots=True)
class Section:
    chunk_id: str
    heading_path: tuple[str, ...]
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    score: float | None = None  # how well this section matched, where a score applies
    snippet: str = ""

    @classmethod
    def of(cls, chunk: Chunk, score: float | None = None, snippet: bool = False) -> Section:
        return cls(
            chunk.id,
            chunk.heading_path,
            chunk.start_line + 1,
            chunk.end_line,
            None if score is None else round(score, 4),
            _snippet(chunk.text) if snippet else "",
        )


def _snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
