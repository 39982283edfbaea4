"""Repoint links when a note moves or is merged away, as Obsidian's rename does.

One rule for every link of every note: where the project's resolver
(:class:`~vaultlens.vault.links.LinkResolver`) found a note before the change, it must find the same
note after it (or the new note, for a link to the one that goes away). A link that still does is left
alone; one that would not is rewritten, and only the characters of its note part change (``B`` in
``[[B#h|text]]``, ``sub/My%20Note.md`` in ``[t](sub/My%20Note.md#h)``): headings, block ids, display
text and the link's form stay as written. The new text is the shortest name Obsidian would write where
the link was a bare name, a vault path where it had a path (relative where it was relative), encoded
as the Markdown link was. Links in code, math and comments are masked by the link parser; property
links (``related: "[[B]]"``) count, as in Obsidian (:func:`~vaultlens.vault.outline.located_links`). Every rewritten link is resolved again: one that
would not land on its note, or whose heading or block the new note lacks, refuses the whole change.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from vaultlens.errors import PlanRefused
from vaultlens.vault.links import LinkResolver, locate_links
from vaultlens.vault.model import Link
from vaultlens.vault.outline import located_links

__all__ = ["Edit", "FragmentCheck", "Repoint", "apply_edits", "refused", "repoint"]

# What the new note lacks of a link's #heading / #^block (None: it has it).
FragmentCheck = Callable[[Link], "str | None"]
_SAFE = "/!$&'*+,;=:@-._~"  # kept as written in a Markdown destination; spaces, parentheses, % encoded


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace ``text[start:end]`` with ``new`` (the note part of one link)."""

    start: int
    end: int
    new: str


@dataclass(frozen=True, slots=True)
class Repoint:
    """One change of the vault's files: ``old`` goes away and its links go to ``new``; ``before`` and
    ``after`` resolve links in the vault as it is and as it will be."""

    old: str
    new: str
    before: LinkResolver
    after: LinkResolver
    fragments: FragmentCheck | None = None  # None: the note keeps its headings and blocks (a move)


def repoint(text: str, path: str, new_path: str, change: Repoint) -> list[Edit]:
    """The edits that keep every link of the note at ``path`` (``new_path`` once the change is made)
    pointing where it should; :class:`PlanRefused` naming each link that cannot be repointed."""
    edits: list[Edit] = []
    problems: list[str] = []
    for loc in located_links(text, path):
        link = loc.link
        if not link.target:
            continue  # [[#heading]]: the note itself, wherever it is
        was = change.before.resolve(link.target, path)
        if was.status != "resolved" or was.path is None:
            continue  # unresolved or ambiguous before: nothing to keep
        want = change.new if was.path == change.old else was.path
        written = text[loc.target_start : loc.target_end]
        where = f"{path}:{link.line + 1} {text[loc.start : loc.end]!r}"
        if want == change.new and was.path == change.old and change.fragments is not None:
            missing = change.fragments(link)
            if missing:
                problems.append(f"{where}: {missing}")
                continue
        now = change.after.resolve(link.target, new_path)
        if now.status == "resolved" and now.path == want:
            continue
        wiki = text.startswith("[[", loc.start) or text.startswith("![[", loc.start)
        angle = loc.target_start > 0 and text[loc.target_start - 1] == "<"
        new = _written(written, want, new_path, change.after, wiki, angle)
        rewritten = text[loc.start : loc.target_start] + new + text[loc.target_end : loc.end]
        if not _lands(rewritten, link, want, new_path, change.after):
            problems.append(f"{where}: no link text resolves to {want} unambiguously")
            continue
        edits.append(Edit(loc.target_start, loc.target_end, new))
    if problems:
        raise refused(problems, path)
    return edits


def refused(problems: list[str], path: str) -> PlanRefused:
    """The refusal naming each link (``note:line 'link': why``) that cannot be repointed."""
    shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
    return PlanRefused(
        f"Nothing planned: {len(problems)} link(s) cannot be repointed unambiguously: {shown}.",
        hint="Carry the heading or block over (--sections), rename it where two notes share it, or edit "
        "those links by hand first.",
        path=path,
    )


def _lands(rewritten: str, link: Link, want: str, source: str, after: LinkResolver) -> bool:
    """Whether the rewritten link, read again as Obsidian reads it, is still one link of the same form,
    heading, block and display text, and resolves to ``want``: a name holding ``#``, ``|``, ``]]`` or
    ``^`` would cut a wikilink elsewhere (``[[Odd#x]]`` is the heading ``x`` of ``Odd``)."""
    again = locate_links(rewritten, [])
    if len(again) != 1 or (again[0].start, again[0].end) != (0, len(rewritten)):
        return False
    got = again[0].link
    if (got.kind, got.heading, got.block, got.display) != (link.kind, link.heading, link.block, link.display):
        return False
    now = after.resolve(got.target, source)
    return now.status == "resolved" and now.path == want


def _written(written: str, want: str, source: str, after: LinkResolver, wiki: bool, angle: bool) -> str:
    """The note part a link to ``want`` gets, in the form ``written`` had."""
    keep_md = written.lower().endswith(".md")
    plain = unquote(written) if not wiki and not angle and "%" in written else written
    if plain.startswith(("./", "../")):
        text = posixpath.relpath(want, posixpath.dirname(source) or ".")
        text = text if text.startswith("../") else "./" + text
    elif "/" in plain:
        # a path form stays one; a note at the vault root has none but its name, ambiguous where
        # notes of other folders share it: then its root form (``/name``), as shortest_linktext gives
        text = want if "/" in want else after.shortest_linktext(want)
    else:
        text = after.shortest_linktext(want)
    if text.lower().endswith(".md") and not keep_md:
        text = text[:-3]
    elif keep_md and not text.lower().endswith(".md"):
        text += ".md"
    return text if wiki or angle else quote(text, safe=_SAFE)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with every edit made (edits do not overlap)."""
    out: list[str] = []
    prev = 0
    for e in sorted(edits, key=lambda e: e.start):
        out += [text[prev : e.start], e.new]
        prev = e.end
    return "".join(out) + text[prev:]
