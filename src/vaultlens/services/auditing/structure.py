"""The structure audit: what a vault's files, links and tags look like from above, with no model.

Graph measures (orphans, notes that link nowhere, components, hubs) are taken on the note graph, as Obsidian's
graph view draws it by default: notes only (attachments hidden), one edge per pair of notes linked in either
direction, links to missing files left out. A link to a name several notes share counts as an edge to each of
them: Obsidian links it to one, which one depends on its internal file order, so none of them is called an
orphan for it.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from vaultlens.services.auditing.graph import AMBIGUOUS, UNRESOLVED, LinkRecord, VaultGraph

__all__ = ["StructureReport", "build_report"]

TOP = 10  # hubs, largest and emptiest notes listed


def _folder(path: str) -> str:
    return posixpath.dirname(path) or "/"


def _name_key(path: str) -> str:
    stem = posixpath.basename(path).rpartition(".")[0] or posixpath.basename(path)
    return unicodedata.normalize("NFC", stem).casefold()


@dataclass
class StructureReport:
    """Every finding of one structure audit; :meth:`as_dict` is the ``--json`` output."""

    vault: str
    notes: list[str]
    links: dict[str, list[LinkRecord]]
    tags: dict[str, list[str]]
    orphans: list[str]
    orphans_no_incoming: list[str]
    no_outgoing: list[str]
    broken_links: list[dict[str, Any]]
    ambiguous_links: list[dict[str, Any]]
    missing_anchors: list[dict[str, Any]]
    same_name_groups: dict[str, list[str]]
    tag_counts: dict[str, int]
    tag_tree: dict[str, int]
    folders: dict[str, dict[str, int]]
    file_types: dict[str, int]
    extensions: dict[str, int]
    components: list[list[str]]
    hubs: list[dict[str, Any]]
    largest: list[dict[str, Any]]
    emptiest: list[dict[str, Any]]
    edges: list[tuple[str, str]]  # distinct resolved note -> note links, for the Canvas map
    unread: dict[str, str] = field(default_factory=dict)
    frontmatter_errors: dict[str, str] = field(default_factory=dict)
    skipped: int = 0

    @property
    def embeds(self) -> dict[str, list[LinkRecord]]:
        return {p: [r for r in records if r.embed] for p, records in self.links.items()}

    def summary(self) -> dict[str, int]:
        return {
            "notes": len(self.notes),
            "files": sum(self.file_types.values()),
            "links": sum(len(r) for r in self.links.values()),
            "broken_links": len(self.broken_links),
            "ambiguous_links": len(self.ambiguous_links),
            "missing_anchors": len(self.missing_anchors),
            "orphans": len(self.orphans),
            "orphans_no_incoming": len(self.orphans_no_incoming),
            "no_outgoing": len(self.no_outgoing),
            "same_name_groups": len(self.same_name_groups),
            "tags": len(self.tag_counts),
            "components": len(self.components),
            "unread": len(self.unread),
            "skipped_files": self.skipped,
        }

    @classmethod
    def from_saved(cls, data: dict[str, Any]) -> StructureReport:
        """A report back from its :meth:`as_dict` (the JSON an audit saved), for showing it again after a
        restart. The JSON keeps no note-to-note edges and no embed flags: the Canvas file saved beside it
        keeps the map."""
        links = {
            p: [
                LinkRecord(
                    r["raw"],
                    r["target"],
                    r["kind"],
                    int(r["line"]) - 1,
                    candidates=tuple(r.get("candidates", ())),
                    missing_anchor=r.get("missing_anchor"),
                )  # fmt: skip
                for r in records
            ]
            for p, records in data["links"].items()
        }
        keys = (
            *("orphans", "orphans_no_incoming", "no_outgoing", "broken_links", "ambiguous_links"),
            *("missing_anchors", "same_name_groups", "tag_counts", "tag_tree", "folders", "file_types"),
            *("extensions", "hubs", "largest", "emptiest", "unread", "frontmatter_errors"),
        )
        return cls(
            vault=data["vault"],
            notes=data["notes"],
            links=links,
            tags=data["tags"],
            components=[c["notes"] for c in data["components"]],
            edges=[],
            skipped=data["summary"].get("skipped_files", 0),
            **{k: data[k] for k in keys},
        )

    def as_dict(self) -> dict[str, Any]:
        def per_note(table: dict[str, list[LinkRecord]]) -> dict[str, list[dict[str, object]]]:
            return {p: [r.as_dict() for r in records] for p, records in table.items()}

        return {
            "vault": self.vault,
            "summary": self.summary(),
            "notes": self.notes,
            "links": per_note(self.links),
            "embeds": per_note(self.embeds),
            "tags": self.tags,
            "orphans": self.orphans,
            "orphans_no_incoming": self.orphans_no_incoming,
            "no_outgoing": self.no_outgoing,
            "broken_links": self.broken_links,
            "ambiguous_links": self.ambiguous_links,
            "missing_anchors": self.missing_anchors,
            "same_name_groups": self.same_name_groups,
            "tag_counts": self.tag_counts,
            "tag_tree": self.tag_tree,
            "folders": self.folders,
            "file_types": self.file_types,
            "extensions": self.extensions,
            "components": [{"size": len(c), "notes": c} for c in self.components],
            "hubs": self.hubs,
            "largest": self.largest,
            "emptiest": self.emptiest,
            "unread": self.unread,
            "frontmatter_errors": self.frontmatter_errors,
        }


def _problems(graph: VaultGraph) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Broken, ambiguous and anchor-less links, each with its source note and line."""
    alias_of: dict[str, str] = {}
    for path, outline in graph.outlines.items():
        for alias in outline.aliases:
            alias_of.setdefault(unicodedata.normalize("NFC", alias).casefold(), path)
    broken: list[dict[str, Any]] = []
    ambiguous: list[dict[str, Any]] = []
    anchors: list[dict[str, Any]] = []
    for source, records in graph.links.items():
        for r in records:
            where: dict[str, Any] = {"source": source, "raw": r.raw, "line": r.line + 1, "kind": r.kind}
            if r.target == UNRESOLVED:
                intended = alias_of.get(unicodedata.normalize("NFC", r.raw.partition("#")[0]).casefold())
                # Obsidian does not resolve a link by alias; the note that has it is the likely intent
                broken.append({**where, "alias_of": intended} if intended else where)
            elif r.target == AMBIGUOUS:
                ambiguous.append({**where, "candidates": list(r.candidates)})
            elif r.missing_anchor is not None:
                anchors.append({**where, "target": r.target, "anchor": r.missing_anchor})
    return broken, ambiguous, anchors


