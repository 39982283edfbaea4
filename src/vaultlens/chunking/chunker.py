"""MarkdownChunker: heading-aware chunks with stable IDs, content hashes and exact source spans.

Rules, in order: a chunk never crosses a fenced code block or table boundary (those blocks
are atomic, even when larger than ``max_chars``); a new heading starts a new chunk once the
current one has some substance, and is never left alone without the text under it; blocks are packed up to ``target_chars``; an oversized prose
block is split at line, then sentence, then word boundaries with ``overlap_chars`` of context.

IDs depend on the note path, the heading path and the chunk's rank under that heading path,
so an edit in one section leaves the IDs and hashes of chunks in other sections unchanged.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass

from vaultlens.config.settings import IndexSettings
from vaultlens.fsutil import sha256_hex
from vaultlens.vault.model import Block, ParsedNote
from vaultlens.vault.parse import line_starts

_ATOMIC = frozenset({"code", "table"})
_SENTENCE_END = re.compile(r"(?<=[.!?…。])\s+")


@dataclass(frozen=True, slots=True)
class Chunk:
    id: str
    path: str
    ordinal: int
    heading_path: tuple[str, ...]
    text: str
    content_hash: str
    start: int  # code-point offsets into the normalised note text (NoteSource.byte_offset maps to bytes)
    end: int
    start_line: int  # 0-based, end-exclusive
    end_line: int
    # True only for the note's YAML front matter block; its heading_path is FRONT_MATTER_PATH for
    # display, but logic reads this flag: a real heading named "front matter" is an ordinary heading
    frontmatter: bool = False


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    heading_path: tuple[str, ...]
    atomic: bool
    is_heading: bool
    frontmatter: bool = False


def _chunk_id(path: str, heading_path: tuple[str, ...], rank: int) -> str:
    return sha256_hex("\x1f".join((path, *heading_path, str(rank))))[:20]


# The heading path shown for the front matter chunk (and part of its id, so ids stay stable).
FRONT_MATTER_PATH = ("front matter",)
# Bump when the rules change, so indexes re-chunk every note. v3: heading text from markdown-it's
# inline tokens (links, code spans), and the front matter flag on chunks.
CHUNKER_VERSION = 3


class MarkdownChunker:
    def __init__(
        self,
        target_chars: int = IndexSettings.chunk_target,
        max_chars: int = IndexSettings.chunk_max,
        overlap_chars: int = IndexSettings.chunk_overlap,
    ) -> None:
        self.target = target_chars
        self.max = max_chars
        self.overlap = overlap_chars

    @property
    def signature(self) -> str:
        """Identifies the chunking rules and sizes; a different signature means every note re-chunks."""
        return f"v{CHUNKER_VERSION}:{self.target}:{self.max}:{self.overlap}"

    def chunk(self, note: ParsedNote, path: str) -> list[Chunk]:
        """Chunks of one parsed note, in document order. The same input always yields the same chunks."""
        text = note.text
        spans: list[_Span] = []
        if note.body_start > 0 and text[: note.body_start].strip("-\n "):
            spans.append(_Span(0, note.body_start, FRONT_MATTER_PATH, True, False, frontmatter=True))
        stack: list[tuple[int, str]] = []
        for block in note.blocks:
            if block.kind == "heading":
                while stack and stack[-1][0] >= block.level:
                    stack.pop()
                stack.append((block.level, block.text))
            heading_path = tuple(h for _, h in stack)
            spans.extend(self._block_spans(text, block, heading_path))

        pieces: list[tuple[int, int, tuple[str, ...], bool]] = []
        cur: list[_Span] = []

        def flush() -> None:
            # a heading belongs with the text under it, not at the end of the previous chunk
            carry: list[_Span] = []
            while len(cur) > 1 and cur[-1].is_heading:
                carry.insert(0, cur.pop())
            if cur:
                pieces.append((cur[0].start, cur[-1].end, cur[0].heading_path, cur[0].frontmatter))
            cur[:] = carry

        for span in spans:
            size = span.end - span.start
            if cur and all(s.is_heading for s in cur):
                # a heading always stays with the text under it: a heading alone is a poor chunk
                # (it may push that chunk past max_chars by the heading's own length)
                pass
            elif cur:
                cur_size = span.end - cur[0].start
                substantial = cur[-1].end - cur[0].start >= self.target // 3
                if (
                    (span.is_heading and substantial)
                    or cur_size > self.target
                    or cur[0].frontmatter
                    or (span.atomic and size > self.target)
                ):
                    flush()
            cur.append(span)
            if span.atomic and size > self.target:
                flush()
        flush()

        chunks: list[Chunk] = []
        ranks: Counter[tuple[str, ...]] = Counter()
        starts = line_starts(text)
        for start, end, heading_path, frontmatter in pieces:
            body = text[start:end].strip("\n")
            if not body.strip():
                continue
            lead = len(text[start:end]) - len(text[start:end].lstrip("\n"))
            start += lead
            end = start + len(body)
            rank = ranks[heading_path]
            ranks[heading_path] += 1
            chunks.append(
                Chunk(
                    id=_chunk_id(path, heading_path, rank),
                    path=path,
                    ordinal=len(chunks),
                    heading_path=heading_path,
                    text=body,
                    content_hash=sha256_hex(body),
                    start=start,
                    end=end,
                    start_line=_line_at(starts, start),
                    end_line=_line_at(starts, end - 1) + 1,
                    frontmatter=frontmatter,
                )
            )
        return chunks

    def _block_spans(self, text: str, block: Block, heading_path: tuple[str, ...]) -> list[_Span]:
        atomic = block.kind in _ATOMIC
        if atomic or block.end - block.start <= self.max:
            return [_Span(block.start, block.end, heading_path, atomic, block.kind == "heading")]
        return [_Span(s, e, heading_path, False, False) for s, e in self._split(text, block.start, block.end)]

    def _split(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        """Cut an oversized prose block into ~target pieces at the best boundary, with overlap."""
        out: list[tuple[int, int]] = []
        pos = start
        while end - pos > self.max:
            window = text[pos : pos + self.target]
            cut = _best_cut(window, self.target // 2)
            piece_end = pos + cut
            out.append((pos, piece_end))
            nxt = max(piece_end - self.overlap, pos + 1)
            # begin the overlap at a word boundary so no chunk starts mid-word
            space = text.find(" ", nxt, piece_end)
            pos = space + 1 if space != -1 else piece_end
        out.append((pos, end))
        return out


def _best_cut(window: str, minimum: int) -> int:
    for finder in (
        lambda w: w.rfind("\n"),
        lambda w: max((m.end() for m in _SENTENCE_END.finditer(w)), default=-1),
        lambda w: w.rfind(" "),
    ):
        cut = finder(window)
        if cut >= minimum:
            return cut + 1 if window[cut : cut + 1] in ("\n", " ") else cut
    return len(window)


def _line_at(starts: list[int], offset: int) -> int:
    return bisect_right(starts, offset) - 1
