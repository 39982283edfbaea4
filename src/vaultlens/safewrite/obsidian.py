"""Which notes Obsidian has open right now, from its own ``.obsidian/workspace.json``.

Obsidian keeps an open note's text in its editor and saves it back on its own schedule, so a
write underneath it can be overwritten a moment later (or the user's unsaved typing can be).
safewrite refuses such a note unless the user overrides. Obsidian describes every open tab as a
leaf ``{"type": "leaf", "state": {"type": "markdown", "state": {"file": "folder/Note.md"}}}``
anywhere in the layout tree (main area, sidebars, pop-out windows); ``lastOpenFiles`` lists
recently *closed* files as well, so it is not used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["WORKSPACE_FILES", "open_notes"]

WORKSPACE_FILES = ("workspace.json", "workspace-mobile.json")


def _files(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        state = node.get("state")
        if node.get("type") == "leaf" and isinstance(state, dict):
            inner = state.get("state")
            if isinstance(inner, dict) and isinstance(inner.get("file"), str):
                found.add(inner["file"])
        for value in node.values():
            _files(value, found)
    elif isinstance(node, list):
        for value in node:
            _files(value, found)


def open_notes(vault: Path) -> tuple[set[str], str | None]:
    """The vault-relative paths open in Obsidian, and a problem reading its workspace (or None).

    No workspace file means Obsidian has not opened this vault here: nothing is open. A file that
    cannot be read or parsed is reported, so the caller refuses rather than guesses.
    """
    found: set[str] = set()
    for name in WORKSPACE_FILES:
        path = vault / ".obsidian" / name
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            continue
        except OSError as exc:
            return found, f"cannot read {path} ({exc.strerror or exc})"
        try:
            _files(json.loads(raw), found)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands of levels deep
            return found, f"cannot parse {path} ({exc})"
    return found, None
