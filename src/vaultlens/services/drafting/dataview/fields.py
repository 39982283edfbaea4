"""The vault's real fields for Dataview: front-matter keys and their value types, tags, folders, notes.

Collected by code in one whole-vault pass (:func:`vaultlens.services.auditing.graph.read_vault`: the
outlines of :mod:`vaultlens.vault.outline`, no Markdown parse, with the structure audit's cache);
the value types need the front matter itself, read again only for notes that have properties. The model gets :meth:`VaultFields.facts`;
the DQL check asks :meth:`has_field`, :meth:`has_tag`, :meth:`has_folder` and :meth:`has_link`.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from vaultlens.chunking.source import NoteReader, NotText
from vaultlens.config import paths
from vaultlens.errors import FileSystemError, VaultError
from vaultlens.services.auditing import OUTLINE_CACHE
from vaultlens.services.auditing.graph import read_vault
from vaultlens.services.context import VaultFiles
from vaultlens.vault.links import LinkResolver
from vaultlens.vault.parse import decode_note, split_front_matter

__all__ = ["VaultFields", "collect", "field_key", "value_type"]

FACTS_LIMIT = 150  # fields, tags and folders each, the most used first
_DATE_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?")


def field_key(name: str) -> str:
    """How Dataview matches a field name: case-insensitive, spaces as dashes (its sanitised form)."""
    return re.sub(r"\s+", "-", name.strip()).casefold()


def value_type(value: Any) -> str:
    """A property value's type in Obsidian's words: text, number, checkbox, date, list, link, object."""
    if isinstance(value, bool):
        return "checkbox"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "empty"
    text = str(value)
    if _DATE_TEXT.match(text):
        return "date"
    return "link" if text.startswith("[[") and text.endswith("]]") else "text"


@dataclass(frozen=True)
class VaultFields:
    properties: dict[str, Counter[str]]  # key as written -> {value type: notes}
    tags: Counter[str]  # without "#", first spelling -> notes
    folders: Counter[str]  # every folder holding notes (at any depth) -> notes under it
    resolver: LinkResolver

    def facts(self) -> dict[str, Any]:
        """What the model is told: the most used keys (with value types), tags and folders."""
        ranked = sorted(self.properties.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
        return {
            "fields": [
                {"name": k, "types": sorted(t), "notes": sum(t.values())} for k, t in ranked[:FACTS_LIMIT]
            ],
            "tags": [f"#{t}" for t, _ in self.tags.most_common(FACTS_LIMIT)],
            "folders": [f for f, _ in self.folders.most_common(FACTS_LIMIT)],
        }

    def has_field(self, name: str) -> bool:
        key = field_key(name)
        return any(field_key(k) == key for k in self.properties)

    def has_tag(self, tag: str) -> bool:
        """``tag`` (with or without ``#``) or a nested tag below it is in some note."""
        want = tag.lstrip("#").casefold()
        return any(t.casefold() == want or t.casefold().startswith(want + "/") for t in self.tags)

    def has_folder(self, path: str) -> bool:
        """``path`` is a folder with notes, or a note (with or without ``.md``)."""
        p = path.strip().strip("/")
        known = {f.casefold() for f in self.folders}
        notes = {n.casefold() for n in self.resolver.paths}
        return p.casefold() in known or p.casefold() in notes or f"{p}.md".casefold() in notes

    def has_link(self, target: str) -> bool:
        """``[[target]]`` resolves to one file of the vault."""
        name = target.split("|", 1)[0].split("#", 1)[0].strip()
        return bool(name) and self.resolver.resolve(name, "").status == "resolved"


def _types(reader: NoteReader, path: str) -> dict[str, str]:
    try:
        frontmatter = split_front_matter(decode_note(reader.read(path).raw))[0]
    except (NotText, VaultError, FileSystemError):  # changed since the outline: its keys still count
        return {}
    return {k: value_type(v) for k, v in frontmatter.items()}


def collect(files: VaultFiles) -> VaultFields:
    """Every note's keys (with value types), tags and folders, in one pass over the vault (sharing the
    structure audit's outline cache, so unchanged notes are not read for their keys and tags)."""
    graph = read_vault(files.root, files.max_bytes, paths.audit_dir(files.root) / OUTLINE_CACHE)
    reader = NoteReader(files.root, files.max_bytes)
    properties: dict[str, Counter[str]] = {}
    tags: Counter[str] = Counter()
    folders: Counter[str] = Counter()
    spelled: dict[str, str] = {}
    for path, outline in graph.outlines.items():
        types = _types(reader, path) if outline.properties else {}
        for key in outline.properties:
            properties.setdefault(key, Counter())[types.get(key, "text")] += 1
        for tag in outline.tags:
            bare = tag.lstrip("#")
            tags[spelled.setdefault(bare.casefold(), bare)] += 1
        folder = posixpath.dirname(path)
        while folder:
            folders[folder] += 1
            folder = posixpath.dirname(folder)
    return VaultFields(properties, tags, folders, graph.resolver)
