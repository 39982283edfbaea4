"""The chunker's contract (chunker v4), checked on hand-written and on real notes.

It replaces ``vl_support.chunk_invariant_errors``, which predates splitting and still treats every
code block and table as atomic (a split one would read as "cut"). Beyond exact spans, lines and
hashes it checks the splitting rules of ``chunking/chunker.py``:

- a code block or table of at most ``max_chars`` is whole in one chunk;
- a larger one (and front matter larger than ``max_chars``) is cut only between lines: a table
  never inside a row nor between its header and delimiter rows; a code or front matter line only
  when that line alone is longer than ``max_chars``. A part holds nothing after its block, and
  before it only headings; every front matter part, and nothing else, is flagged ``frontmatter``;
- no chunk is longer than ``max_chars`` plus the headings it carries, unless it holds a table row
  that alone is longer than ``max_chars``;
- no character of a block or of the front matter is in no chunk.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Sequence

from vaultlens.chunking.chunker import Chunk
from vaultlens.vault.model import Block, ParsedNote
from vaultlens.vault.parse import line_starts


def chunk_invariant_errors(note: ParsedNote, chunks: Sequence[Chunk], max_chars: int) -> list[str]:
    """Every way the chunks of one parsed note break the chunker's contract (empty list = none)."""
    text = note.text
    starts = line_starts(text)
    errors: list[str] = []
    cs = list(chunks)
    if [c.ordinal for c in cs] != list(range(len(cs))):
        errors.append("ordinals are not 0..n-1")
    if len({c.id for c in cs}) != len(cs):
        errors.append("duplicate chunk ids")

    def line_of(offset: int) -> int:
        return bisect_right(starts, offset) - 1

    def line_len(offset: int) -> int:
        i = line_of(offset)
        end = text.find("\n", starts[i])
        return (len(text) if end == -1 else end) - starts[i]

    def at_line_boundary(cut: int) -> bool:
        return cut == starts[line_of(cut)] or text[cut : cut + 1] == "\n"

    whole: list[tuple[int, int]] = []  # code blocks and tables that must stay in one chunk
    split: list[tuple[int, int, Block]] = []  # larger ones, cut only between lines
    for b in note.blocks:
        if b.kind in ("code", "table"):
            body = text[b.start : b.end].rstrip("\n")
            if not body.strip():
                continue
            if len(body) > max_chars:
                split.append((b.start, b.start + len(body), b))
            else:
                whole.append((b.start, b.start + len(body)))
    fm_end = 0
    if note.body_start > 0 and text[: note.body_start].strip("-\n "):
        fm_end = len(text[: note.body_start].rstrip("\n"))
    headings = [b for b in note.blocks if b.kind == "heading"]

    for c in cs:
        where = f"chunk {c.ordinal} {c.heading_path} lines {c.start_line}-{c.end_line}"
        if text[c.start : c.end] != c.text:
            errors.append(f"{where}: text[start:end] != chunk.text")
        if c.start_line != line_of(c.start) or c.end_line != line_of(c.end - 1) + 1:
            errors.append(f"{where}: lines do not match offsets")
        if c.content_hash != hashlib.sha256(c.text.encode("utf-8")).hexdigest():
            errors.append(f"{where}: content_hash is not SHA-256 of the text")
        for a_start, a_end in whole:
            if c.start < a_end and c.end > a_start and not (c.start <= a_start and c.end >= a_end):
                errors.append(
                    f"{where}: cuts a code block or table of at most max_chars at {a_start}-{a_end}"
                )
        long_row = False
        for s, e, b in split:
            if not (c.start < e and c.end > s):
                continue
            if c.end > e:
                errors.append(f"{where}: a part of the {b.kind} at {s}-{e} holds text after it")
            before = text[c.start : max(c.start, s)]
            heads = "".join(text[h.start : h.end] for h in headings if c.start <= h.start < s)
            if before.strip() and before.replace("\n", "") != heads.replace("\n", ""):
                errors.append(
                    f"{where}: a part of the {b.kind} at {s}-{e} holds more than headings before it"
                )
            header_end = starts[b.start_line + 2] - 1 if b.kind == "table" else s
            for cut in (c.start, c.end):
                if not s < cut < e:
                    continue
                if b.kind == "table" and cut < header_end:
                    errors.append(f"{where}: cuts the table at {s}-{e} inside its header")
                elif not at_line_boundary(cut) and (b.kind == "table" or line_len(cut) <= max_chars):
                    errors.append(f"{where}: cuts the {b.kind} at {s}-{e} inside a line at {cut}")
            if b.kind == "table":
                long_row |= any(len(row) > max_chars for row in c.text.split("\n"))
        if c.frontmatter != (c.start < fm_end):
            errors.append(f"{where}: frontmatter flag is {c.frontmatter} at offset {c.start}")
        if c.frontmatter:
            if c.end > fm_end:
                errors.append(f"{where}: a front matter chunk runs past the front matter")
            for cut in (c.start, c.end):
                if 0 < cut < fm_end and not at_line_boundary(cut) and line_len(cut) <= max_chars:
                    errors.append(f"{where}: cuts the front matter inside a line at {cut}")
        # a heading stays with the text under it, so it may add its own length (and the blank lines
        # after it) to max_chars
        carried = 0
        for h in headings:
            if c.start <= h.start < c.end:
                end = h.end
                while text[end : end + 1] == "\n":
                    end += 1
                carried += min(end, c.end) - h.start
        if len(c.text) > max_chars + carried and not long_row:
            errors.append(f"{where}: {len(c.text)} chars > max {max_chars}")

    covered = [False] * len(text)
    for c in cs:
        covered[c.start : c.end] = [True] * (c.end - c.start)
    required = [False] * len(text)
    required[:fm_end] = [True] * fm_end
    for b in note.blocks:
        required[b.start : b.end] = [True] * (b.end - b.start)
    lost = [i for i in range(len(text)) if required[i] and not covered[i] and not text[i].isspace()]
    if lost:
        errors.append(f"{len(lost)} characters of blocks are in no chunk, first at offset {lost[0]}")
    return errors
