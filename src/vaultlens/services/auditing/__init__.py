"""Vault audits. ``audit_structure`` needs no model: files, links, tags and the link graph, as Obsidian sees them.

``audit_clusters`` groups indexed notes by topic from stored vectors and names the groups without a model.

Modules: ``graph`` reads and resolves the vault, ``structure`` computes the findings, ``dashboard`` and ``canvas``
render them, ``report_files`` puts them outside the vault or plans them into it through safewrite.
"""

from __future__ import annotations

from dataclasses import dataclass

from vaultlens.config import paths
from vaultlens.errors import translated_errors
from vaultlens.services.auditing.clusters import ClusterReport, cluster_notes
from vaultlens.services.auditing.graph import read_vault
from vaultlens.services.auditing.structure import StructureReport, build_report
from vaultlens.services.context import IndexReader, VaultFiles
from vaultlens.vault.links import LinkResolver

__all__ = [
    "CLUSTER_MIN_SIZE",
    "CLUSTER_THRESHOLD",
    "OUTLINE_CACHE",
    "StructureAudit",
    "audit_clusters",
    "audit_structure",
]

CLUSTER_THRESHOLD = 0.5  # mean cosine between a cluster's notes
CLUSTER_MIN_SIZE = 3

OUTLINE_CACHE = "outlines.json"


@dataclass(frozen=True, slots=True)
class StructureAudit:
    report: StructureReport
    resolver: LinkResolver  # every file of the vault at audit time, to name notes by unambiguous links


def audit_structure(files: VaultFiles) -> StructureAudit:
    """Read the whole vault (no index needed) and report its structure; writes nothing but its outline cache
    under VAULTLENS_HOME."""
    with translated_errors("audit the vault structure", path=files.root):
        cache = paths.audit_dir(files.root) / OUTLINE_CACHE
        graph = read_vault(files.root, files.max_bytes, cache)
        return StructureAudit(build_report(str(files.root), graph), graph.resolver)


def audit_clusters(
    index: IndexReader, threshold: float = CLUSTER_THRESHOLD, min_size: int = CLUSTER_MIN_SIZE
) -> ClusterReport:
    """Topic clusters from the index's stored note vectors, named from headings and terms: no model, no
    embedding call (``audit deep --no-llm``). Needs an index (IndexNotFound otherwise)."""
    with translated_errors("cluster the notes"), index.reading() as store:
        return cluster_notes(store, threshold, min_size)
