"""The vault map as a JSON Canvas 1.0 file (https://jsoncanvas.org/spec/1.0/) that Obsidian opens.

One group per folder, its notes as file nodes on a grid inside it, one edge per linked pair of notes. The
layout is computed, not searched for: groups are packed left to right in rows and never overlap, and each node
has its own grid cell inside its group, so no two nodes overlap whatever the vault.
"""

from __future__ import annotations

import math
import posixpath
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from vaultlens.fsutil import sha256_hex

__all__ = ["canvas_map"]

NODE_W, NODE_H = 320, 100
GAP = 40  # between nodes in a group
PAD = 40  # between a group's border and its nodes
GROUP_GAP = 120  # between groups
ROW_WIDTH = 6000  # groups wrap to a new row past this width


def _id(kind: str, key: str, used: set[str]) -> str:
    """A stable id (the same vault gives the same ids), made unique if two keys ever share a hash prefix."""
    base = sha256_hex(f"{kind}:{key}")[:16]
    ident, n = base, 1
    while ident in used:
        ident, n = f"{base}-{n}", n + 1
    used.add(ident)
    return ident


def canvas_map(notes: Iterable[str], edges: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """A canvas of ``notes`` (vault-relative paths) grouped by folder, with ``edges`` (source, target) drawn
    between nodes of notes that are on it."""
    by_folder: dict[str, list[str]] = defaultdict(list)
    for path in notes:
        by_folder[posixpath.dirname(path)].append(path)
    used: set[str] = set()
    groups: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    node_of: dict[str, str] = {}
    x = y = row_height = 0
    for folder in sorted(by_folder, key=lambda f: (f.count("/"), f) if f else (-1, "")):
        members = sorted(by_folder[folder])
        cols = max(1, math.ceil(math.sqrt(len(members))))
        rows = math.ceil(len(members) / cols)
        width = 2 * PAD + cols * NODE_W + (cols - 1) * GAP
        height = 2 * PAD + rows * NODE_H + (rows - 1) * GAP
        if x > 0 and x + width > ROW_WIDTH:
            x, y, row_height = 0, y + row_height + GROUP_GAP, 0
        groups.append(
            {
                "id": _id("group", folder, used),
                "type": "group",
                "x": x,
                "y": y,
                "width": width,
                "height": height,
                "label": folder or "/",
            }
        )
        for i, path in enumerate(members):
            ident = _id("file", path, used)
            node_of[path] = ident
            files.append(
                {
                    "id": ident,
                    "type": "file",
                    "file": path,
                    "x": x + PAD + (i % cols) * (NODE_W + GAP),
                    "y": y + PAD + (i // cols) * (NODE_H + GAP),
                    "width": NODE_W,
                    "height": NODE_H,
                }
            )
        x += width + GROUP_GAP
        row_height = max(row_height, height)
    pairs = sorted({(a, b) for a, b in edges if a in node_of and b in node_of and a != b})
    # edge ids are numbered, not hashed (a vault has ten times more edges than notes); "e<n>" never equals a
    # node id, which is 16 hex digits
    drawn = [
        {"id": f"e{n}", "fromNode": node_of[a], "toNode": node_of[b], "toEnd": "arrow"}
        for n, (a, b) in enumerate(pairs, 1)
    ]
    # groups first: JSON Canvas draws nodes in array order, so groups stay behind their notes
    return {"nodes": groups + files, "edges": drawn}
