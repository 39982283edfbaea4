"""Characters a terminal or an editor does not show as themselves, and how to show them.

A C0/C1 control (ESC ``[2K``, a carriage return, a backspace) makes a terminal erase or overwrite
what it printed, and a bidirectional control (U+202E) or an invisible format character makes text
read as something else: a diff holding one could show a harmless line while the note receives
another. So every diff and every preview of model text is shown through :func:`visible` (each such
character becomes a name in angle brackets: ``<ESC>``, ``<CR>``, ``<BOM>``, ``<U+202E>``), and
model text holding one of :data:`REFUSED` is refused (:func:`refused_in`) before anyone is asked to
confirm it. A diff, whose SHA-256 the user confirms, goes through :func:`exact`: also a ``<`` the
text holds before such a name is shown as ``<LT>``, so the diff reads back to one text only (a note
that says ``<CR>`` never looks like one holding a CR).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "BIDI",
    "REFUSED",
    "SHOWN",
    "describe",
    "exact",
    "json_visible",
    "markdown_visible",
    "refused_in",
    "refused_in_value",
    "visible",
]

# bidirectional embeddings, overrides, isolates and marks: they reorder how text is displayed
BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_C0 = "NUL SOH STX ETX EOT ENQ ACK BEL BS HT LF VT FF CR SO SI DLE DC1 DC2 DC3 DC4 NAK SYN ETB CAN EM SUB ESC FS GS RS US"
_NAMES = {chr(i): name for i, name in enumerate(_C0.split())} | {"\x7f": "DEL", "\ufeff": "BOM"}
_BIDI_CLASS = "".join(sorted(BIDI))
_SURROGATE_BYTES = "\udc80-\udcff"  # a byte that is not UTF-8, decoded with surrogateescape (a diff's)
# what model text may not carry: controls but tab and newline, DEL, C1, bidi controls, line and
# paragraph separators (an editor breaks the line there), a BOM inside the text
REFUSED = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_CLASS}\u2028\u2029\ufeff]")
# what a diff or a preview shows by name: the above and the zero-width characters
_SHOWN_CLASS = f"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_BIDI_CLASS}\u2028\u2029\ufeff\u200b-\u200d\u2060-\u2064{_SURROGATE_BYTES}"
SHOWN = re.compile(f"[\r{_SHOWN_CLASS}]")
# every name in angle brackets a view of text may show (``no LF``: a diff's lone CR ending a line)
_TOKENS = rf"(?:{'|'.join(sorted(set(_NAMES.values())))}|LT|no LF|U\+[0-9A-F]{{4,6}}|0x[0-9A-F]{{2}})"
_SHOWN_OR_LITERAL = re.compile(f"[\r{_SHOWN_CLASS}]|<(?={_TOKENS}>)")  # a "<" that would start a name
_NAME_START = re.compile(f"<(?={_TOKENS}>)")  # the "<" of a name a view shows
_SHOWN_IN_LINES = re.compile(f"[{_SHOWN_CLASS}]|\r(?!\n)")  # a CRLF line ending kept as it is


def _name(ch: str) -> str:
    if ch == "<":
        return "LT"
    if "\udc80" <= ch <= "\udcff":
        return f"0x{ord(ch) - 0xDC00:02X}"
    return _NAMES.get(ch) or f"U+{ord(ch):04X}"


def describe(ch: str) -> str:
    """One hidden character as a message names it: ``<ESC> (U+001B)``."""
    return f"<{_name(ch)}> (U+{ord(ch):04X})"


def visible(text: str, line_ends: bool = False) -> str:
    """``text`` with every character of :data:`SHOWN` replaced by its name in angle brackets
    (``line_ends``: a whole note's text, whose CRLF line endings stay as they are). A shown text
    shown again is unchanged."""
    return (_SHOWN_IN_LINES if line_ends else SHOWN).sub(lambda m: f"<{_name(m[0])}>", text)


def exact(text: str) -> str:
    """:func:`visible`, and a ``<`` of ``text`` that would read as the start of a name shown as
    ``<LT>``: two texts never look alike (a diff's lines, whose SHA-256 the user confirms)."""
    return _SHOWN_OR_LITERAL.sub(lambda m: f"<{_name(m[0])}>", text)


def markdown_visible(text: str) -> str:
    """:func:`visible` for text a Markdown renderer draws: each name's ``<`` backslash-escaped, or
    the renderer would take ``<ESC>`` for an HTML tag and drop it (the name would vanish)."""
    return _NAME_START.sub(r"\\<", visible(text))


def json_visible(json_text: str) -> str:
    """JSON text (``ensure_ascii=False``) with every character of :data:`SHOWN` written as its
    ``\\uXXXX`` escape: it parses to the same value, and a terminal shows nothing hidden in it."""
    return SHOWN.sub(lambda m: f"\\u{ord(m[0]):04x}", json_text)


def refused_in(text: str) -> str | None:
    """The first character of :data:`REFUSED` in ``text``, or None. A CR right before a newline is
    a line ending (the note tools write the note's own), not a hidden character."""
    found = REFUSED.search(text.replace("\r\n", "\n"))
    return None if found is None else found[0]


def refused_in_value(value: Any, where: str = "$") -> tuple[str, str] | None:
    """The first string of a JSON value (keys included) holding a character of :data:`REFUSED`:
    its JSON path and that character, or None."""
    if isinstance(value, str):
        ch = refused_in(value)
        return None if ch is None else (where, ch)
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            ch = refused_in(str(key))
            if ch is not None:
                return where, ch
            items.append((f"{where}.{key}", item))
    elif isinstance(value, list):
        items = [(f"{where}[{i}]", item) for i, item in enumerate(value)]
    for path, item in items:
        found = refused_in_value(item, path)
        if found is not None:
            return found
    return None
