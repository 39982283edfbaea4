"""Notes carrying a tag, as Obsidian's tag search lists them: exactly those notes, never a meaning search.

The index holds each note's tags (front matter and inline, from :func:`vaultlens.vault.parse.note_tags`), so it
picks the notes; each is then read through the note-loading seam to say on which lines the tag stands, with the
same tag rules (:func:`vaultlens.vault.links.tag_occurrences`). ``#a`` also lists notes tagged ``#a/b``, and case
does not matter (``#Idea`` is ``#idea``), as in Obsidian.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vaultlens.chunking.source import NoteReader
from vaultlens.errors import InvalidInput, VaultlensError
from vaultlens.index.store import StoreReads
from vaultlens.services.serial import AsDict
from vaultlens.vault.links import masked_spans, normalize_tag, tag_at, tag_occurrences
from vaultlens.vault.parse import NotText, decode_note, note_tags, split_front_matter

__all__ = ["MAX_TAGGED", "TaggedNote", "TaggedNotes", "as_tag", "tag_name", "tagged_notes"]

MAX_TAGGED = 1000  # notes listed at most; ``total`` counts them all
MAX_TAG_CHARS = 200
# a front-matter key that holds tags, and a line that starts the next key
_TAGS_KEY = re.compile(r"^(?:tags|tag)\s*:", re.I)
_NEXT_KEY = re.compile(r"^[^\s#-]")
# the words of a front-matter row that may be tags: "  - '#Рецепт'" and "tags: [a, b/c]" -> рецепт; a, b/c
_TAG_WORDS = re.compile(r"[^\s,:\[\]'\"#]+")


@dataclass(frozen=True, slots=True)
class TaggedNote:
    path: str
    title: str
    tags: list[str]  # the note's tags this search matched, as the note spells them
    lines: list[int]  # 1-based lines where they stand (front matter and body), in order


@dataclass(frozen=True, slots=True)
class TaggedNotes(AsDict):
    tag: str  # without the "#"
    total: int  # notes carrying it (``notes`` holds at most MAX_TAGGED of them, by path)
    notes: list[TaggedNote] = field(default_factory=list)


def as_tag(query: str) -> str | None:
    """The tag a search query is, when it is exactly one ``#tag`` (``"#рецепт/суп"`` -> ``"рецепт/суп"``)."""
    q = query.strip()
    if not q.startswith("#"):
        return None
    name = tag_at(q, 0)
    return name if name is not None and len(name) + 1 == len(q) else None


def tag_name(raw: str) -> str:
    """A tag as a caller writes it (with or without ``#``) -> its name, or a clear refusal."""
    name = normalize_tag(raw)
    if len(name) > MAX_TAG_CHARS or as_tag("#" + name) != name:
        raise InvalidInput(
            f"{raw[:MAX_TAG_CHARS]!r} is not a tag.",
            hint="Give one tag like '#project' or 'project/active': letters, digits, '_', '-' and '/', "
            "at least one of them not a digit.",
        )
    return name


def _matches(tag: str, wanted: str) -> bool:
    key = tag.casefold()
    return key == wanted or key.startswith(wanted + "/")


def _lines(text: str, wanted: str) -> tuple[list[str], list[int]]:
    """The note's tags matching ``wanted`` and the 1-based lines they stand on."""
    frontmatter, _, body_start, body_line = split_front_matter(text)
    found: list[str] = []
    lines: list[int] = []
    fm_tags = [t for t in note_tags(frontmatter, "", []) if _matches(t, wanted)]
    if fm_tags:
        found.extend(fm_tags)
        in_tags = False
        for i, row in enumerate(text[:body_start].split("\n")[1:body_line], start=2):
            if _TAGS_KEY.match(row):
                in_tags = True
            elif _NEXT_KEY.match(row):
                in_tags = False
            if in_tags and any(t.casefold() in _TAG_WORDS.findall(row.casefold()) for t in fm_tags):
                lines.append(i)
    body = text[body_start:]
    line, prev = body_line, 0
    for offset, tag in tag_occurrences(body, masked_spans(body)):
        if _matches(tag, wanted):
            line += body.count("\n", prev, offset)
            prev = offset
            found.append(tag)
            if not lines or lines[-1] != line + 1:
                lines.append(line + 1)
    spellings: dict[str, str] = {}
    for t in found:  # the first spelling of each, in order
        spellings.setdefault(t.casefold(), t)
    return list(spellings.values()), lines


def tagged_notes(store: StoreReads, reader: NoteReader, tag: str) -> TaggedNotes:
    """The indexed notes whose tags include ``tag`` or a tag nested under it, by path, with their lines.

    A note the index lists but that no longer carries the tag (changed since, or gone) is left out."""
    name = tag_name(tag)
    wanted = name.casefold()
    paths = sorted(
        p
        for p, r in store.file_records().items()
        if r.status == "indexed" and r.kind == "note" and any(_matches(t, wanted) for t in r.tags)
    )
    titles = store.titles(paths[:MAX_TAGGED])
    notes: list[TaggedNote] = []
    for path in paths:
        if len(notes) == MAX_TAGGED:
            break
        try:
            text = decode_note(reader.read(path).raw)
        except (VaultlensError, NotText):
            continue
        found, lines = _lines(text, wanted)
        if found:
            notes.append(TaggedNote(path, titles.get(path) or path, found, lines))
    return TaggedNotes(name, len(paths), notes)
