"""Links and tags as Obsidian reads them, and link resolution as Obsidian does it.

Everything here works on plain text with regexes and one linear scan, not on a markdown-it token stream:
wikilinks, ``%%comments%%`` and ``#tags`` are not CommonMark, and this runs over every note of a
50,000-note vault on each sync. Code and comments are masked first, so nothing inside them counts.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from vaultlens.vault.model import Link, LinkKind

__all__ = [
    "LinkResolver",
    "LocatedLink",
    "Resolution",
    "ResolutionStatus",
    "extract_links",
    "extract_tags",
    "locate_links",
    "masked_spans",
    "normalize_tag",
    "tag_at",
    "tag_occurrences",
]

# ---------------------------------------------------------------------------------------------------------------
# Masking: code and comments
# ---------------------------------------------------------------------------------------------------------------

# Whole runs of >= 3 fence characters, written to start with a literal so the engine skips plain text in C.
_FENCE_RUN_RE = {"`": re.compile("````*"), "~": re.compile("~~~~*")}
# Inline constructs, each matched whole so that a note costs one Python step per construct, not per character.
# Every alternative starts with a literal character (not a group, not a repeat: ``\$(?P<math>...)``, ``\$\$*+``),
# which lets the regex engine skip plain text in C: with one group first it tried every alternative at every
# character (5x slower on the shared vaults).
# A repeated group never backtracks, as an atomic group ``(?>(?:...)*)``, not a possessive ``(?:...)*+``: before
# 3.11.5, CPython matched possessive repeats of groups wrongly (gh-106052, gh-100061); ``[...]++`` is unaffected.
_INLINE_RE = re.compile(
    r"""
      \\[\\`%<$](?>(?:\\[\\`%<$])*)               # escaped openers (or backslashes) are text
    | `(?P<bt>`*+)                                # code span: a run of backticks ...
        (?>(?:[^`\n]++                            # ... then text,
          |\n(?![ \t\r]*+(?:\n|\Z)|[ \t>]*+(?:```|~~~))  # line breaks that end neither paragraph nor block,
          |(?!`(?P=bt)(?!`))`++                   # backtick runs of another length,
        )*)
        `(?P=bt)(?!`)                             # ... up to a run of exactly the same length
    | ``*+                                        # a run with no closer: literal backticks
    | %%(?>(?:[^%]++|%(?!%))*)(?:%%|\Z)           # Obsidian comment; Obsidian hides the rest if unclosed
    | \$(?P<math>\$(?>(?:[^$]++|\$(?!\$))*)\$\$    # math block or display math (LaTeX), closed
      |(?=[^\s$])[^$\n]*?(?<=[^\s\\])\$(?!\d))      # inline math: no space inside the dollars, no digit after
    | \$\$*+                                      # a dollar that opens no math: text ("costs $5")
    | <!--                                        # HTML comment, closed by str.find (see masked_spans)
    """,
    re.VERBOSE | re.DOTALL,
)
_MASK_CHAR = "\x00"

# (line start, line end, fence char, run length, can close: nothing but whitespace after the run)
_Fence = tuple[int, int, str, int, bool]


def _fence_lines(text: str) -> list[_Fence]:
    """Lines that open (or close) a fenced code block: indentation or ``>`` markers, then >= 3 ` or ~."""
    fences: list[_Fence] = []
    for char, run_re in _FENCE_RUN_RE.items():
        for m in run_re.finditer(text):
            start = m.start()
            i = start - 1
            while i >= 0 and text[i] in " \t>":
                i -= 1
            if i >= 0 and text[i] != "\n":
                continue  # not at the start of a line
            run_end = m.end()
            line_end = text.find("\n", run_end)
            if line_end < 0:
                line_end = len(text)
            info = text[run_end:line_end]
            if char == "`" and "`" in info:
                continue  # CommonMark: a backtick fence's info string cannot contain a backtick
            fences.append((i + 1, line_end, char, run_end - start, not info.strip()))
    fences.sort()
    return fences


# A line indented by four columns (spaces, or a tab after up to three spaces) with text on it: code, when it
# starts an indented code block; a list item's marker line (up to 3 spaces, a bullet or "1." / "1)", a space)
_INDENTED_LINE_RE = re.compile(r"^(?: {4}| {0,3}\t)[ \t]*\S", re.M)
_CODE_LINE_RE = re.compile(r"(?:[ \t]*\n)*(?: {4}| {0,3}\t)[^\n]*")
_LIST_ITEM_RE = re.compile(r" {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)")


def _opens_indented_code(text: str, start: int) -> bool:
    """Whether the indented line at ``start`` opens an indented code block (CommonMark, as Obsidian renders it).

    It cannot continue a paragraph, so the line before must be blank (or absent); after a list item, or after
    any indented line, four columns are the item's own text rather than code, so only a line that follows an
    unindented, non-list line (or the start) opens one. This errs toward text: a list's nested code stays text.
    """
    if start == 0:
        return True
    line_end = start - 1  # the "\n" that ends the line before
    line_start = text.rfind("\n", 0, line_end) + 1
    if text[line_start:line_end].strip():
        return False  # a paragraph's continuation line
    while line_start > 0 and not text[line_start:line_end].strip():
        line_end = line_start - 1
        line_start = text.rfind("\n", 0, line_end) + 1
    previous = text[line_start:line_end]
    if not previous.strip():
        return True  # only blank lines before
    return previous[0] not in " \t" and _LIST_ITEM_RE.match(previous) is None


def _indented_code(text: str) -> list[tuple[int, int]]:
    """Indented code blocks ``[start, end)``: from the opening line to the end of its last indented line."""
    blocks: list[tuple[int, int]] = []
    end = -1
    for m in _INDENTED_LINE_RE.finditer(text):
        start = m.start()
        if start < end or not _opens_indented_code(text, start):
            continue
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        while end < len(text) and (more := _CODE_LINE_RE.match(text, end + 1)) is not None:
            end = more.end()
        blocks.append((start, end))
    return blocks


def masked_spans(text: str) -> list[tuple[int, int]]:
    """Offset ranges ``[start, end)`` where links and tags must not be recognised.

    Fenced code (an unclosed fence runs to the end), indented code blocks, inline code spans, ``%%comments%%``, ``<!-- -->`` and
    LaTeX math (``$$...$$``, and ``$...$`` with no space just inside the dollars and no digit after the closing
    one, so "costs $5 or $10" stays text), as Obsidian renders none of them as links or tags.
    One left-to-right pass, because whichever construct opens first wins (a ``%%`` inside a code span is code,
    a fence inside a ``%%`` comment is comment). Sorted and non-overlapping.
    """
    n = len(text)
    fences = _fence_lines(text)
    n_fences = len(fences)
    indented = _indented_code(text)
    n_indented = len(indented)
    spans: list[tuple[int, int]] = []
    append = spans.append
    search = _INLINE_RE.search
    fi = ii = 0
    next_fence = fences[0][0] if fences else n + 1
    next_indented = indented[0][0] if indented else n + 1
    m = search(text)
    html_may_close = True
    while True:
        if m is not None and m.start() < min(next_fence, next_indented):
            start, end = m.span()
            char = text[start]
            if char == "%" or m.group("math") is not None or (char == "`" and m.group("bt") is not None):
                append((start, end))
            elif char == "<":
                # str.find, not the regex: once no "-->" is left, every later "<!--" fails at once instead of
                # scanning to the end again (quadratic on a note full of "<!--")
                close = text.find("-->", end) if html_may_close else -1
                if close >= 0:
                    end = close + 3
                    append((start, end))
                else:
                    html_may_close = False
                    if _starts_line(text, start):
                        append((start, n))  # an HTML block comment left open runs to the end (CommonMark)
                        end = n
                    # else: an unclosed inline "<!--" is just text
        elif next_indented <= next_fence and ii < n_indented:  # four indented "```" are code, not a fence
            start, end = indented[ii]
            append((start, end))
        elif fi < n_fences:
            start, _, char, length, _ = fences[fi]
            end = n
            for j in range(fi + 1, n_fences):
                _, close_end, close_char, close_length, closes = fences[j]
                if closes and close_char == char and close_length >= length:
                    end = close_end
                    break
            append((start, end))
        else:
            break
        while fi < n_fences and fences[fi][0] < end:
            fi += 1
        while ii < n_indented and indented[ii][0] < end:
            ii += 1
        next_fence = fences[fi][0] if fi < n_fences else n + 1
        next_indented = indented[ii][0] if ii < n_indented else n + 1
        if m is not None and m.start() < end:
            m = search(text, end) if end < n else None
    return spans


def _starts_line(text: str, offset: int) -> bool:
    """Only spaces between the last line break and ``offset`` (walks back over spaces only, never far)."""
    i = offset - 1
    while i >= 0 and text[i] == " ":
        i -= 1
    return i < 0 or text[i] == "\n"


def _blank_out(text: str, masked: list[tuple[int, int]]) -> str:
    """Replace masked characters with NUL, keeping newlines and offsets.

    Blanking (rather than skipping matches that touch a mask) lets a code span sit inside link text, as in
    ``[`f()`](f.md)``, while a NUL inside a target or destination shows that the link overlaps a mask.
    """
    if not masked:
        return text
    parts: list[str] = []
    append = parts.append
    prev = 0
    for start, end in masked:
        append(text[prev:start])
        if text.find("\n", start, end) < 0:
            append(_MASK_CHAR * (end - start))
        else:
            append("\n".join([_MASK_CHAR * len(line) for line in text[start:end].split("\n")]))
        prev = end
    append(text[prev:])
    return "".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------------------------------------------

_WIKILINK_RE = re.compile(r"\[\[([^\[\]\n]+)\]\]")
# Every pattern starts with a literal so that the regex engine skips plain text in C.
_MD_LINK_RE = re.compile(
    r"""
    \[
      (?P<text>(?>(?:[^\[\]\\]++|\\.|\[(?>(?:[^\[\]\\]++|\\.)*)\])*))   # link text, one level of nested brackets
    \]\(
      [ \t]*+\n?[ \t]*+
      (?:<(?P<angle>[^<>\n]*+)>|(?P<bare>(?>(?:[^\s()\\]++|\\.|\((?>(?:[^\s()\\]++|\\.)*)\))+)))  # <dest> or dest
      (?:\s+(?:"[^"]*"|'[^']*'|\([^()]*\)))?                # optional title
      \s*
    \)
    """,
    re.VERBOSE | re.DOTALL,
)
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_MD_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")

# start offset, kind, target, display, heading, block, (note part's start, its end, the link's end)
_Found = tuple[int, LinkKind, str, "str | None", "str | None", "str | None", tuple[int, int, int]]


@dataclass(frozen=True, slots=True)
class LocatedLink:
    """A link and where it is written: ``start``/``end`` of the whole link and ``target_start``/
    ``target_end`` of its note part as written (``B`` in ``[[B#h|t]]``, ``sub/My%20Note.md`` in
    ``[t](sub/My%20Note.md#h)``), so a rename rewrites those characters and nothing else."""

    start: int
    end: int
    target_start: int
    target_end: int
    link: Link


def _note_part(text: str, start: int, end: int, stops: str) -> tuple[int, int]:
    """The span of ``text[start:end]`` before the first of ``stops``, surrounding whitespace left out."""
    cut = end
    for ch in stops:
        i = text.find(ch, start, cut)
        if i >= 0:
            cut = i
    if cut > start and text[cut - 1] == "\\" and text[cut : cut + 1] == "|":
        cut -= 1  # "\|" inside a table
    while start < cut and text[start].isspace():
        start += 1
    while cut > start and text[cut - 1].isspace():
        cut -= 1
    return start, cut


def _escaped(text: str, offset: int) -> bool:
    """True when the character at ``offset`` is preceded by an odd number of backslashes."""
    i = offset - 1
    while i >= 0 and text[i] == "\\":
        i -= 1
    return (offset - 1 - i) % 2 == 1


def _split_fragment(target: str) -> tuple[str, str | None, str | None]:
    """``note#heading`` / ``note#^block`` -> (note, heading, block); nested ``#h1#h2`` stays in heading."""
    note, sep, fragment = target.partition("#")
    note = note.strip()
    if not sep:
        return note, None, None
    fragment = fragment.strip()
    if fragment.startswith("^"):
        return note, None, fragment[1:] or None
    return note, fragment or None, None


def _unquote(part: str | None) -> str | None:
    return unquote(part) if part is not None and "%" in part else part


def _opening(blank: str, start: int, kind: LinkKind) -> tuple[LinkKind, int] | None:
    """How a link whose ``[`` is at ``start`` opens: ``!`` makes it an embed (``\\!`` is a literal
    ``!`` before an ordinary link), and an escaped ``\\[`` is text, not a link (None)."""
    if start > 0 and blank[start - 1] == "!":
        return ("embed", start - 1) if not _escaped(blank, start - 1) else (kind, start)
    return None if _escaped(blank, start) else (kind, start)


def extract_links(text: str, masked: list[tuple[int, int]] | None = None, line_offset: int = 0) -> list[Link]:
    """See :func:`locate_links`: the links alone."""
    return [found.link for found in locate_links(text, masked, line_offset)]


def locate_links(
    text: str, masked: list[tuple[int, int]] | None = None, line_offset: int = 0
) -> list[LocatedLink]:
    """Wikilinks, embeds and vault-internal Markdown links, in document order.

    ``masked`` are the spans from :func:`masked_spans` (computed when None). ``line`` is the 0-based line of the
    link's first character plus ``line_offset`` (for a body that starts after front matter). Targets keep what
    was written (``.md`` is not stripped; resolution owns extensions). Markdown images ``![alt](x.png)`` are
    embeds, as in Obsidian's own metadata. External URLs and ``#anchor``-only Markdown links are skipped.
    """
    if masked is None:
        masked = masked_spans(text)
    blank = _blank_out(text, masked)
    found: list[_Found] = []
    wiki_spans: list[tuple[int, int]] = []

    for m in _WIKILINK_RE.finditer(blank):
        start = m.start()
        inner = m.group(1)
        if _MASK_CHAR in inner:
            continue
        opened = _opening(blank, start, "wiki")
        if opened is None:
            continue
        kind, start = opened
        wiki_spans.append((start, m.end()))
        inner = inner.replace("\\|", "|")  # inside a table the pipe must be written \|
        target_part, sep, display = inner.partition("|")
        target, heading, block = _split_fragment(target_part)
        if target or heading is not None or block is not None:
            display = display.strip()
            span = (*_note_part(text, m.start(1), m.end(1), "#|"), m.end())
            found.append((start, kind, target, display if sep and display else None, heading, block, span))

    wiki_starts = [s for s, _ in wiki_spans]

    def in_wikilink(offset: int) -> bool:
        i = bisect_right(wiki_starts, offset) - 1
        return i >= 0 and offset < wiki_spans[i][1]

    def scan_markdown(pos: int, endpos: int) -> None:
        for m in _MD_LINK_RE.finditer(blank, pos, endpos):
            start = m.start()
            opened = _opening(blank, start, "markdown")
            if opened is None:
                continue
            kind, start = opened
            text_start, text_end = m.span("text")
            if blank.find("[", text_start, text_end) >= 0:
                scan_markdown(text_start, text_end)  # a link inside the text, like an image inside a link
            which = "angle" if m.group("angle") is not None else "bare"
            raw = m.group(which)
            if _MASK_CHAR in raw or in_wikilink(start):
                continue
            raw = raw.strip()
            if "\\" in raw:
                raw = _MD_ESCAPE_RE.sub(r"\1", raw)
            if not raw or raw[0] == "#" or raw.startswith("//") or _SCHEME_RE.match(raw):
                continue  # an external URL, or an anchor in the rendered page rather than a vault link
            target, heading, block = _split_fragment(raw)
            display = text[text_start:text_end].strip()
            found.append(
                (
                    start,
                    kind,
                    unquote(target) if "%" in target else target,
                    display or None,
                    _unquote(heading),
                    _unquote(block),
                    (*_note_part(text, *m.span(which), "#"), m.end()),
                )
            )

    scan_markdown(0, len(blank))
    found.sort(key=lambda item: item[0])

    links: list[LocatedLink] = []
    line = line_offset
    prev = 0
    for start, kind, target, display, heading, block, (t_start, t_end, end) in found:
        line += text.count("\n", prev, start)
        prev = start
        links.append(
            LocatedLink(start, end, t_start, t_end, Link(kind, target, line, display, heading, block))
        )
    return links


# ---------------------------------------------------------------------------------------------------------------
# Tags
# ---------------------------------------------------------------------------------------------------------------

# "#" at the start or after whitespace (so "page#section" and "##" are not tags), then tag characters:
# letters, digits, "_", "-", "/" (plus combining marks, so NFD text works) and emoji, which Obsidian's help
# lists among them ("#🚀launch"): the symbol and pictograph blocks, with the joiner, variation selector and
# keycap mark that build emoji sequences. The lookbehind sits after the literal "#" so that the regex engine
# can skip to each "#" in C.
_EMOJI = "\u200d\u20e3\u2300-\u23ff\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff"
_TAG_RE = re.compile(rf"#(?<!\S#)([\w/\-\u0300-\u036f{_EMOJI}]+)")


def extract_tags(text: str, masked: list[tuple[int, int]] | None = None) -> list[str]:
    """Inline ``#tags`` without the ``#``, first spelling kept, deduplicated case-insensitively.

    A tag needs one non-digit character (``#123`` is not a tag, as in Obsidian); ``# Title`` is a heading.
    """
    seen: set[str] = set()
    tags: list[str] = []
    for _, tag in tag_occurrences(text, masked):
        key = tag.casefold()
        if key not in seen:
            seen.add(key)
            tags.append(tag)
    return tags


def tag_occurrences(text: str, masked: list[tuple[int, int]] | None = None) -> Iterator[tuple[int, str]]:
    """Every inline ``#tag`` as (offset of its ``#``, tag without it), in order: where a tag search
    points. The rules of :func:`extract_tags`."""
    if masked is None:
        masked = masked_spans(text)
    # A mask never starts with a tag character and ends with "`", "%", ">" or just before a line break, so a "#"
    # right after a mask is never after whitespace: checking the "#" itself gives what blanking masks out would.
    mask_starts = [s for s, _ in masked]
    for m in _TAG_RE.finditer(text):
        tag = m.group(1)
        if tag.isdigit():
            continue
        offset = m.start()
        i = bisect_right(mask_starts, offset) - 1
        if i >= 0 and offset < masked[i][1]:
            continue
        yield offset, tag


def tag_at(text: str, offset: int) -> str | None:
    """The ``#tag`` starting at ``offset`` (without the ``#``), or None: the rules of :func:`extract_tags`
    for a renderer that walks the text itself (masking is the renderer's own)."""
    m = _TAG_RE.match(text, offset)
    return m.group(1) if m is not None and not m.group(1).isdigit() else None


def normalize_tag(raw: str) -> str:
    """A front-matter tag as Obsidian shows it: ``" #area/x "`` -> ``"area/x"``."""
    return raw.strip().lstrip("#").strip()


# ---------------------------------------------------------------------------------------------------------------
# Resolution
# ---------------------------------------------------------------------------------------------------------------

ResolutionStatus = Literal["resolved", "ambiguous", "unresolved", "self"]


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a link target points.

    ``resolved``: ``path`` is the file (``candidates == (path,)``). ``ambiguous``: ``path`` is None and
    ``candidates`` lists every match, sorted. ``unresolved``: no file. ``self``: an empty target such as
    ``[[#heading]]``; ``path`` is the source note.
    """

    status: ResolutionStatus
    path: str | None
    candidates: tuple[str, ...] = ()


def _key(s: str) -> str:
    """Comparison key: NFC and Unicode casefold, as Obsidian matches names on case-insensitive systems."""
    if s.isascii():
        return s.lower()
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", s).casefold())


def _is_note(path: str) -> bool:
    return path[-3:].lower() == ".md"


class LinkResolver:
    """Resolves link targets against every file of a vault, the way Obsidian does.

    Unlike Obsidian, which silently picks one of several same-named notes, a bare name that matches more than
    one file is reported as ``ambiguous``: which note is meant depends on Obsidian's internal file order, so
    vaultlens (audits, the edit planner) must ask for a path-qualified link instead of guessing.

    Order of lookup: a target with ``/`` is tried as a vault path (a leading ``/`` means vault path only), then
    relative to the source note's folder (``./``, ``../``), then as a path suffix on whole components
    (``b/Note`` matches ``a/b/Note.md``); a bare name matches a file name anywhere. At each step a note
    (``target + ".md"``) is preferred to a file named exactly ``target`` (``img.png``, ``board.canvas``).
    """

    def __init__(self, paths: Iterable[str]) -> None:
        self._key_of: dict[str, str] = {}
        self._by_path: dict[str, list[str]] = {}
        self._by_name: dict[str, list[str]] = {}
        for path in paths:
            if path in self._key_of:
                continue
            key = _key(path.lstrip("/"))
            self._key_of[path] = key
            self._by_path.setdefault(key, []).append(path)
            self._by_name.setdefault(key.rpartition("/")[2], []).append(path)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(self._key_of)

    def paths_by_name(self, name: str) -> tuple[str, ...]:
        """Every file whose file name (with extension) matches ``name`` case-insensitively, sorted."""
        return tuple(sorted(self._by_name.get(_key(name), ())))

    def resolve(self, target: str, source_path: str) -> Resolution:
        """Resolve a link target (note part only, no ``#heading``) written in ``source_path``."""
        t = unicodedata.normalize("NFC", target.strip())
        if not t:
            return Resolution("self", source_path, (source_path,))
        if "/" not in t:
            return self._result(self._lookup(self._by_name, _key(t)))
        if t.startswith("/"):
            return self._result(self._lookup(self._by_path, _key(t.lstrip("/"))))

        explicit_relative = t.startswith(("./", "../"))
        if not explicit_relative:
            found = self._lookup(self._by_path, _key(t))
            if found:
                return self._result(found)
        folder = posixpath.dirname(source_path.lstrip("/"))
        joined = posixpath.normpath(posixpath.join(folder, t))
        if joined not in (".", "..") and not joined.startswith("../"):
            found = self._lookup(self._by_path, _key(joined))
            if found:
                return self._result(found)
        if explicit_relative:
            return Resolution("unresolved", None, ())

        suffix = _key(t)
        name = suffix.rpartition("/")[2]
        for want, name_key in ((suffix + ".md", name + ".md"), (suffix, name)):
            tail = "/" + want
            found = [p for p in self._by_name.get(name_key, ()) if self._key_of[p].endswith(tail)]
            if found:
                return self._result(found)
        return Resolution("unresolved", None, ())

    def shortest_linktext(self, path: str) -> str:
        """The shortest link text (notes without ``.md``) that resolves to ``path`` from any note.

        The bare name if unique, else the shortest unique path suffix, else the full path (``/name`` at the vault
        root). If even that is ambiguous (files differing only in case), the full path is returned anyway.
        """
        if path not in self._key_of:
            raise KeyError(f"not a file of this vault: {path!r}")
        parts = path.lstrip("/").split("/")
        for k in range(1, len(parts) + 1):
            suffix = "/".join(parts[-k:])
            for text in self._forms(suffix):
                if self._resolves_to(text, path):
                    return text
        if len(parts) == 1:  # a root file whose name is taken elsewhere: "/name" is a vault path
            for text in self._forms("/" + parts[0]):
                if self._resolves_to(text, path):
                    return text
            return "/" + parts[0]
        return path.lstrip("/")

    @staticmethod
    def _forms(suffix: str) -> list[str]:
        forms: list[str] = []
        if _is_note(suffix) and suffix[:-3] and not suffix.endswith("/.md"):
            forms.append(suffix[:-3])
        forms.append(suffix)
        return forms

    def _resolves_to(self, text: str, path: str) -> bool:
        result = self.resolve(text, path)
        return result.status == "resolved" and result.path == path

    @staticmethod
    def _lookup(index: dict[str, list[str]], key: str) -> list[str]:
        return index.get(key + ".md") or index.get(key) or []

    @staticmethod
    def _result(found: list[str]) -> Resolution:
        if not found:
            return Resolution("unresolved", None, ())
        if len(found) == 1:
            return Resolution("resolved", found[0], (found[0],))
        return Resolution("ambiguous", None, tuple(sorted(found)))
