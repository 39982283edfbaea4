"""A Map of Content note for a saved cluster (``vaultlens moc``), planned through safewrite, never written here.

The cluster comes from the last ``clusters.json`` of the vault's audit folder (``audit deep``, with or without a
model). Every link is the shortest text that Obsidian resolves to the intended note alone, checked against every
file of the vault as it will be once the MOC exists (same-named notes get a path-qualified link); a note whose
name cannot be written as a wikilink is listed as text, never as a link to something else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from vaultlens.config import paths
from vaultlens.errors import VaultError, VaultlensError
from vaultlens.services.auditing.report_files import CLUSTERS_JSON
from vaultlens.services.changing import writes
from vaultlens.services.context import VaultFiles
from vaultlens.vault.links import LinkResolver
from vaultlens.vault.safepath import check_relative

__all__ = ["MocPlan", "load_cluster", "moc_text", "plan_moc"]

_NOT_IN_LINK = re.compile(r"[#|^\[\]]")  # would end or change an Obsidian wikilink
_NOT_IN_NAME = re.compile(r'[\\/:*?"<>|#^\[\]]+')  # characters Obsidian refuses or misreads in a file name


@dataclass(frozen=True, slots=True)
class MocPlan:
    path: str
    links: dict[str, str]  # note path -> the link text written for it
    unlinkable: list[str]  # notes whose name cannot be a wikilink (listed as text)
    missing: list[str]  # notes of the saved cluster that are no longer in the vault
    planned: writes.Planned

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "links": self.links,
            "unlinkable": self.unlinkable,
            "missing": self.missing,
            "planned": self.planned.as_dict(),
        }


def load_cluster(vault: Path, which: str) -> dict[str, Any]:
    """The saved cluster ``which``: its id, or its name (case-insensitive)."""
    file = paths.audit_dir(vault) / CLUSTERS_JSON
    try:
        clusters: list[dict[str, Any]] = json.loads(file.read_text(encoding="utf-8"))["clusters"]
    except (OSError, ValueError, KeyError, TypeError):
        raise VaultlensError(
            "No saved clusters for this vault.",
            hint="Run `vaultlens audit deep --no-llm` (or `audit deep`) first; it saves them.",
        ) from None
    wanted = which.strip().casefold()
    for c in clusters:
        if str(c["id"]) == wanted or str(c["name"]).casefold() == wanted:
            return c
    names = ", ".join(f"{c['id']} ({c['name']})" for c in clusters) or "none"
    raise VaultlensError(f"No saved cluster {which!r}.", hint=f"Saved clusters: {names}.")


def _default_path(name: str) -> str:
    base = " ".join(_NOT_IN_NAME.sub(" ", name).split()).strip(". ") or "Cluster"
    return f"{base[:80]} MOC.md"


def moc_text(title: str, cluster: dict[str, Any], links: dict[str, str], unlinkable: list[str]) -> str:
    terms = ", ".join(cluster.get("terms", [])[:5])
    out = [
        f"# {title}",
        "",
        "Notes on one topic, found by vaultlens from their text" + (f" ({terms})." if terms else "."),
        "",
    ]
    out += [f"- [[{link}]]" for link in links.values()]
    out += [f"- {PurePosixPath(p).stem} (`{p}`)" for p in unlinkable]
    return "\n".join(out) + "\n"


def plan_moc(files: VaultFiles, which: str, out_path: str | None = None) -> MocPlan:
    """Plan the MOC of cluster ``which`` as a new note (refused if ``out_path`` exists); nothing is written."""
    cluster = load_cluster(files.root, which)
    title = str(cluster["name"])
    rel = out_path or _default_path(title)
    if not rel.endswith(".md"):
        rel += ".md"
    check_relative(rel)
    if (files.root / rel).exists():
        raise VaultError(
            f"{rel} already exists; a MOC is only written as a new note.",
            hint=("Choose another --out-path" if out_path else "Pass --out-path")
            + ": a path no note has yet.",
        )
    notes = [f.path for f in files.scan().files]
    resolver = LinkResolver([*notes, rel])  # as the vault will be once the MOC exists
    present = set(notes)
    links: dict[str, str] = {}
    unlinkable: list[str] = []
    for path in cluster["notes"]:
        if path not in present:
            continue
        text = resolver.shortest_linktext(path)
        found = resolver.resolve(text, rel)
        if _NOT_IN_LINK.search(text) or found.status != "resolved" or found.path != path:
            unlinkable.append(path)
        else:
            links[path] = text
    if not links:
        raise VaultlensError(f"None of the notes of cluster {which!r} can be linked from {rel}.")
    missing = [p for p in cluster["notes"] if p not in present]
    content = moc_text(title, cluster, links, unlinkable)
    planned = writes.plan_write(
        files.root, rel, content.encode("utf-8"), f"Map of Content for cluster {cluster['id']}", based_on=None
    )
    return MocPlan(rel, links, unlinkable, missing, planned)