def _note_edges(graph: VaultGraph) -> tuple[dict[str, set[str]], dict[str, set[str]], set[tuple[str, str]]]:
    """Outgoing and incoming note neighbours (ambiguous links to each candidate) and the distinct resolved edges."""
    notes = set(graph.notes)
    out: dict[str, set[str]] = {p: set() for p in graph.notes}
    inc: dict[str, set[str]] = {p: set() for p in graph.notes}
    resolved: set[tuple[str, str]] = set()
    for source, records in graph.links.items():
        for r in records:
            for target in r.candidates:
                if target != source and target in notes:
                    out[source].add(target)
                    inc[target].add(source)
                    if r.target != AMBIGUOUS:
                        resolved.add((source, target))
    return out, inc, resolved


def _components(notes: list[str], out: dict[str, set[str]], inc: dict[str, set[str]]) -> list[list[str]]:
    """Connected components of two or more notes (links taken in both directions), largest first."""
    seen: set[str] = set()
    found: list[list[str]] = []
    for start in notes:
        if start in seen:
            continue
        seen.add(start)
        stack, members = [start], []
        while stack:
            node = stack.pop()
            members.append(node)
            for nxt in out[node] | inc[node]:
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        if len(members) > 1:
            found.append(sorted(members))
    found.sort(key=lambda c: (-len(c), c[0]))
    return found


