"""Where a structure audit's files go: a folder outside the vault (written here), or the vault (planned only).

This is the one audit module that writes files, and it writes only outside the vault: a folder inside the
vault is refused here, and the CLI turns such a request into safewrite operations the user confirms
(:func:`plan_into_vault`). tests/test_architecture.py lists this module among those allowed to write.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from vaultlens.chunking.source import read_note
from vaultlens.config import paths
from vaultlens.errors import NoteNotFound, VaultError, translated_errors
from vaultlens.fsutil import atomic_write, nearest_existing
from vaultlens.services.auditing.canvas import canvas_map
from vaultlens.services.auditing.clusters import ClusterReport, clusters_markdown
from vaultlens.services.auditing.dashboard import dashboard_markdown
from vaultlens.services.auditing.graph import REPORT_PROPERTY
from vaultlens.services.auditing.structure import StructureReport
from vaultlens.services.changing import writes
from vaultlens.vault.links import LinkResolver
from vaultlens.vault.safepath import check_relative

__all__ = [
    "CLUSTER_FILES",
    "DASHBOARD",
    "DEEP_FILES",
    "JSON_REPORT",
    "MAP",
    "ReportFiles",
    "VaultPlan",
    "check_out",
    "check_outside",
    "inside_vault",
    "out_folder",
    "plan_into_vault",
    "write_clusters",
    "write_deep",
    "write_outside",
]

DASHBOARD = "vault-structure.md"
MAP = "vault-map.canvas"
JSON_REPORT = "vault-structure.json"

_GENERATED_FORMAT = "%Y-%m-%d %H:%M UTC"
# the time dashboard_markdown shows under the title: a saved dashboard that differs from a new one only there
# is up to date, not a change to confirm
_GENERATED = re.compile(r" · \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC · ".encode())


@dataclass(frozen=True, slots=True)
class ReportFiles:
    """The three files of one audit, as bytes: the dashboard, the Canvas map and the JSON report."""

    dashboard: bytes
    canvas: bytes
    json: bytes

    @classmethod
    def render(cls, report: StructureReport, resolver: LinkResolver) -> ReportFiles:
        generated = datetime.now(UTC).strftime(_GENERATED_FORMAT)
        # the marker keeps a dashboard saved in the vault out of the next audit (see graph.REPORT_PROPERTY)
        front = f"---\n{REPORT_PROPERTY}: structure-audit\n---\n"
        dashboard = front + dashboard_markdown(report, resolver, generated)
        canvas = canvas_map(report.notes, report.edges)
        # compact JSON: for 5,000 notes, indenting costs a second and readers are programs (the dashboard is for people)
        return cls(
            dashboard.encode("utf-8"),
            (json.dumps(canvas, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"),
            (json.dumps(report.as_dict(), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"),
        )


def inside_vault(vault: Path, folder: Path) -> str | None:
    """``folder`` as a vault-relative POSIX path when it lies inside the vault ("" for the root), else None."""
    real_vault = vault.resolve()
    real = folder.expanduser().resolve()
    if real == real_vault:
        return ""
    if real.is_relative_to(real_vault):
        return real.relative_to(real_vault).as_posix()
    return None


def out_folder(vault: Path, folder: Path) -> Path:
    """The structure audit's ``--out`` as a path: ``~`` expanded, and a relative path taken from the vault's
    folder, never the current one, so ``--out Audits`` is the vault's Audits folder wherever the command runs."""
    folder = folder.expanduser()
    return (
        folder if folder.is_absolute() else Path(os.path.normpath(vault / folder))
    )  # "../x" printed as ".../x"


_OUT_HINT = "Pick a visible folder in the vault (a missing one is created) or a folder outside it, or leave --out out."
_OUTSIDE_HINT = "Pick a folder outside the vault (a missing one is created), or leave --out out."


def _refused(folder: Path, why: str, hint: str = _OUT_HINT) -> VaultError:
    return VaultError(f"Cannot put the audit reports in {folder}: {why}.", hint=hint)


def _check_folder(folder: Path, real: Path, names: tuple[str, ...], hint: str = _OUT_HINT) -> None:
    """``real`` (``folder`` resolved) is a folder or can be made one, and each of ``names`` in it is a file or absent."""
    at = nearest_existing(real)
    if not at.is_dir():
        why = "it is a file" if at == real else f"{at} is a file"
        raise _refused(folder, why + ", not a folder", hint)
    for name in names:
        inside = real / name
        if os.path.lexists(inside) and not inside.is_file():
            raise _refused(folder, f"{name} there is not a file", hint)


def check_out(vault: Path, folder: Path) -> str | None:
    """Check the structure audit's ``--out`` before anything is read or written: the vault-relative folder
    when it lies inside the vault ("" for the root), None for a folder outside it.

    Refused (:class:`VaultError`): a file, or a path under one; a folder where one of the reports' names is
    not a file; inside the vault, a hidden folder or one whose path a note could not have.
    """
    into = inside_vault(vault, folder)
    real = folder.expanduser().resolve()
    if into:
        hidden = next((part for part in into.split("/") if part.startswith(".")), None)
        if hidden is not None:
            raise _refused(folder, f"{hidden!r} is a hidden folder (Obsidian shows no notes there)")
        try:
            check_relative(into)
        except VaultError as exc:
            raise _refused(folder, exc.message.rstrip(".")) from None
    _check_folder(folder, real, (DASHBOARD, MAP) if into is not None else (DASHBOARD, MAP, JSON_REPORT))
    return into


