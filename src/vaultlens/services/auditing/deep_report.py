"""The deep audit as Markdown: the model's synthesis first, then clusters, per-note analyses and failures.

Deterministic for the same results (no time, no run statistics), so a resumed run writes the same report as an
uninterrupted one. Notes are linked by full path (``[[folder/name]]``), unambiguous whatever shares a name.
The model's text is untrusted: it is shown as text (HTML escaped, each item on one line, so it can add no
markup, script or heading), and a link it suggests is a link only when it resolves to a note of the vault.
"""

from __future__ import annotations

import html
from typing import Any

from vaultlens.services.auditing.deep import DeepReport
from vaultlens.services.auditing.graph import REPORT_PROPERTY
from vaultlens.vault.links import LinkResolver

__all__ = ["deep_markdown"]

NO_SUCH_NOTE = "(no such note)"


def _link(path: str) -> str:
    return f"[[{path.removesuffix('.md')}]]"


def _text(model_text: str) -> str:
    """Model text as plain text on one line: ``<``, ``>`` and ``&`` escaped, line breaks collapsed."""
    return html.escape(" ".join(model_text.split()), quote=False)


def _suggested(link: str, source: str, resolver: LinkResolver) -> str:
    """A suggested link as a link to the note it resolves to from ``source``, else marked as no such note."""
    target = link.strip().removeprefix("[[").removesuffix("]]").partition("|")[0].partition("#")[0]
    found = resolver.resolve(target, source) if target.strip() else None
    if found is not None and found.status == "resolved" and found.path is not None:
        return _link(found.path)
    return f"{_text(link)} {NO_SUCH_NOTE}"


def _bullets(title: str, items: list[str]) -> list[str]:
    return [f"## {title}", "", *(f"- {_text(i)}" for i in items), ""] if items else []


def _note(path: str, r: dict[str, Any], resolver: LinkResolver) -> list[str]:
    q = r["quality"]
    out = [f"### {_link(path)}", "", _text(r["main_idea"]), "", f"Quality {q['score']}/5"]
    out[-1] += f": {'; '.join(map(_text, q['issues']))}" if q["issues"] else ""
    for label, key in (("Key points", "key_points"), ("Topics", "topics"), ("Entities", "entities"),
                       ("Suggested tags", "suggested_tags")):  # fmt: skip
        if r[key]:
            out.append(f"{label}: {', '.join(map(_text, r[key]))}")
    if r["suggested_links"]:
        links = (_suggested(link, path, resolver) for link in r["suggested_links"])
        out.append(f"Suggested links: {', '.join(links)}")
    return [*out, ""]


def deep_markdown(report: DeepReport, resolver: LinkResolver) -> str:
    """The report; ``resolver`` holds the vault's files, which decide whether a suggested link is a link."""
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
        out += [f"The summary request failed: {_text(report.synthesis_error)}", ""]
    out += _bullets("Findings", s.get("findings", []))
    out += _bullets("Structural problems", s.get("structural_problems", []))
    out += _bullets("Recommendations", s.get("recommendations", []))
    out += _bullets("Action plan", s.get("action_plan", []))
    if report.clusters.clusters:
        out += ["## Clusters", ""]
    for c in report.clusters.clusters:
        given = named.get(c.id, {})
        out += [f"### {c.id}. {_text(given.get('name') or c.name)} ({c.size} notes)", ""]
        if given.get("description"):
            out += [_text(given["description"]), ""]
        out += [f"- {_link(p)}" for p in c.notes] + [""]
    if report.failed:
        out += [
            "## Failed notes",
            "",
            *(f"- {_link(p)}: {_text(why)}" for p, why in sorted(report.failed.items())),
            "",
        ]
    out += ["## Notes", ""]
    for path, r in sorted(report.notes.items()):
        out += _note(path, r, resolver)
    return "\n".join(out).rstrip() + "\n"