def _tags(graph: VaultGraph) -> tuple[dict[str, list[str]], dict[str, int], dict[str, int]]:
    """Tags per note; notes per tag (case-insensitive, first spelling in path order shown); notes per tag
    including nested tags below it (``#a/b`` counts for ``a`` and ``a/b``), as Obsidian's tag pane nests them."""
    per_note: dict[str, list[str]] = {}
    spelling: dict[str, str] = {}
    counts: Counter[str] = Counter()
    tree: Counter[str] = Counter()
    for path in graph.notes:
        outline = graph.outlines.get(path)
        if outline is None:
            continue
        per_note[path] = list(outline.tags)
        prefixes: set[str] = set()
        for tag in outline.tags:
            key = tag.casefold()
            spelling.setdefault(key, tag)
            counts[key] += 1
            parts = key.split("/")
            prefixes.update("/".join(parts[:i]) for i in range(1, len(parts) + 1) if parts[i - 1])
        tree.update(prefixes)
    ordered = sorted(counts, key=lambda k: (-counts[k], k))
    tag_counts = {spelling[k]: counts[k] for k in ordered}
    tag_tree = {spelling.get(k, k): tree[k] for k in sorted(tree, key=lambda k: (-tree[k], k))}
    return per_note, tag_counts, tag_tree


def _files(graph: VaultGraph) -> tuple[dict[str, dict[str, int]], dict[str, int], dict[str, int]]:
    folders: dict[str, dict[str, int]] = defaultdict(lambda: {"notes": 0, "files": 0})
    types: Counter[str] = Counter()
    extensions: Counter[str] = Counter()
    for f in graph.files:
        entry = folders[_folder(f.path)]
        entry["files"] += 1
        entry["notes"] += f.kind == "note"
        types[f.kind] += 1
        extensions[posixpath.splitext(f.path)[1].lower() or "(none)"] += 1
    return dict(sorted(folders.items())), dict(types.most_common()), dict(extensions.most_common())


def build_report(vault: str, graph: VaultGraph) -> StructureReport:
    """Every finding of the structure audit from one read of the vault."""
    notes = graph.notes
    out, inc, resolved = _note_edges(graph)
    broken, ambiguous, anchors = _problems(graph)
    per_note_tags, tag_counts, tag_tree = _tags(graph)
    folders, types, extensions = _files(graph)

    by_name: dict[str, list[str]] = defaultdict(list)
    for path in notes:
        by_name[_name_key(path)].append(path)
    same_name = {
        posixpath.splitext(posixpath.basename(paths[0]))[0]: paths
        for _, paths in sorted(by_name.items())
        if len(paths) > 1
    }

    degree = {p: len(out[p] | inc[p]) for p in notes}
    hubs = [
        {"path": p, "neighbours": degree[p], "incoming": len(inc[p]), "outgoing": len(out[p])}
        for p in sorted(notes, key=lambda p: (-degree[p], p))[:TOP]
        if degree[p] > 0
    ]
    size = {f.path: f.size for f in graph.files}
    words = {p: o.words for p, o in graph.outlines.items()}

    def sized(p: str) -> dict[str, Any]:
        return {"path": p, "bytes": size[p], "words": words.get(p)}

    return StructureReport(
        vault=vault,
        notes=notes,
        links={p: graph.links[p] for p in notes if p in graph.links},
        tags=per_note_tags,
        orphans=[p for p in notes if not out[p] and not inc[p]],
        orphans_no_incoming=[p for p in notes if not inc[p]],
        no_outgoing=[p for p in notes if not out[p]],
        broken_links=broken,
        ambiguous_links=ambiguous,
        missing_anchors=anchors,
        same_name_groups=same_name,
        tag_counts=tag_counts,
        tag_tree=tag_tree,
        folders=folders,
        file_types=types,
        extensions=extensions,
        components=_components(notes, out, inc),
        hubs=hubs,
        largest=[sized(p) for p in sorted(notes, key=lambda p: (-size[p], p))[:TOP]],
        emptiest=[sized(p) for p in sorted(words, key=lambda p: (words[p], size[p], p))[:TOP]],
        edges=sorted(resolved),
        unread=graph.unread,
        frontmatter_errors={p: o.frontmatter_error for p, o in graph.outlines.items() if o.frontmatter_error},
        skipped=graph.skipped,
    )