def check_outside(vault: Path, folder: Path | None, names: tuple[str, ...]) -> None:
    """Check a deep audit's ``--out`` before any work: outside the vault, a folder (or none yet), and none of
    ``names`` in it a folder. None (the default audit folder) passes."""
    if folder is None:
        return
    if inside_vault(vault, folder) is not None:
        raise _refused(folder, "it is inside the vault, and these reports go only outside it", _OUTSIDE_HINT)
    _check_folder(folder, folder.expanduser().resolve(), names, _OUTSIDE_HINT)


def write_outside(vault: Path, files: ReportFiles, folder: Path | None) -> dict[str, Path]:
    """Write the three files into ``folder`` (default: the vault's audit folder under VAULTLENS_HOME).

    Refuses a folder inside the vault: that goes through :func:`plan_into_vault` and the user's confirmation.
    """
    target = folder.expanduser() if folder is not None else paths.audit_dir(vault)
    if inside_vault(vault, target) is not None:
        raise VaultError(
            f"{target} is inside the vault; audit files are written there only as confirmed new notes.",
            hint="Use the CLI's --out with a folder in the vault to review and confirm them, or pick a folder "
            "outside it.",
        )
    if folder is None:
        paths.ensure_home()
    written = {DASHBOARD: target / DASHBOARD, MAP: target / MAP, JSON_REPORT: target / JSON_REPORT}
    with translated_errors(f"write the audit report to {target}", path=target):
        for name, data in ((DASHBOARD, files.dashboard), (MAP, files.canvas), (JSON_REPORT, files.json)):
            atomic_write(written[name], data, durable=False)  # a report lost to a power cut is made again
    return written


CLUSTERS_MD = "vault-clusters.md"
CLUSTERS_JSON = "clusters.json"
DEEP_MD = "vault-deep-audit.md"
DEEP_JSON = "deep-audit.json"
CLUSTER_FILES = (CLUSTERS_MD, CLUSTERS_JSON)
DEEP_FILES = (*CLUSTER_FILES, DEEP_MD, DEEP_JSON)


def _outside_target(vault: Path, folder: Path | None, what: str) -> Path:
    """``folder`` (default: the vault's audit folder, created), refused when it lies inside the vault."""
    target = folder.expanduser() if folder is not None else paths.audit_dir(vault)
    if inside_vault(vault, target) is not None:
        raise VaultError(
            f"{target} is inside the vault; {what} is written outside it.",
            hint="Pick a folder outside the vault, or leave --out out.",
        )
    if folder is None:
        paths.ensure_home()
    return target


def write_deep(vault: Path, markdown: str, data: dict[str, Any], folder: Path | None) -> dict[str, Path]:
    """The deep audit's Markdown report and JSON in ``folder`` (default: the vault's audit folder)."""
    target = _outside_target(vault, folder, "the deep audit report")
    written = {DEEP_MD: target / DEEP_MD, DEEP_JSON: target / DEEP_JSON}
    with translated_errors(f"write the deep audit report to {target}", path=target):
        atomic_write(written[DEEP_MD], markdown)
        atomic_write(written[DEEP_JSON], json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    return written


def write_clusters(vault: Path, report: ClusterReport, folder: Path | None) -> dict[str, Path]:
    """The clusters' Markdown report and JSON (the saved clusters a Map of Content is built from) in ``folder``
    (default: the vault's audit folder); a folder inside the vault is refused like for the structure audit."""
    target = _outside_target(vault, folder, "the cluster report")
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    written = {CLUSTERS_MD: target / CLUSTERS_MD, CLUSTERS_JSON: target / CLUSTERS_JSON}
    with translated_errors(f"write the cluster report to {target}", path=target):
        atomic_write(written[CLUSTERS_MD], clusters_markdown(report, generated))
        atomic_write(
            written[CLUSTERS_JSON], json.dumps(report.as_dict(), ensure_ascii=False, indent=2) + "\n"
        )
    return written


@dataclass(frozen=True, slots=True)
class VaultPlan:
    """The reports planned as notes (each to confirm) in ``folder``, and those whose note already holds them."""

    folder: str  # vault-relative, "" for the root
    planned: list[writes.Planned] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)  # vault-relative paths


def _holds(vault: Path, rel: str, data: bytes) -> bool:
    """Whether note ``rel`` already holds the report ``data`` (the dashboard's time aside)."""
    try:
        current = read_note(vault, rel).raw
    except NoteNotFound:
        return False
    return current == data or _GENERATED.sub(b"", current, 1) == _GENERATED.sub(b"", data, 1)


def plan_into_vault(vault: Path, files: ReportFiles, folder: str) -> VaultPlan:
    """Plan the dashboard and the Canvas map as notes in the vault folder ``folder`` (safewrite; nothing is
    written until the user confirms each diff); one the vault already holds is up to date, not planned. The
    JSON report is not a note and stays outside."""
    plan = VaultPlan(folder)
    for name, data in ((DASHBOARD, files.dashboard), (MAP, files.canvas)):
        rel = str(PurePosixPath(folder) / name) if folder else name
        check_relative(rel)
        if _holds(vault, rel, data):
            plan.up_to_date.append(rel)
        else:
            plan.planned.append(writes.plan_write(vault, rel, data, f"vault structure audit: {name}"))
    return plan
