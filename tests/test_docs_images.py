"""The pictures the README and docs/ show: each file exists, and the Obsidian plugin's section shows
every plugin screenshot (obsidian-plugin/scripts/screenshots.py) and says they are not Obsidian."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_every_image_the_docs_show_exists() -> None:
    missing = [
        f"{doc.relative_to(REPO)}: {ref}"
        for doc in DOCS
        for ref in IMAGE.findall(doc.read_text(encoding="utf-8"))
        if not (doc.parent / ref).is_file()
    ]
    assert missing == []


def test_the_plugin_section_shows_its_screenshots_and_says_they_are_not_obsidian() -> None:
    readme = REPO.joinpath("README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Obsidian plugin\n", 1)[1].split("\n## ", 1)[0]
    shown = {Path(ref).name for ref in IMAGE.findall(section)}
    taken = {p.name for p in (REPO / "docs" / "screenshots").glob("plugin-*.png")}
    for scene in ("search-ru", "search-en", "related", "ask", "duplicates", "review"):
        assert f"plugin-{scene}.png" in shown
    assert shown == taken  # none taken and left out, none shown that is not the plugin's
    assert "These are not Obsidian" in section
    assert "Settings → Community plugins" in section and "Restricted mode" in section
    for command in (
        "vaultlens obsidian install --vault",
        "vaultlens obsidian pair --vault",
        "vaultlens serve --vault",
    ):
        assert command in section
