"""Split a note into atomic notes: the model chooses titles, line ranges and links; code does the rest.

The model sees the note with numbered lines and answers which lines go into which new note (and
which new notes should link to each other); it never retypes content. Code then, before anything
is shown:

1. turns the ranges into line sets (:func:`partition`): a line in two notes, a range outside the
   note or one that cuts a code block (also one in a list item or a quote) is refused; the front matter always stays with the
   original; blank lines right after a note's lines go with them; every other line stays;
2. checks the titles (:func:`check_titles`): valid file names, distinct, not the name of a note
   the vault already has (a ``[[Title]]`` link must find the new note);
3. builds each new note from the original's exact lines (:func:`build`), with a link back to the
   original and the links the model asked for, and the original as an index of links (``index``)
   or unchanged;
4. verifies what was built (:func:`verify`): each original line is in exactly one new note or
   stays in the original, nothing lost and nothing doubled; and no new note starts with front
   matter (:func:`check_no_front_matter`: a part opening with ``---`` would turn text into properties).

All the new notes and the change to the original are one operation group (one diff, one yes,
applied and undone together).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from vaultlens.chunking.source import NoteSource
from vaultlens.errors import PlanRefused
from vaultlens.llm.base import Usage
from vaultlens.safewrite import Change
from vaultlens.services.changing.writes import Planned
from vaultlens.services.drafting.draft import Prompt, build_prompt, numbered
from vaultlens.vault.hidden import SHOWN, describe, visible
from vaultlens.vault.parse import sealed_blocks, split_front_matter

__all__ = [
    "SCHEMA",
    "Part",
    "Partition",
    "Proposed",
    "SplitResult",
    "build",
    "check_coverage",
    "check_no_front_matter",
    "check_titles",
    "encoded",
    "note_lines",
    "partition",
    "prepare",
    "propose",
    "ranges_of",
    "verify",
]

MAX_NOTES = 30
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "notes": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_NOTES,
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "minLength": 1, "maxLength": 120},
                    "ranges": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {"first": {"type": "integer"}, "last": {"type": "integer"}},
                            "required": ["first", "last"],
                            "additionalProperties": False,
                        },
                    },
                    "links": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["title", "ranges", "links"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["notes"],
    "additionalProperties": False,
}
RULES = """- You plan how to split one note into atomic notes (one idea each). You never write note \
text: you name line ranges of the note, by the line numbers shown before each line ("12| ")."""
# what a note name may not hold: Obsidian's forbidden characters, controls, and what a terminal or
# a file list would not show as itself (a bidi override, a zero-width space: vault/hidden.py)
_BAD_TITLE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f\x7f]|' + SHOWN.pattern)
_AGAIN = "Run the split again (the model may plan better), or split the note by hand."


@dataclass(frozen=True, slots=True)
class Part:
    """One new note: its title, the original's lines it holds (1-based, ascending), its links."""

    title: str
    lines: tuple[int, ...]
    links: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Partition:
    """Every line of the original, each in exactly one part or in ``kept`` (it stays)."""

    parts: tuple[Part, ...]
    kept: tuple[int, ...]


def note_lines(text: str) -> list[str]:
    """The note's lines without their breaks (a final line break ends the last line, adds none)."""
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def prepare(source: NoteSource) -> Prompt:
    """The prompt: the note with numbered lines as data, and the task."""
    fixed = source.note.body_start_line
    front = f" Lines 1-{fixed} are the note's front matter: they stay in the original." if fixed else ""
    task = (
        "Split the note into atomic notes, each about one idea, of consecutive or scattered lines of "
        f"the note (at most {MAX_NOTES} notes). Give each a short title that is a valid file name "
        '(no / \\ : * ? " < > | # ^ [ ]), the line ranges it takes (first and last line, inclusive), '
        "and the titles of the other new notes it should link to. Never put a line into two notes; "
        f"lines you put into no note stay in the original.{front} Never cut a code block. Answer as "
        '{"notes": [{"title": "...", "ranges": [{"first": 3, "last": 9}], "links": ["..."]}]}.'
    )
    parts = [
        (f"The note {source.path}, one numbered line each:", numbered("\n".join(note_lines(source.text))))
    ]
    return build_prompt(RULES, parts, task)


