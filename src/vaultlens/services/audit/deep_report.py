"""The deep audit as Markdown: the model's synthesis first, then clusters, per-note analyses and failures.

Deterministic for the same results (no time, no run statistics), so a resumed run writes the same report as an
uninterrupted one. Notes are linked by full path (``[[folder/name]]``), unambiguous whatever shares a name.
"""

from __future__ import annotations

from typing import Any

from vaultlens.services.audit.deep import DeepReport
from vaultlens.services.audit.graph import REPORT_PROPERTY

__all__ = ["deep_markdown"]


def _link(path: str) -> str:
    return f"[[{path.removesuffix('.md')}]]"


def _bullets(title: str, items: list[str]) -> list[str]:
    return [f"## {title}", "", *(f"- {i}" for i in items), ""] if items else []


def _note(path: str, r: dict[str, Any]) -> list[str]:
    q = r["quality"]
    out = [f"### {_link(path)}", "", r["main_idea"], "", f"Quality {q['score']}/5"]
    out[-1] += f": {'; '.join(q['issues'])}" if q["issues"] else ""
    for label, key in (("Key points", "key_points"), ("Topics", "topics"), ("Entities", "entities"),
                       ("Suggested tags", "suggested_tags"), ("Suggested links", "suggested_links")):  # fmt: skip
        if r[key]:
            out.append(f"{label}: {', '.join(r[key])}")
    return [*out, ""]


def deep_markdown(report: DeepReport) -> str:
    s = report.synthesis or {}
    named = {c["id"]: c for c in s.get("clusters", [])}
    out = [
        f"---\n{REPORT_PROPERTY}: deep-audit\n---",
        "# Vault deep audit",
        "",
        f"Model {report.model} · {len(report.notes)} notes analysed, {len(report.failed)} failed, "
        f"{len(report.clusters.clusters)} clusters.",
        "",
    ]
    if report.synthesis_error:
        out += [f"The summary request failed: {report.synthesis_error}", ""]
    out += _bullets("Findings", s.get("findings", []))
    out += _bullets("Structural problems", s.get("structural_problems", []))
    out += _bullets("Recommendations", s.get("recommendations", []))
    out += _bullets("Action plan", s.get("action_plan", []))
    if report.clusters.clusters:
        out += ["## Clusters", ""]
    for c in report.clusters.clusters:
        given = named.get(c.id, {})
        out += [f"### {c.id}. {given.get('name') or c.name} ({c.size} notes)", ""]
        if given.get("description"):
            out += [given["description"], ""]
        out += [f"- {_link(p)}" for p in c.notes] + [""]
    if report.failed:
        out += [
            "## Failed notes",
            "",
            *(f"- {_link(p)}: {why}" for p, why in sorted(report.failed.items())),
            "",
        ]
    out += ["## Notes", ""]
    for path, r in sorted(report.notes.items()):
        out += _note(path, r)
    return "\n".join(out).rstrip() + "\n"
