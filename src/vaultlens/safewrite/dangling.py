"""Links that a group's removal of a note would leave pointing at nothing.

A move or a merge repoints, when it is planned, every link to the note it removes; the notes holding
them are in the group, compared byte for byte when it is applied. A note written since the plan
outside the group (a new note, a link typed elsewhere) is not: this finds its links to a removed
note, resolved as Obsidian resolves them over every file it sees, so the apply refuses instead of
leaving them broken. A canvas is read too (its file cards, the links of its text cards): vaultlens
never edits one, and a plan refuses a canvas that shows the note, so one that shows it now was
made or changed since the plan.
"""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Collection
from pathlib import Path
from urllib.parse import quote

from vaultlens.vault.canvas import card_showing
from vaultlens.vault.links import LinkResolver
from vaultlens.vault.outline import located_links
from vaultlens.vault.parse import NotText, decode_note
from vaultlens.vault.scan import scan_vault

__all__ = ["links_to"]


def links_to(
    vault: Path, removed: Collection[str], skip: Collection[str], created: Collection[str] = ()
) -> list[tuple[str, str]]:
    """``(note or canvas, removed path)`` for each note outside ``skip`` with a link that resolves to a
    path of ``removed`` and, once the group is written (``removed`` gone, ``created`` there), no longer
    to a note it creates (a move keeping the note's name in another folder: ``[[Name]]`` finds the
    moved note, unchanged), then each canvas with a card showing one (a canvas's JSON may escape the
    name: each is parsed); notes that do not name a removed note's file name are not parsed."""
    if not removed:
        return []
    scan = scan_vault(vault, sys.maxsize, obsidian_sees=True)
    resolver = LinkResolver(f.path for f in scan.files)
    visible = {p for p in created if not any(part.startswith(".") for part in p.split("/"))}  # not .trash/
    after = LinkResolver([*(f.path for f in scan.files if f.path not in removed), *visible])
    names = {unicodedata.normalize("NFC", p.rpartition("/")[2].removesuffix(".md")) for p in removed}
    stems = {form.casefold() for name in names for form in (name, quote(name), name.replace(" ", "%20"))}
    found: list[tuple[str, str]] = []
    for note in scan.notes:
        if note.path in skip:
            continue
        try:
            text = decode_note((vault / note.path).read_bytes())
        except (OSError, NotText):
            continue  # gone, unreadable or not text: a move or merge plan refuses the one naming the note
        folded = unicodedata.normalize("NFC", text).casefold()
        if "[" not in text or not any(s in folded for s in stems):
            continue
        for located in located_links(text, note.path):
            link = located.link
            if not link.target:
                continue
            to = resolver.resolve(link.target, note.path)
            if to.path is not None and to.status == "resolved" and to.path in removed:
                then = after.resolve(link.target, note.path)
                if then.status == "resolved" and then.path in visible:
                    continue  # finds the note the group creates in its place
                found.append((note.path, to.path))
                break
    for canvas in scan.files:
        if canvas.kind != "canvas" or canvas.path in skip:
            continue
        try:
            raw = (vault / canvas.path).read_bytes()
        except OSError:
            continue
        shown = card_showing(raw, canvas.path, removed, resolver)
        if shown:
            found.append((canvas.path, shown[1]))
    return found