def partition(answer: dict[str, Any], lines: Sequence[str], front_matter: int) -> Partition:
    """The model's plan as a partition of the note's lines, or :class:`PlanRefused` (see the module)."""
    total = len(lines)
    owner: dict[int, int] = {}  # line -> the index of the part that takes it
    parts: list[Part] = []
    sealed = [(kind, a, b) for kind, a, b in sealed_blocks("\n".join(lines)) if kind == "code"]
    for i, raw in enumerate(answer["notes"]):
        title = str(raw["title"]).strip()
        taken: set[int] = set()
        for r in raw["ranges"]:
            first, last = int(r["first"]), int(r["last"])
            if not 1 <= first <= last <= total:
                raise PlanRefused(
                    f"The split plan gives {title!r} lines {first}-{last}, outside the note's {total} lines; "
                    "nothing was planned.",
                    hint=_AGAIN,
                )
            for _, a, b in sealed:  # also a block inside a list item or a quote
                if (a < first <= b) or (a <= last < b):
                    raise PlanRefused(
                        f"The split plan cuts the code block of lines {a}-{b} (at {title!r}: {first}-{last}); "
                        "nothing was planned.",
                        hint=_AGAIN,
                    )
            for n in range(max(first, front_matter + 1), last + 1):
                if owner.get(n, i) != i:
                    other = str(answer["notes"][owner[n]]["title"]).strip()
                    raise PlanRefused(
                        f"The split plan puts line {n} into both {other!r} and {title!r}; nothing was planned.",
                        hint=_AGAIN,
                    )
                owner[n] = i
                taken.add(n)
        links = tuple(dict.fromkeys(str(x).strip() for x in raw["links"] if str(x).strip()))
        parts.append(Part(title, tuple(sorted(taken)), links))
    for n in range(front_matter + 1, total + 1):  # blank lines after a note's line go with it
        if n not in owner and not lines[n - 1].strip() and n - 1 in owner:
            owner[n] = owner[n - 1]
    parts = [
        Part(p.title, tuple(sorted(n for n, o in owner.items() if o == i)), p.links)
        for i, p in enumerate(parts)
    ]
    empty = [p.title for p in parts if not any(lines[n - 1].strip() for n in p.lines)]
    if empty:
        raise PlanRefused(f"The split plan gives {empty[0]!r} no text; nothing was planned.", hint=_AGAIN)
    split = Partition(tuple(parts), tuple(n for n in range(1, total + 1) if n not in owner))
    check_coverage(split, total)
    return split


def check_coverage(split: Partition, total: int) -> None:
    """:class:`PlanRefused` unless lines 1..``total`` are each in exactly one part or kept."""
    seen: dict[int, int] = {}
    for n in [n for p in split.parts for n in p.lines] + list(split.kept):
        seen[n] = seen.get(n, 0) + 1
    doubled = sorted(n for n, c in seen.items() if c > 1)
    lost = [n for n in range(1, total + 1) if n not in seen]
    extra = sorted(n for n in seen if not 1 <= n <= total)
    if doubled or lost or extra:
        said = "; ".join(
            f"{what}: {', '.join(map(str, ns[:10]))}" for what, ns in
            (("in two places", doubled), ("in no note", lost), ("not in the note", extra)) if ns
        )  # fmt: skip
        raise PlanRefused(f"The split would lose or double lines ({said}); nothing was planned.", hint=_AGAIN)


