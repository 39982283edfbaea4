"""Which card of a canvas shows a note: the one place that reads a canvas for its links.

A move or a merge removes a note; vaultlens never edits a canvas (Obsidian's own rename updates it),
so a canvas card showing that note (a file card, or a link in a text card resolved as Obsidian
resolves it) refuses the change, when it is planned and again when it is applied.
"""

from __future__ import annotations

import json
from collections.abc import Collection

from vaultlens.vault.links import LinkResolver, extract_links

__all__ = ["card_showing"]


def card_showing(
    raw: bytes, path: str, removed: Collection[str], resolver: LinkResolver
) -> tuple[str, str] | None:
    """``(card id, removed path)`` of the first card of the canvas at ``path`` (its bytes ``raw``)
    that shows a path of ``removed``; None when none does, or when the file is no canvas Obsidian
    opens either (not UTF-8 JSON with a list of nodes)."""
    try:
        canvas = json.loads(raw.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return None
    nodes = canvas.get("nodes") if isinstance(canvas, dict) else None
    for node in nodes if isinstance(nodes, list) else []:
        if not isinstance(node, dict):
            continue
        card = str(node.get("id"))
        if node.get("type") == "file" and node.get("file") in removed:
            return card, str(node["file"])
        text = node.get("text") if node.get("type") == "text" else None
        if not isinstance(text, str):
            continue
        for link in extract_links(text):
            to = resolver.resolve(link.target, path) if link.target else None
            if to is not None and to.status == "resolved" and to.path is not None and to.path in removed:
                return card, to.path
    return None
