"""Links and tags as Obsidian reads them, and link resolution as Obsidian does it.

Everything here works on plain text with regexes and one linear scan, not on a markdown-it token stream:
wikilinks, ``%%comments%%`` and ``#tags`` are not CommonMark, and this runs over every note of a
50,000-note vault on each sync. Code and comments are masked first, so nothing inside them counts.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from vaultlens.vault.model import Link, LinkKind

__all__ = [
    "LinkResolver",
    "Resolution",
    "ResolutionStatus",
    "extract_links",
    "extract_tags",
    "masked_spans",
    "normalize_tag",
]

# ---------------------------------------------------------------------------------------------------------------
# Masking: code and comments
# ---------------------------------------------------------------------------------------------------------------

_FENCE_RUN_RE = {"`": re.compile("```"), "~": re.compile("~~~")}
_RUN_RE = {"`": re.compile("`*"), "~": re.compile("~*")}
# Inline constructs, each matched whole so that a note costs one Python step per construct, not per character.
# Every alternative starts with a literal character, which lets the regex engine skip plain text in C.
_INLINE_RE = re.compile(
    r"""
      \\[\\`%<]                                   # an escaped opener (or backslash) is text
    | `(?P<bt>`*+)                                # code span: a run of backticks ...
        (?:[^`\n]++                               # ... then text,
          |\n(?![ \t\r]*+(?:\n|\Z)|[ \t>]*+(?:```|~~~))  # line breaks that end neither paragraph nor block,
          |(?!`(?P=bt)(?!`))`++                   # backtick runs of another length,
        )*+
        `(?P=bt)(?!`)                             # ... up to a run of exactly the same length
    | ``*+                                        # a run with no closer: literal backticks
    | %%(?:[^%]++|%(?!%))*+(?:%%|\Z)              # Obsidian comment; Obsidian hides the rest if unclosed
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
                continue  # not at the start of a line (this also skips the rest of a longer run)
            run_end = _RUN_RE[char].match(text, start).end()
            line_end = text.find("\n", run_end)
            if line_end < 0:
                line_end = len(text)
            info = text[run_end:line_end]
            if char == "`" and "`" in info:
                continue  # CommonMark: a backtick fence's info string cannot contain a backtick
            fences.append((i + 1, line_end, char, run_end - start, not info.strip()))
    fences.sort()
    return fences


def masked_spans(text: str) -> list[tuple[int, int]]:
    """Offset ranges ``[start, end)`` where links and tags must not be recognised.

    Fenced code (an unclosed fence runs to the end), inline code spans, ``%%comments%%`` and ``<!-- -->``.
    One left-to-right pass, because whichever construct opens first wins (a ``%%`` inside a code span is code,
    a backtick inside a comment is comment). Sorted and non-overlapping.
    """
    n = len(text)
    fences = _fence_lines(text)
    spans: list[tuple[int, int]] = []
    pos = 0
    fi = 0
    nxt: re.Match[str] | None = None  # next inline construct, kept across fences so text is searched once
    exhausted = False
    html_may_close = True
    while pos < n:
        while fi < len(fences) and fences[fi][0] < pos:
            fi += 1
        if not exhausted and (nxt is None or nxt.start() < pos):
            nxt = _INLINE_RE.search(text, pos)
            exhausted = nxt is None
        if nxt is None or exhausted:
            if fi >= len(fences):
                break
        elif fi >= len(fences) or nxt.start() < fences[fi][0]:
            start, end = nxt.span()
            char = text[start]
            if char == "%" or (char == "`" and nxt.group("bt") is not None):
                spans.append((start, end))
            elif char == "<":
                # str.find, not the regex: once no "-->" is left, every later "<!--" fails at once instead
                # of scanning to the end again (quadratic on a note full of "<!--")
                close = text.find("-->", end) if html_may_close else -1
                if close >= 0:
                    end = close + 3
                    spans.append((start, end))
                else:
                    html_may_close = False
                    if _starts_line(text, start):
                        spans.append((start, n))  # an HTML block comment left open runs to the end (CommonMark)
                        end = n
                    # else: an unclosed inline "<!--" is just text
            pos = end
            continue
        line_start, _, char, length, _ = fences[fi]
        end = n
        for j in range(fi + 1, len(fences)):
            _, close_end, close_char, close_length, closes = fences[j]
            if closes and close_char == char and close_length >= length:
                end = close_end
                break
        spans.append((line_start, end))
        pos = end
    return spans


def _starts_line(text: str, offset: int) -> bool:
    line_start = text.rfind("\n", 0, offset) + 1
    return not text[line_start:offset].strip(" ")


def _blank_out(text: str, masked: list[tuple[int, int]]) -> str:
    """Replace masked characters with NUL, keeping newlines and offsets.

    NUL is neither whitespace nor punctuation, so a masked region never makes a following ``#`` look like a tag
    and never completes a link; a match that contains NUL overlaps a mask.
    """
    if not masked:
        return text
    parts: list[str] = []
    prev = 0
    for start, end in masked:
        parts.append(text[prev:start])
        parts.append("\n".join(_MASK_CHAR * len(line) for line in text[start:end].split("\n")))
        prev = end
    parts.append(text[prev:])
    return "".join(parts)


# ---------------------------------------------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------------------------------------------

_WIKILINK_RE = re.compile(r"(!?)\[\[([^\[\]\n]+)\]\]")
_MD_LINK_RE = re.compile(
    r"""
    (!?)\[
      (?P<text>(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*)
    \]\(
      [ \t]*\n?[ \t]*
      (?:<(?P<angle>[^<>\n]*)>|(?P<bare>(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))+))
      (?:\s+(?:"[^"]*"|'[^']*'|\([^()]*\)))?
      \s*
    \)
    """,
    re.VERBOSE | re.DOTALL,
)
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_MD_ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")


def _escaped(text: str, offset: int) -> bool:
    """True when the character at ``offset`` is preceded by an odd number of backslashes."""
    count = 0
    i = offset - 1
    while i >= 0 and text[i] == "\\":
        count += 1
        i -= 1
    return count % 2 == 1


def _split_fragment(target: str) -> tuple[str, str | None, str | None]:
    """``note#heading`` / ``note#^block`` -> (note, heading, block); nested ``#h1#h2`` stays in heading."""
    note, sep, fragment = target.partition("#")
    note = note.strip()
    fragment = fragment.strip()
    if not sep or not fragment:
        return note, None, None
    if fragment.startswith("^"):
        return note, None, fragment[1:] or None
    return note, fragment, None


def _wikilink(kind: LinkKind, inner: str, line: int) -> Link | None:
    inner = inner.replace("\\|", "|")  # inside a table the pipe must be written \|
    target_part, sep, display = inner.partition("|")
    target, heading, block = _split_fragment(target_part)
    if not target and heading is None and block is None:
        return None
    display = display.strip()
    return Link(kind, target, line, display if sep and display else None, heading, block)


def _markdown_link(kind: LinkKind, raw_target: str, display: str, line: int) -> Link | None:
    raw_target = _MD_ESCAPE_RE.sub(r"\1", raw_target.strip())
    if not raw_target or raw_target.startswith(("#", "//")) or _SCHEME_RE.match(raw_target):
        return None  # external URL, or an anchor in the rendered page rather than a vault link
    note, heading, block = _split_fragment(raw_target)
    note = unquote(note)
    heading = unquote(heading) if heading is not None else None
    block = unquote(block) if block is not None else None
    return Link(kind, note, line, display or None, heading, block)


def extract_links(text: str, masked: list[tuple[int, int]] | None = None, line_offset: int = 0) -> list[Link]:
    """Wikilinks, embeds and vault-internal Markdown links, in document order.

    ``line`` is the 0-based line of the link's first character plus ``line_offset`` (for a body that starts after
    front matter). Targets are kept as written (``.md`` is not stripped): resolution owns extensions.
    Markdown images ``![alt](x.png)`` are embeds, as in Obsidian's own metadata.
    """
    if masked is None:
        masked = masked_spans(text)
    blank = _blank_out(text, masked)
    found: list[tuple[int, Link]] = []
    wiki_spans: list[tuple[int, int]] = []

    for m in _WIKILINK_RE.finditer(blank):
        inner = m.group(2)
        bracket = m.start(2) - 2
        if _MASK_CHAR in inner:
            continue
        if m.group(1):
            # "\![[a]]" is a literal "!" followed by an ordinary wikilink
            kind: LinkKind = "wiki" if _escaped(blank, m.start()) else "embed"
        elif _escaped(blank, bracket):
            continue
        else:
            kind = "wiki"
        start = m.start() if kind == "embed" else bracket
        wiki_spans.append((start, m.end()))
        link = _wikilink(kind, inner, 0)
        if link is not None:
            found.append((start, link))

    wiki_starts = [s for s, _ in wiki_spans]

    def inside_wikilink(offset: int) -> bool:
        i = bisect_left(wiki_starts, offset + 1) - 1
        return i >= 0 and offset < wiki_spans[i][1]

    def scan_markdown(pos: int, endpos: int) -> None:
        for m in _MD_LINK_RE.finditer(blank, pos, endpos):
            bracket = m.start("text") - 1
            if m.group(1):
                md_kind: LinkKind = "markdown" if _escaped(blank, m.start()) else "embed"
            elif _escaped(blank, bracket):
                continue
            else:
                md_kind = "markdown"
            start = m.start() if md_kind == "embed" else bracket
            # the link text may hold another link, like an image inside a link
            scan_markdown(m.start("text"), m.end("text"))
            raw = m.group("angle") if m.group("angle") is not None else m.group("bare")
            if _MASK_CHAR in raw or inside_wikilink(start):
                continue
            link = _markdown_link(md_kind, raw, text[m.start("text") : m.end("text")].strip(), 0)
            if link is not None:
                found.append((start, link))

    scan_markdown(0, len(blank))
    found.sort(key=lambda item: item[0])

    links: list[Link] = []
    line = line_offset
    prev = 0
    for start, link in found:
        line += text.count("\n", prev, start)
        prev = start
        links.append(Link(link.kind, link.target, line, link.display, link.heading, link.block))
    return links


# ---------------------------------------------------------------------------------------------------------------
# Tags
# ---------------------------------------------------------------------------------------------------------------

# "#" at the start or after whitespace (so "page#section" and "##" are not tags), then tag characters:
# letters, digits, "_", "-", "/" (plus combining marks, so NFD text works).
_TAG_RE = re.compile(r"(?<!\S)#([\w/\-\u0300-\u036f]+)")


def extract_tags(text: str, masked: list[tuple[int, int]] | None = None) -> list[str]:
    """Inline ``#tags`` without the ``#``, first spelling kept, deduplicated case-insensitively.

    A tag needs one non-digit character (``#123`` is not a tag, as in Obsidian); ``# Title`` is a heading.
    """
    if masked is None:
        masked = masked_spans(text)
    blank = _blank_out(text, masked)
    seen: set[str] = set()
    tags: list[str] = []
    for m in _TAG_RE.finditer(blank):
        tag = m.group(1)
        if all(c.isdigit() for c in tag):
            continue
        key = tag.casefold()
        if key not in seen:
            seen.add(key)
            tags.append(tag)
    return tags


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
