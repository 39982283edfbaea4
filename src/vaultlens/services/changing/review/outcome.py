"""What one review produced, as every interface shows it: claims with quotes, the validator, the plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultlens.services.changing.review.catalog import Catalog, Fragment
from vaultlens.services.changing.review.planner import INSERTABLE_AFTER
from vaultlens.services.changing.review.session import Prepared, Reviewed, claim_dict
from vaultlens.services.changing.writes import Planned
from vaultlens.services.finding.section import plain_text
from vaultlens.services.serial import AsDict
from vaultlens.vault.hidden import visible

LABEL_WORDS_CHARS = 60  # a block's first words in its label


@dataclass(frozen=True, slots=True)
class Cut(AsDict):
    """A note the prompt carries only the start of (longer than the catalog's max_chars)."""

    side: str
    path: str
    chars: int
    sent: int

    def remark(self) -> str:
        return (
            f"Note {self.side}, {self.path}, has {self.chars:,} characters: "
            f"only its first {self.sent:,} are in this prompt."
        )


def cuts(prepared: Prepared) -> list[Cut]:
    catalog = prepared.catalog
    return [
        Cut(side, catalog.paths[side], len(catalog.sources[side].text), len(catalog.sent_text(side)))
        for side in ("A", "B")
        if catalog.cut(side)
    ]


def prompt_sources(prepared: Prepared) -> list[dict[str, Any]]:
    """How much of each note the prompt carries: ``side``, ``path``, ``chars`` sent and ``of`` its length
    (what a page says above a collapsed prompt)."""
    catalog = prepared.catalog
    return [
        {"side": side, "path": catalog.paths[side], "chars": len(catalog.sent_text(side)),
         "of": len(catalog.sources[side].text)}
        for side in ("A", "B")
    ]  # fmt: skip


def destination(prepared: Prepared) -> str:
    """Where the prompt goes: a remote destination, or the local model and its endpoint."""
    return (
        prepared.destination
        or f"{prepared.provider} model {prepared.model} at {prepared.endpoint} (this machine)"
    )


def block_label(fragment: Fragment) -> str:
    """A block as a person recognises it: the headings it sits under and its first words, with its
    lines (never the catalog's nonce id), e.g. ``Cache lifetime › Validation: “When the TTL…” (lines 7-10)``."""
    where = " › ".join(fragment.heading_path) or "(top)"
    lines = f"lines {fragment.start_line}-{fragment.end_line}"
    if fragment.kind == "heading":
        return f"{where} (heading, {lines})"
    words = " ".join(plain_text(fragment.text).split())
    if len(words) > LABEL_WORDS_CHARS:
        words = words[: LABEL_WORDS_CHARS - 1].rstrip() + "…"
    return f"{where}: “{visible(words)}” ({fragment.kind}, {lines})"


def insert_points(catalog: Catalog) -> list[dict[str, Any]]:
    """The blocks a planned link or copied block may go after (what ``--after`` takes), short ids,
    each with its readable ``label``."""
    return [
        {"id": f"{f.side}:{f.id.rsplit(':', 1)[-1]}", "side": f.side, "kind": f.kind,
         "start_line": f.start_line, "end_line": f.end_line, "text": f.text[:80], "label": block_label(f)}
        for f in catalog.fragments
        if f.kind in INSERTABLE_AFTER
    ]  # fmt: skip


@dataclass(frozen=True)
class ReviewResult:
    """One reviewed pair: the model's claims (quotes from the catalog only), the validator's verdict,
    and the planned edit (``plan``, waiting for apply) or why none was planned."""

    reviewed: Reviewed
    plan: Planned | None = None
    plan_refused: str | None = None

    @property
    def ok(self) -> bool:
        return self.reviewed.validation.ok

    def as_dict(self) -> dict[str, Any]:
        v = self.reviewed.validation
        review = v.review
        catalog = self.reviewed.prepared.catalog
        completion = self.reviewed.completion
        plan = self.plan
        return {
            "a": catalog.paths["A"],
            "b": catalog.paths["B"],
            "relation": review.relation if review else None,
            "recommendation": review.recommendation.model_dump() if review else None,
            "claims": [claim_dict(c, catalog) for c in v.claims],
            "notes_cut": [c.as_dict() for c in cuts(self.reviewed.prepared)],
            "validation": v.as_dict(),
            "plan": None
            if plan is None
            else {"op_id": plan.entry.op_id, "path": plan.entry.path, "diff": plan.diff},
            "plan_refused": self.plan_refused,
            "insert_after": insert_points(catalog),
            "model": completion.model,
            "usage": completion.usage.as_dict() if completion.usage else None,
            "seconds": round(self.reviewed.seconds, 2),
        }
