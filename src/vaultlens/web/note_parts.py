"""A huge note's view in parts (issue 46 item 7): rendering 10 MB of Markdown takes seconds, so a
note past :data:`SPLIT_OVER` characters is cut into parts of about :data:`PART_CHARS` at top-level
block starts, and the page renders only the parts the user looks at (the rest load as they scroll,
from ``/ui/api/note/part`` at the read's content hash).

A part starts at a line that can only open a top-level block: a heading or a letter at column 0
right after a blank line, outside front matter and fenced code (a list, quote, table or paragraph
cannot go on past a blank line into such a line). ``%%comments%%`` are blanked first (line breaks
kept), so a comment never spans two parts. A footnote defined in another part than its reference
is rendered with the part that refers to it (its definition's text appended to that part's), and so
is a link reference definition (``[label]: URL``) for a ``[text][label]`` or ``[label]`` elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vaultlens.web.obsidian import anchor, without_comments

SPLIT_OVER = 400_000  # characters: a longer note is shown in parts
PART_CHARS = 100_000  # characters a part holds at least (it ends where a block starts)
NEAR_TARGET = 2  # parts rendered at once from the first line asked for

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_BLOCK_ID = re.compile(r"[ \t]\^([A-Za-z0-9-]+)$")
_FOOTNOTE_DEF = re.compile(r"\[\^([^\]\s]+)\]:")
_FOOTNOTE_REF = re.compile(r"\[\^([^\]\s]+)\](?!:)")
_LINK_DEF = re.compile(r" {0,3}\[([^\]^][^\]]*)\]:[ \t]*\S")
_LINK_REF = re.compile(r"\[([^\]^][^\]]*)\](?![(:])")


@dataclass(frozen=True, slots=True)
class Part:
    index: int
    first: int  # 1-based line, as ``?lines=`` counts them
    last: int  # inclusive
    start: int  # character offsets in :attr:`PartedNote.text`
    end: int


@dataclass(frozen=True, slots=True)
class PartedNote:
    content_hash: str
    text: str  # the note with its comments blanked
    parts: tuple[Part, ...]
    footnotes: dict[str, tuple[int, str]]  # label -> the part defining it, the definition's text
    references: dict[str, tuple[int, str]]  # a link reference's label (lower case) -> part, its line

    def part_text(self, index: int) -> str:
        """Part ``index``'s Markdown, with the footnotes and link references it uses but other parts define."""
        part = self.parts[index]
        text = self.text[part.start : part.end]
        wanted = [(self.footnotes, label) for label in _FOOTNOTE_REF.findall(text)] if self.footnotes else []
        if self.references:
            wanted += [(self.references, _label(label)) for label in _LINK_REF.findall(text)]
        elsewhere = {
            defined[label][1]: None
            for defined, label in wanted
            if label in defined and defined[label][0] != index
        }
        return text + "".join("\n\n" + definition for definition in elsewhere) if elsewhere else text

    def part_at(self, line: int) -> Part:
        """The part holding ``line`` (the last part for a line past the end)."""
        for part in self.parts:
            if line <= part.last:
                return part
        return self.parts[-1]

    def shown_first(self, target: tuple[int, int] | None) -> list[int]:
        """The parts the first response renders: the first, and those from the asked-for lines on."""
        shown = {0}
        if target is not None:
            at = self.part_at(target[0]).index
            shown.update(
                i
                for i in range(at, min(at + NEAR_TARGET, len(self.parts)))
                if self.parts[i].first <= target[1]
            )
        return sorted(shown)

    def holding(self, element_id: str) -> Part | None:
        """The part holding heading ``h-…`` or block ``b-…`` (as links to them name them)."""
        fence: str | None = None
        for number, line in enumerate(self.text.split("\n"), start=1):
            fence = _fence_after(fence, line)
            if fence is not None:
                continue
            if line.startswith("#"):
                m = _HEADING.match(line)
                if m and anchor(m.group(2) or "") == element_id:
                    return self.part_at(number)
            block = _BLOCK_ID.search(line)
            if block and "b-" + block.group(1) == element_id:
                return self.part_at(number)
        return None