def _key(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def name_problem(name: str) -> str | None:
    """Why ``name`` (a note's name without ``.md``, or a folder's) is not one Obsidian accepts and
    links can name, or None."""
    bad = _BAD_TITLE.search(name)
    if bad:
        return f"it contains {describe(bad[0]) if SHOWN.match(bad[0]) else repr(bad[0])}"
    if not name or name.startswith(".") or name != name.strip() or len(name) > 120:
        return "it is empty, too long, or starts with a dot or a space"
    return None


def check_titles(titles: Sequence[str], taken: Iterable[str]) -> None:
    """:class:`PlanRefused` unless every title is a valid file name, distinct, and not the name of
    a note the vault has (``taken``: the vault's note names without ``.md``)."""
    existing = {_key(t) for t in taken}
    seen: set[str] = set()
    for title in titles:
        why = name_problem(title)
        if why:
            raise PlanRefused(
                f"The title {visible(title)!r} is not a valid note name ({why}); nothing was planned.",
                hint=_AGAIN,
            )
        if _key(title) in seen:
            raise PlanRefused(f"Two new notes would be called {title!r}; nothing was planned.", hint=_AGAIN)
        if _key(title) in existing:
            raise PlanRefused(
                f"The vault already has a note called {title!r}; nothing was planned.",
                hint=_AGAIN + " A new note of a taken name would make [[links]] to it ambiguous.",
            )
        seen.add(_key(title))


def ranges_of(lines: Iterable[int]) -> list[list[int]]:
    """Line numbers as inclusive [first, last] runs."""
    out: list[list[int]] = []
    for n in sorted(lines):
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def encoded(text: str, source: NoteSource, bom: bool = False) -> bytes:
    """``text`` (LF) as bytes written like ``source``: its line ending, and a BOM with ``bom``."""
    return (("\ufeff" if bom else "") + text.replace("\n", source.newline)).encode("utf-8")


def _joined(body: list[str], tail: str) -> str:
    """``body``'s lines, exactly, then a blank line (unless the body ends with one) and ``tail``."""
    if not body:
        return tail + "\n"
    return "\n".join(body) + ("\n" if not body[-1].strip() else "\n\n") + tail + "\n"


def new_path_of(original: str, title: str) -> str:
    """A new note lives beside the original."""
    folder = original.rpartition("/")[0]
    return f"{folder}/{title}.md" if folder else f"{title}.md"


def build(source: NoteSource, split: Partition, index: bool, original_link: str) -> list[Change]:
    """The new notes from the original's exact lines (then a link back and the links asked for) and,
    with ``index``, the original rewritten as its kept lines and a list of links to the new notes."""
    lines = note_lines(source.text)
    titles = {p.title for p in split.parts}
    changes = []
    for p in split.parts:
        see = [t for t in p.links if t in titles and t != p.title]
        footer = f"From [[{original_link}]]" + (
            "; see also " + ", ".join(f"[[{t}]]" for t in see) if see else ""
        )
        text = _joined([lines[n - 1] for n in p.lines], footer)
        changes.append(
            Change(
                new_path_of(source.path, p.title),
                encoded(text, source),
                f"split from {source.path}",
                None,
                unique_name=True,
            )
        )
    if index:
        links = "\n".join(f"- [[{p.title}]]" for p in split.parts)
        text = _joined([lines[n - 1] for n in split.kept], links)
        summary = f"an index of the {len(split.parts)} notes split from it"
        changes.insert(0, Change(source.path, encoded(text, source, source.bom), summary, source.raw))
    return changes


def verify(source: NoteSource, split: Partition, changes: Sequence[Change], index: bool) -> None:
    """Read the built notes back: each holds exactly its lines, in order, first; the original (with
    ``index``) starts with exactly the kept lines. Together with :func:`check_coverage` this proves
    every line of the original is in exactly one new note or stays."""
    lines = note_lines(source.text)
    check_coverage(split, len(lines))
    built = {
        c.path: (c.after or b"").decode("utf-8").lstrip("\ufeff").replace(source.newline, "\n")
        for c in changes
    }
    held = [(new_path_of(source.path, p.title), p.lines) for p in split.parts]
    if index:
        held.append((source.path, split.kept))
    for path, numbers in held:
        got = note_lines(built[path])[: len(numbers)]
        if got != [lines[n - 1] for n in numbers]:
            raise PlanRefused(
                f"Internal check failed: {path} does not hold exactly its lines; nothing was planned."
            )


def propose(source: NoteSource, answer: dict[str, Any], note_names: Sequence[str], index: bool) -> Proposed:
    """The model's answer checked and built into the group's changes (see the module docstring).
    ``note_names``: every note of the vault, by name without ``.md`` (the original's included)."""
    lines = note_lines(source.text)
    split = partition(answer, lines, source.note.body_start_line)
    check_titles([p.title for p in split.parts], note_names)
    stem = source.path.rpartition("/")[2].removesuffix(".md")
    namesakes = sum(_key(n) == _key(stem) for n in note_names)
    link = stem if namesakes <= 1 else f"{source.path.removesuffix('.md')}|{stem}"
    changes = build(source, split, index, link)
    verify(source, split, changes, index)
    check_no_front_matter(source, split, changes)
    return Proposed(split, changes)


def check_no_front_matter(source: NoteSource, split: Partition, changes: Sequence[Change]) -> None:
    """:class:`PlanRefused` when a new note would start with front matter: a part whose first line
    is ``---`` with another ``---`` below it would turn its first lines into properties."""
    built = {c.path: (c.after or b"").decode("utf-8").replace(source.newline, "\n") for c in changes}
    lines = note_lines(source.text)
    for part in split.parts:
        body_line = split_front_matter(built[new_path_of(source.path, part.title)])[3]
        if body_line:
            first = part.lines[0]
            raise PlanRefused(
                f"The split plan starts {part.title!r} with line {first} ({lines[first - 1].strip()!r}): "
                f"the new note's lines 1-{body_line} would become front matter (properties), not text; "
                "nothing was planned.",
                hint="Run the split again, or move the '---' line by hand first.",
            )


@dataclass(frozen=True, slots=True)
class Proposed:
    split: Partition
    changes: list[Change]


@dataclass(frozen=True, slots=True)
class NewNote:
    """One note a split makes, as shown: where it goes and the original's lines it holds."""

    title: str
    path: str
    lines: list[list[int]]  # inclusive [first, last] runs
    links: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"title": self.title, "path": self.path, "lines": self.lines, "links": list(self.links)}


@dataclass(frozen=True, slots=True)
class SplitResult:
    """A planned split: the new notes (title, path, lines, links), the lines that stay, the group."""

    path: str
    mode: str  # "index" or "keep-original"
    split: Partition
    plan: Planned
    usage: Usage | None = None

    @property
    def notes(self) -> list[NewNote]:
        return [
            NewNote(p.title, new_path_of(self.path, p.title), ranges_of(p.lines), p.links)
            for p in self.split.parts
        ]

    @property
    def kept(self) -> list[list[int]]:
        """The lines that stay in the original, as inclusive [first, last] runs."""
        return ranges_of(self.split.kept)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "mode": self.mode,
            "notes": [n.as_dict() for n in self.notes],
            "kept": self.kept,
            "plan": self.plan.as_dict(),
            "usage": None if self.usage is None else self.usage.as_dict(),
        }
