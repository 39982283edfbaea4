"""Vault audits. ``audit_structure`` needs no model: files, links, tags and the link graph, as Obsidian sees them.

Modules: ``graph`` reads and resolves the vault, ``structure`` computes the findings, ``dashboard`` and ``canvas``
render them, ``report_files`` puts them outside the vault or plans them into it through safewrite.
"""

from __future__ import annotations

from dataclasses import dataclass

from vaultlens.config import paths
from vaultlens.errors import translated_errors
from vaultlens.services.app import App
from vaultlens.services.audit.graph import read_vault
from vaultlens.services.audit.structure import StructureReport, build_report
from vaultlens.vault.links import LinkResolver

__all__ = ["OUTLINE_CACHE", "StructureAudit", "audit_structure"]

OUTLINE_CACHE = "outlines.json"


@dataclass(frozen=True, slots=True)
class StructureAudit:
    report: StructureReport
    resolver: LinkResolver  # every file of the vault at audit time, to name notes by unambiguous links


def audit_structure(app: App) -> StructureAudit:
    """Read the whole vault (no index needed) and report its structure; writes nothing but its outline cache
    under VAULTLENS_HOME."""
    with translated_errors("audit the vault structure", path=app.vault):
        cache = paths.audit_dir(app.vault) / OUTLINE_CACHE
        graph = read_vault(app.vault, int(app.settings.index.max_file_mb * 1_000_000), cache)
        return StructureAudit(build_report(str(app.vault), graph), graph.resolver)
