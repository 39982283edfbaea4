"""The structure audit as a Markdown dashboard, readable anywhere and clickable once it is in the vault.

Notes are named by wikilinks whose text is the shortest one that resolves to them from anywhere in the vault
(path-qualified when names collide), so following a link from the dashboard never lands on the wrong note.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from vaultlens.services.auditing.structure import StructureReport
from vaultlens.vault.links import LinkResolver

__all__ = ["dashboard_markdown"]

LIST_MAX = 50  # rows per section; the JSON has them all
_UNSAFE_IN_WIKILINK = set("[]|#^")


class _Names:
    def __init__(self, resolver: LinkResolver) -> None:
        self._resolver = resolver

    def link(self, path: str) -> str:
        """``[[linktext]]`` for a file of the vault, or the path in code when a wikilink cannot name it."""
        if _UNSAFE_IN_WIKILINK & set(path):
            return f"`{path}`"
        try:
            text = self._resolver.shortest_linktext(path)
        except KeyError:
            return f"`{path}`"
        return f"[[{text}]]"


def _cell(text: str) -> str:
    """Table cell text: a pipe would end the cell (``\\|`` works inside wikilinks too)."""
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: Iterable[list[str]], total: int) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    if total > LIST_MAX:
        lines.append(f"\n…and {total - LIST_MAX} more (see the JSON report).")
    return lines + [""]


def _bullets(items: list[str], total: int) -> list[str]:
    lines = [f"- {item}" for item in items[:LIST_MAX]]
    if total > LIST_MAX:
        lines.append(f"- …and {total - LIST_MAX} more (see the JSON report)")
    return lines + [""]


def _code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


def dashboard_markdown(report: StructureReport, resolver: LinkResolver, generated: str) -> str:
    """The dashboard text; ``generated`` is the timestamp shown under the title."""
    names = _Names(resolver)
    s = report.summary()
    out: list[str] = [
        "# Vault structure audit",
        "",
        f"{report.vault} · {generated} · made by `vaultlens audit structure` (no model involved)",
        "",
        "| | |",
        "|---|---|",
        *[f"| {k.replace('_', ' ')} | {v} |" for k, v in s.items()],
        "",
    ]

    def section(title: str, body: list[str]) -> None:
        out.extend([f"## {title}", "", *body])

    def problem_rows(items: list[dict[str, Any]], extra: str) -> list[list[str]]:
        return [
            [names.link(i["source"]), str(i["line"]), _code(i["raw"]), extra_cell(i, extra)]
            for i in items[:LIST_MAX]
        ]

    def extra_cell(item: dict[str, Any], extra: str) -> str:
        if extra == "candidates":
            return ", ".join(names.link(c) for c in item["candidates"])
        if extra == "anchor":
            return f"{names.link(item['target'])} has no {_code(item['anchor'])}"
        return f"alias of {names.link(item['alias_of'])}" if item.get("alias_of") else ""

    ambiguous = ["Several files match these names; Obsidian picks one. Qualify the link with a path.", ""]
    for title, items, column, extra, intro in (
        ("Broken links", report.broken_links, "hint", "hint", []),
        ("Ambiguous links", report.ambiguous_links, "matches", "candidates", ambiguous),
        ("Missing headings and blocks", report.missing_anchors, "problem", "anchor", []),
    ):
        n = len(items)
        rows = problem_rows(items, extra)
        section(
            f"{title} ({n})",
            intro + _table(["note", "line", "link", column], rows, n) if n else ["None.", ""],
        )
    section(
        f"Orphans ({len(report.orphans)})",
        ["No link in or out (as in Obsidian's graph).", ""]
        + _bullets([names.link(p) for p in report.orphans], len(report.orphans)),
    )
    groups = list(report.same_name_groups.items())
    section(
        f"Same-named notes ({len(groups)})",
        _table(
            ["name", "notes"],
            ([_code(k), ", ".join(names.link(p) for p in v)] for k, v in groups[:LIST_MAX]),
            len(groups),
        )
        if groups
        else ["None.", ""],
    )
    section(
        "Hubs",
        _table(
            ["note", "linked notes", "in", "out"],
            (
                [names.link(h["path"]), str(h["neighbours"]), str(h["incoming"]), str(h["outgoing"])]
                for h in report.hubs
            ),
            len(report.hubs),
        ),
    )
    sizes = [len(c) for c in report.components]
    section(
        "Connectivity",
        [
            f"{len(sizes)} connected groups of linked notes (sizes: {', '.join(map(str, sizes[:20])) or 'none'}"
            f"{', …' if len(sizes) > 20 else ''}), plus {len(report.orphans)} unlinked notes.",
            "",
        ],
    )
    tags = list(report.tag_counts.items())
    section(
        f"Tags ({len(tags)})",
        _table(
            ["tag", "notes", "with nested"],
            ([f"#{t}", str(c), str(report.tag_tree.get(t, c))] for t, c in tags[:LIST_MAX]),
            len(tags),
        )
        if tags
        else ["None.", ""],
    )
    section(
        "Folders",
        _table(
            ["folder", "notes", "files"],
            (
                [_code(f), str(v["notes"]), str(v["files"])]
                for f, v in list(report.folders.items())[:LIST_MAX]
            ),
            len(report.folders),
        )
        + [", ".join(f"{k}: {v}" for k, v in report.file_types.items()), ""],
    )
    for title, items in (("Largest notes", report.largest), ("Emptiest notes", report.emptiest)):
        section(
            title,
            _table(
                ["note", "bytes", "words"],
                ([names.link(i["path"]), str(i["bytes"]), str(i["words"])] for i in items),
                len(items),
            ),
        )
    if report.unread:
        section(
            f"Not read ({len(report.unread)})",
            _bullets([f"{_code(p)}: {why}" for p, why in report.unread.items()], len(report.unread)),
        )
    return "\n".join(out).rstrip() + "\n"
