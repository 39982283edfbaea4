"""Auditing the vault: its structure (no model), its topics (stored vectors) and every note (a model).

Reports go outside the vault (default: the vault's audit folder under VAULTLENS_HOME); a structure
audit into a folder inside the vault plans each report as a new note, written only through
:func:`~vaultlens.services.verbs.changing.apply` after the user confirmed its diff. ``audit_deep``
first proposes what it would send where (:class:`~vaultlens.errors.ConsentRequired`) and sends
only when called again with that proposal.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vaultlens.config import paths
from vaultlens.errors import ConfigError, ConsentRequired, Proposal, translated_errors
from vaultlens.services.app import App
from vaultlens.services.auditing import CLUSTER_MIN_SIZE, CLUSTER_THRESHOLD, StructureAudit, audit_clusters
from vaultlens.services.auditing import audit_structure as structure_of
from vaultlens.services.auditing.clusters import ClusterReport
from vaultlens.services.auditing.deep import DeepPlan, DeepReport, audit_llm, plan_deep, run_deep
from vaultlens.services.auditing.deep_report import deep_markdown
from vaultlens.services.auditing.moc import MocPlan, plan_moc
from vaultlens.services.auditing.report_files import (
    CLUSTER_FILES,
    DASHBOARD,
    DEEP_FILES,
    JSON_REPORT,
    MAP,
    ReportFiles,
    VaultPlan,
    check_out,
    check_outside,
    out_folder,
    plan_into_vault,
    write_clusters,
    write_deep,
    write_outside,
)
from vaultlens.services.auditing.structure import StructureReport
from vaultlens.vault.links import LinkResolver

__all__ = [
    "CLUSTER_MIN_SIZE",
    "CLUSTER_THRESHOLD",
    "MAP",
    "ClusterReport",
    "DeepPlan",
    "DeepReport",
    "MocPlan",
    "SavedStructure",
    "StructureAudit",
    "StructureReport",
    "StructureResult",
    "TopicsResult",
    "audit_clusters_only",
    "audit_deep",
    "audit_structure",
    "moc",
    "saved_structure",
]


def _paths(written: dict[str, Path]) -> dict[str, str]:
    return {k: str(v) for k, v in written.items()}


@dataclass(frozen=True)
class StructureResult:
    """The structure report, the files written outside the vault, and the notes planned into it."""

    audit: StructureAudit
    files: dict[str, Path]
    into: VaultPlan | None = None  # --out inside the vault: each report a planned note, or up to date

    def as_dict(self) -> dict[str, Any]:
        out = {**self.audit.report.as_dict(), "files": _paths(self.files)}
        if self.into is not None:
            out["planned"] = [p.as_dict() for p in self.into.planned]
            out["up_to_date"] = list(self.into.up_to_date)
        return out


@dataclass(frozen=True)
class SavedStructure:
    """The last structure report of a vault (from this process, or saved in its audit folder by an
    earlier run) and its files, so a restarted server shows it again."""

    report: StructureReport
    files: dict[str, Path]
    saved: datetime

    @classmethod
    def of(cls, result: StructureResult) -> SavedStructure:
        return cls(result.audit.report, result.files, datetime.now(UTC))


def saved_structure(app: App) -> SavedStructure | None:
    """The structure report the last audit saved in the vault's audit folder (under VAULTLENS_HOME,
    beside the audit's caches), or None when there is none or it cannot be read (the next run rewrites it)."""
    folder = paths.audit_dir(app.vault)
    try:
        saved = datetime.fromtimestamp((folder / JSON_REPORT).stat().st_mtime, UTC)
        report = StructureReport.from_saved(json.loads((folder / JSON_REPORT).read_bytes()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    files = {name: folder / name for name in (DASHBOARD, MAP, JSON_REPORT) if (folder / name).is_file()}
    return SavedStructure(report, files, saved)


@dataclass(frozen=True)
class TopicsResult:
    """Topic clusters (``--no-llm``) or a deep audit's report, and the files written."""

    clusters: ClusterReport
    files: dict[str, Path]
    deep: DeepReport | None = None

    def as_dict(self) -> dict[str, Any]:
        if self.deep is None:
            return {**self.clusters.as_dict(), "files": _paths(self.files)}
        d = self.deep
        run = {"sent": d.sent, "from_cache": d.from_cache, "usage": d.usage}
        return {**d.as_dict(), "run": run, "files": _paths(self.files)}


@translated_errors()
def audit_structure(app: App, out: Path | None = None, *, into_vault: bool = True) -> StructureResult:
    """Folders, tags, links, the link graph; a Markdown dashboard, a Canvas map and JSON in ``out``.

    ``out`` inside the vault plans the dashboard and map as new notes (to apply one by one);
    ``into_vault=False`` refuses that (an interface that cannot show each diff). A relative ``out`` is
    taken from the vault's folder (:func:`out_folder`)."""
    if out is not None:
        out = out_folder(app.vault, out)
    into = check_out(app.vault, out) if out is not None else None  # before any work
    if into is not None and not into_vault:
        raise ConfigError(
            "--json cannot be combined with an --out folder inside the vault (each new note is confirmed as a diff).",
            hint="Run without --json to review and write them, or use an --out folder outside the vault.",
        )
    audit = structure_of(app.files())
    files = ReportFiles.render(audit.report, audit.resolver)
    plan = plan_into_vault(app.vault, files, into) if into is not None else None
    written = write_outside(app.vault, files, None if into is not None else out)
    return StructureResult(audit, written, plan)


@translated_errors()
def audit_clusters_only(
    app: App, threshold: float = CLUSTER_THRESHOLD, min_size: int = CLUSTER_MIN_SIZE, out: Path | None = None
) -> TopicsResult:
    """Topic clusters from the index's stored vectors, named from headings and terms: no model."""
    check_outside(app.vault, out, CLUSTER_FILES)
    report = audit_clusters(app, threshold, min_size)
    return TopicsResult(report, write_clusters(app.vault, report, out))


@translated_errors()
def audit_deep(
    app: App,
    full: bool = False,
    threshold: float = CLUSTER_THRESHOLD,
    min_size: int = CLUSTER_MIN_SIZE,
    out: Path | None = None,
    confirmed: Proposal | None = None,
    on_batch: Callable[[int], None] | None = None,
) -> TopicsResult:
    """A per-note analysis by the configured model (cached by content), clusters and a vault-wide report.

    Without ``confirmed``: :class:`ConsentRequired` saying how much goes where; with it, that plan
    is sent (``on_batch`` gets each finished batch's note count; Ctrl-C keeps what finished cached)."""
    check_outside(app.vault, out, DEEP_FILES)  # before any work or any request
    provider = audit_llm(app.settings)
    try:
        files = app.files()
        shown = confirmed.payload if confirmed is not None else None
        if isinstance(shown, DeepPlan):
            plan = dataclasses.replace(shown, provider=provider)  # the plan shown; this call's client
        else:
            plan = plan_deep(app, files, provider, app.settings.audit.batch_notes, full, threshold, min_size)
        if not isinstance(shown, DeepPlan):  # no grant, or one for something else: show this plan first
            raise ConsentRequired(
                plan.where(),
                plan.what,
                message="Nothing was sent: agree first.",
                hint="Show the plan and call again with the grant (the CLI asks, or pass --yes).",
                remarks=(plan.summary(),),
                payload=plan,
            )
        report = run_deep(files, plan, app.settings.audit.parallel, consent=True, on_batch=on_batch)
    finally:
        provider.close()
    write_clusters(app.vault, report.clusters, out)  # the saved clusters `moc` builds from
    resolver = LinkResolver(f.path for f in files.scan().files)
    written = write_deep(app.vault, deep_markdown(report, resolver), report.as_dict(), out)
    return TopicsResult(report.clusters, written, report)


@translated_errors()
def moc(app: App, cluster: str, out_path: str | None = None) -> MocPlan:
    """Plan a Map of Content note linking a saved cluster's notes (apply it after its diff is confirmed)."""
    return plan_moc(app.files(), cluster, out_path)
