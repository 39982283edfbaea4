"""MarkdownChunker: heading-aware chunks with stable IDs, content hashes and exact source spans.

Rules, in order:

- A code block or table of at most ``max_chars`` is atomic: one chunk holds all of it.
- A larger one is split along its structure into parts of about ``target_chars``, each its own
  chunk: a table between rows (never inside a row, never between the header and the delimiter
  row), a code block at blank lines inside it, else at line boundaries. Front matter larger than
  ``max_chars`` is split the same way between top-level YAML keys (lines that start at column 0
  with ``key:``), else at line boundaries; every part keeps ``frontmatter=True``. Structural cuts
  have no overlap: every line of the block is in exactly one part.
- A part's text stays an exact slice of the note; what it lacks to be read alone is in
  :attr:`Chunk.context`, which the embedded and full-text texts put before it (see
  ``index/indexing/texts.py``): a table part's header and delimiter rows, a code part's opening fence
  line, ``key:`` for a front matter part that starts inside a key. The first part holds that
  text itself and has no context.
- No chunk text is longer than ``max_chars``, with two exceptions: a heading stays with the
  text under it and may add its own length, and a table row longer than ``max_chars`` is never
  cut (a chunk then holds that one row). A single code or front matter line longer than
  ``max_chars`` is cut like prose (line, sentence, word) with ``overlap_chars`` of overlap.
- A new heading starts a new chunk once the current one has some substance, and is never left
  alone without the text under it; blocks are packed up to ``target_chars``; an oversized prose
  block is split at line, then sentence, then word boundaries with ``overlap_chars`` of overlap.

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
    # Only for a part of a split table, code block or front matter (other than the first): what it
    # needs to be read alone (the table's header and delimiter rows, the code's opening fence line,
    # "key:" of the front matter key it starts inside), at most CONTEXT_MAX characters. It is
    # embedded and searched before the text, but is not part of text, content_hash or offsets.
    context: str = ""
    # where the chunk is in a file that is not a note (chunking/attachments.py): a PDF's page (1-based),
    # a canvas text card's id; None in a note
    page: int | None = None
    card: str | None = None


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    heading_path: tuple[str, ...]
    atomic: bool
    is_heading: bool
    frontmatter: bool = False
    part: bool = False  # one part of a split table, code block or front matter: a chunk of its own
    context: str = ""


def _chunk_id(path: str, heading_path: tuple[str, ...], rank: int) -> str:
    return sha256_hex("\x1f".join((path, *heading_path, str(rank))))[:20]


# The heading path shown for the front matter chunk (and part of its id, so ids stay stable).
FRONT_MATTER_PATH = ("front matter",)
# Bump when the rules change, so indexes re-chunk every note. v3: heading text from markdown-it's
# inline tokens (links, code spans), and the front matter flag on chunks. v4: tables, code blocks
# and front matter larger than max_chars are split along their structure, parts carry a context.
CHUNKER_VERSION = 4
# The longest Chunk.context: a table with very wide headers keeps its header row's first cells.
CONTEXT_MAX = 400
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
# a top-level YAML key: at column 0, not a list item, comment or document marker
_YAML_KEY = re.compile(r"[^\s#\-][^\n]*?:(?=\s|$)")


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
        from vaultlens.vault.parse import line_starts  # the parser (YAML) only once a note is chunked

        text = note.text
        starts = line_starts(text)
        spans: list[_Span] = []
        if note.body_start > 0 and text[: note.body_start].strip("-\n "):
            spans.extend(self._frontmatter_spans(text, starts, note.body_start_line))
        stack: list[tuple[int, str]] = []
        for block in note.blocks:
            if block.kind == "heading":
                while stack and stack[-1][0] >= block.level:
                    stack.pop()
                stack.append((block.level, block.text))
            heading_path = tuple(h for _, h in stack)
            spans.extend(self._block_spans(text, starts, block, heading_path))

        pieces: list[tuple[int, int, tuple[str, ...], bool, str]] = []
        cur: list[_Span] = []

        def flush() -> None:
            # a heading belongs with the text under it, not at the end of the previous chunk
            carry: list[_Span] = []
            while len(cur) > 1 and cur[-1].is_heading:
                carry.insert(0, cur.pop())
            if cur:
                context = next((s.context for s in cur if not s.is_heading), "")
                pieces.append((cur[0].start, cur[-1].end, cur[0].heading_path, cur[0].frontmatter, context))
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
                    or span.part
                ):
                    flush()
            cur.append(span)
            if (span.atomic and size > self.target) or span.part:
                flush()
        flush()

        chunks: list[Chunk] = []
        ranks: Counter[tuple[str, ...]] = Counter()
        for start, end, heading_path, frontmatter, context in pieces:
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
                    context=context,
                )
            )
        return chunks

    def _frontmatter_spans(self, text: str, starts: list[int], end_line: int) -> list[_Span]:
        block_end = _offset(starts, end_line, len(text))
        end = len(text[:block_end].rstrip("\n"))
        if end <= self.max:
            return [_Span(0, block_end, FRONT_MATTER_PATH, True, False, frontmatter=True)]
        # between lines, preferably before a top-level key
        allowed = [starts[i] for i in range(1, end_line) if starts[i] < end]
        keys = [starts[i] for i in range(1, end_line) if _YAML_KEY.match(text, starts[i])]

        def context(pos: int) -> str:  # "key:" of the key a part starts inside
            i = bisect_right(keys, pos) - 1
            m = _YAML_KEY.match(text, keys[i]) if i >= 0 and keys[i] != pos else None
            return _clip(m.group(0)) if m else ""

        return [
            _Span(s, e, FRONT_MATTER_PATH, False, False, frontmatter=True, part=True, context=context(s))
            for s, e in self._split_at(text, 0, end, allowed, set(keys[1:]), hard=True)
        ]

    def _block_spans(
        self, text: str, starts: list[int], block: Block, heading_path: tuple[str, ...]
    ) -> list[_Span]:
        atomic = block.kind in _ATOMIC
        if atomic:
            end = block.start + len(text[block.start : block.end].rstrip("\n"))
            if end - block.start > self.max:
                return self._structure_spans(text, starts, block, end, heading_path)
        if atomic or block.end - block.start <= self.max:
            return [_Span(block.start, block.end, heading_path, atomic, block.kind == "heading")]
        return [_Span(s, e, heading_path, False, False) for s, e in self._split(text, block.start, block.end)]

    def _structure_spans(
        self, text: str, starts: list[int], block: Block, end: int, heading_path: tuple[str, ...]
    ) -> list[_Span]:
        """The parts of a table or code block larger than max_chars (see the module's rules)."""
        line0 = text[block.start : _offset(starts, block.start_line + 1, end)].rstrip("\n")
        fenced = block.kind == "code" and _FENCE.match(line0) is not None
        # a table's header and delimiter rows stay together (a fence's opening line or the front
        # matter's --- is cut off alone only when the line after it cannot join it within max)
        first = block.start_line + (2 if block.kind == "table" else 1)
        allowed = [starts[i] for i in range(first, block.end_line) if starts[i] < end]
        preferred: set[int] = set()
        if block.kind == "table":
            context = text[block.start : _offset(starts, block.start_line + 2, end)].rstrip("\n")
        else:
            context = line0 if fenced else ""
            # a cut right after a blank line, before a line that is not blank
            preferred = {b for b in allowed if text[b] != "\n" and _blank_before(text, b)}
        context = _clip(context)
        parts = self._split_at(text, block.start, end, allowed, preferred, hard=block.kind == "code")
        return [
            _Span(s, e, heading_path, False, False, part=True, context=context if s > block.start else "")
            for s, e in parts
        ]

    def _split_at(
        self, text: str, start: int, end: int, allowed: list[int], preferred: set[int], hard: bool
    ) -> list[tuple[int, int]]:
        """Cut [start, end) into parts of about target (at most max) chars at the ``allowed`` offsets
        (sorted), a ``preferred`` one when there is one near target. Where the next allowed offset is
        more than max away, the line there is cut like prose (``hard``) or kept whole (a table row)."""
        out: list[tuple[int, int]] = []
        pos = start
        tail = self.target // 4  # a cut never leaves a scrap this small for the last part, if it can
        while end - pos > self.max:
            i = bisect_right(allowed, pos)
            j = bisect_right(allowed, pos + self.max + 1)  # the newline before a cut is not kept
            cands = [b for b in allowed[i:j] if end - b >= tail] or allowed[i:j]
            cut = _pick(cands, preferred, pos + self.target // 2, pos + self.target) if cands else None
            if cut is not None and hard and cut < pos + self.target // 2:
                # all that fits is a scrap before a line longer than max: cut that line right away
                line_end = text.find("\n", cut, end)
                if (end if line_end == -1 else line_end) - cut > self.max:
                    cut = None
            if cut is not None:
                out.append((pos, cut))
                pos = cut
            elif hard:  # one line longer than max: cut like prose, with overlap
                piece_end, nxt = self._prose_cut(text, pos)
                out.append((pos, piece_end))
                pos = nxt
            else:  # a table row longer than max: whole, alone
                cut = allowed[i] if i < len(allowed) else end
                out.append((pos, cut))
                pos = cut
        if pos < end:
            out.append((pos, end))
        return out

    def prose_pieces(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        """Cut ``text[start:end]`` into ~target pieces at the best boundary (line, sentence, word),
        with overlap, none over ``max`` (a PDF page's long paragraph: chunking/attachments.py)."""
        return self._split(text, start, end)

    def _split(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        """Cut an oversized prose block into ~target pieces at the best boundary, with overlap."""
        out: list[tuple[int, int]] = []
        pos = start
        while end - pos > self.max:
            piece_end, nxt = self._prose_cut(text, pos)
            out.append((pos, piece_end))
            pos = nxt
        out.append((pos, end))
        return out

    def _prose_cut(self, text: str, pos: int) -> tuple[int, int]:
        """One ~target piece from ``pos``: where it ends (line, sentence, word boundary) and where the
        next one starts, ``overlap_chars`` back."""
        piece_end = pos + _best_cut(text[pos : pos + self.target], self.target // 2)
        nxt = max(piece_end - self.overlap, pos + 1)
        # begin the overlap at a word boundary so no chunk starts mid-word
        space = text.find(" ", nxt, piece_end)
        return piece_end, (space + 1 if space != -1 else piece_end)


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


def _pick(cands: list[int], preferred: set[int], lo: int, hi: int) -> int:
    """The cut among ``cands`` (sorted, all within max): the last preferred one in [lo, hi], else the
    first preferred one above hi, else the last one in [lo, hi], else the first above hi, else the last."""
    near = [b for b in cands if lo <= b <= hi]
    above = [b for b in cands if b > hi]
    for group, last in ((near, True), (above, False)):
        good = [b for b in group if b in preferred]
        if good:
            return good[-1] if last else good[0]
    if near:
        return near[-1]
    return above[0] if above else cands[-1]


def _blank_before(text: str, offset: int) -> bool:
    """The line that ends just before ``offset`` (a line start) is blank."""
    prev = text.rfind("\n", 0, offset - 1)
    return not text[prev + 1 : offset - 1].strip()


def _clip(context: str) -> str:
    """At most CONTEXT_MAX chars, cut after a whole line (a table's header row) or word if it can."""
    if len(context) <= CONTEXT_MAX:
        return context
    head = context[:CONTEXT_MAX]
    cut = head.rfind("\n")
    if cut < CONTEXT_MAX // 2:
        cut = head.rfind(" ")
    return head[:cut].rstrip() if cut >= CONTEXT_MAX // 2 else head


def _offset(starts: list[int], line: int, default: int) -> int:
    """Where ``line`` starts, or ``default`` past the last line."""
    return starts[line] if line < len(starts) else default


def _line_at(starts: list[int], offset: int) -> int:
    return bisect_right(starts, offset) - 1
