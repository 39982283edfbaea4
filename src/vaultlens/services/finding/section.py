"""A place inside a note that a result points at: its chunk, heading path and lines (in a PDF also
its page, in a canvas its text card; lines are then within that page or card).

Search hits, similar-note matches and duplicate evidence all point at sections the same way,
so every interface can open the exact place (1-based, inclusive lines) and check by
``chunk_id`` (with the store's content hash) that the text is still current.
"""

from __future__ import annotations

import re
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
    page: int | None = None  # a PDF's page (1-based); None in a note
    card: str | None = None  # a canvas text card's id; None in a note

    @classmethod
    def of(cls, chunk: Chunk, score: float | None = None, snippet: bool = False) -> Section:
        return cls(
            chunk.id,
            chunk.heading_path,
            chunk.start_line + 1,
            chunk.end_line,
            None if score is None else round(score, 4),
            _snippet(plain_text(chunk.text)) if snippet else "",
            chunk.page,
            chunk.card,
        )


# line by line: what marks a line's structure, not its text
_LINE_MARKS = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+|(?:>[ \t]?)+(?:\[![\w-]+\][+-]?[ \t]*)?|[-*+][ \t]+(?:\[.\][ \t]+)?|\d{1,9}[.)][ \t]+)"
)
_DROPPED_LINE = re.compile(
    r"^[ \t]*(?:`{3,}.*|~{3,}.*|\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?)[ \t]*$"
)
_INLINE_MARKS = [
    (re.compile(r"%%.*?%%", re.S), ""),  # comments
    (re.compile(r"!?\[\[([^\]|]*)\|([^\]]*)\]\]"), r"\2"),  # [[target|text]] → text
    (re.compile(r"!?\[\[([^\]#]*)#?([^\]]*)\]\]"), r"\1 \2"),  # [[target#heading]]
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # [text](url) → text
    (re.compile(r"(\*\*|__|==|~~|`)"), ""),  # emphasis, highlight, code marks
    (re.compile(r"[ \t]*\|[ \t]*"), " · "),  # table cells
]


def plain_text(text: str) -> str:
    """Markdown as the words it shows, for a snippet: no heading, quote, list or table marks, no
    fences or front-matter delimiters, links as their text, comments left out."""
    lines = [_LINE_MARKS.sub("", line) for line in text.split("\n") if not _DROPPED_LINE.match(line)]
    out = "\n".join(lines)
    for pattern, repl in _INLINE_MARKS:
        out = pattern.sub(repl, out)
    return "\n".join(line.strip(" ·") for line in out.split("\n"))


def _snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