def _fence_after(fence: str | None, line: str) -> str | None:
    """The open fence after ``line`` (None outside code): opened by ``` or ~~~, closed by at least as many."""
    m = _FENCE.match(line)
    if fence is None:
        return m.group(1) if m else None
    if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end() :].strip():
        return None
    return fence


def _front_matter_end(lines: list[str]) -> int:
    """The number of lines front matter takes at the top (0 without any)."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return i + 1
    return len(lines)


def _footnotes(lines: list[str], parts: list[Part]) -> dict[str, tuple[int, str]]:
    """Each footnote definition's part and text: from ``[^label]:`` at column 0 on through its
    lines (after a blank line only indented ones go on), outside fenced code."""
    found: dict[str, tuple[int, str]] = {}
    fence: str | None = None
    number, part = 0, 0
    while number < len(lines):
        line = lines[number]
        fence = _fence_after(fence, line)
        m = _FOOTNOTE_DEF.match(line) if fence is None else None
        if m is None:
            number += 1
            continue
        end = number + 1
        while end < len(lines) and (
            lines[end].strip() or (end + 1 < len(lines) and lines[end + 1][:1] in (" ", "\t"))
        ):
            line = lines[end]
            if not line.strip() and not lines[end + 1].strip():
                break
            if line[:1] not in (" ", "\t") and (
                _HEADING.match(line) or _FENCE.match(line) or _FOOTNOTE_DEF.match(line)
            ):
                break  # a block the definition's paragraph does not take in
            end += 1
        while part + 1 < len(parts) and parts[part].last < number + 1:
            part += 1
        found.setdefault(m.group(1), (part, "\n".join(lines[number:end])))
        number = end
    return found


def _label(label: str) -> str:
    """A link reference's label as CommonMark matches it: case and runs of white space ignored."""
    return " ".join(label.split()).casefold()


def _references(lines: list[str], parts: list[Part]) -> dict[str, tuple[int, str]]:
    """Each link reference definition's part and line (the first of a label, as CommonMark takes),
    outside fenced code."""
    found: dict[str, tuple[int, str]] = {}
    fence: str | None = None
    part = 0
    for number, line in enumerate(lines, start=1):
        fence = _fence_after(fence, line)
        m = _LINK_DEF.match(line) if fence is None and "]:" in line else None
        if m is not None:
            while part + 1 < len(parts) and parts[part].last < number:
                part += 1
            found.setdefault(_label(m.group(1)), (part, line))
    return found


_CACHE: dict[str, PartedNote] = {}
_CACHED = 4  # notes whose parts are kept (one huge note's view asks for its parts one by one)


def parted(text: str, content_hash: str) -> PartedNote | None:
    """``text`` cut into parts, or None when it is short enough to render whole."""
    if len(text) <= SPLIT_OVER:
        return None
    if (kept := _CACHE.get(content_hash)) is not None:
        return kept
    blanked = without_comments(text)
    lines = blanked.split("\n")
    parts: list[Part] = []
    first, start, offset, fence, blank = 1, 0, 0, None, False
    skip = _front_matter_end(lines)
    for number, line in enumerate(lines, start=1):
        opens = number > skip and fence is None and (blank or number == 1)
        if (
            opens
            and offset - start >= PART_CHARS
            and line[:1]
            and (line[0].isalpha() or _HEADING.match(line))
        ):
            parts.append(Part(len(parts), first, number - 1, start, offset))
            first, start = number, offset
        if number > skip:
            fence = _fence_after(fence, line)
        blank = not line.strip()
        offset += len(line) + 1
    end = len(blanked)
    last = len(lines) - 1 if blanked.endswith("\n") else len(lines)
    parts.append(Part(len(parts), first, max(first, last), start, end))
    footnotes = _footnotes(lines, parts) if "[^" in blanked else {}
    note = PartedNote(
        content_hash, blanked, tuple(parts), footnotes, _references(lines, parts) if "]:" in blanked else {}
    )
    while len(_CACHE) >= _CACHED:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[content_hash] = note
    return note
