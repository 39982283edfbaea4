"""The refs.v2 contract a model answers a review in, and the strict validator that checks it.

The model never quotes: claims cite fragment ids (``evidenceA`` / ``evidenceB``), explanation
and recommendation cite claim ids. The validator rejects anything it cannot map back exactly,
each rejection with its own diagnostic code (docs/review.md lists them); it never repairs a
reference "by meaning". A valid answer still proves only that each cited fragment exists on
the cited side, not that it supports the claim; a person judges that.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vaultlens.llm.structured import hidden_problem
from vaultlens.services.changing.review.catalog import Catalog, Fragment, Side

__all__ = [
    "SCHEMA_ID",
    "Action",
    "Diagnostic",
    "RelationshipReview",
    "ResolvedClaim",
    "Validation",
    "response_schema",
    "validate_response",
]

SCHEMA_ID = "vaultlens.relationship.refs.v2"
Action = Literal["keep_separate", "add_link", "consider_merge", "manual_review"]
Relation = Literal[
    "duplicate", "near_duplicate", "partial_overlap", "related", "contradiction", "unrelated", "insufficient_context"
]  # fmt: skip


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Claim(_Strict):
    id: str = Field(pattern=r"^c[0-9]{1,3}$")
    kind: Literal["shared", "a_only", "b_only", "conflict"]
    text: str = Field(min_length=1, max_length=2000)
    evidenceA: str | None  # the contract's field name
    evidenceB: str | None


class Explanation(_Strict):
    text: str = Field(min_length=1, max_length=4000)
    evidence: list[str]


class Recommendation(_Strict):
    action: Action
    reason: str = Field(min_length=1, max_length=2000)
    evidence: list[str]


class RelationshipReview(_Strict):
    schema_: Literal["vaultlens.relationship.refs.v2"] = Field(alias="schema")
    relation: Relation
    claims: list[Claim] = Field(max_length=40)
    explanation: Explanation
    recommendation: Recommendation
    limitations: list[str]


def response_schema() -> dict[str, Any]:
    """The JSON schema requested from providers that support structured output."""
    return RelationshipReview.model_json_schema(by_alias=True)


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    field: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "field": self.field}


@dataclass(frozen=True, slots=True)
class ResolvedClaim:
    """A claim with its evidence replaced by the catalog's fragments (the only quotes ever shown)."""

    id: str
    kind: str
    text: str
    evidence_a: Fragment | None
    evidence_b: Fragment | None


@dataclass
class Validation:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    review: RelationshipReview | None = None
    claims: list[ResolvedClaim] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.review is not None and not self.diagnostics

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "diagnostics": [d.as_dict() for d in self.diagnostics]}


def _parse(raw: str, out: Validation) -> RelationshipReview | None:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        out.diagnostics.append(Diagnostic("invalid_json", f"The answer is not JSON ({exc})."))
        return None
    hidden = hidden_problem(data)
    if hidden is not None:  # a terminal would show other text than the answer holds
        out.diagnostics.append(Diagnostic("hidden_character", f"The answer's {hidden}."))
        return None
    if isinstance(data, dict) and data.get("schema") != SCHEMA_ID:
        out.diagnostics.append(
            Diagnostic("wrong_schema", f"`schema` is {data.get('schema')!r}, not {SCHEMA_ID!r}.", "schema")
        )
        return None
    try:
        return RelationshipReview.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"])
            out.diagnostics.append(Diagnostic("schema_violation", f"{where}: {err['msg']}.", where))
        return None


def _fragment(
    catalog: Catalog, claim_ids: set[str], ref: str | None, side: Side, where: str, out: Validation
) -> Fragment | None:
    if ref is None:
        return None
    if ref in claim_ids:
        out.diagnostics.append(
            Diagnostic("claim_as_fragment", f"{ref!r} is a claim id where a fragment id belongs.", where)
        )
        return None
    found = catalog.get(ref)
    if found is None:
        out.diagnostics.append(
            Diagnostic("reference_unknown", f"{ref!r} is not a fragment of this review.", where)
        )
        return None
    if found.side != side:
        out.diagnostics.append(
            Diagnostic(
                "reference_side_mismatch",
                f"{ref!r} is a fragment of side {found.side}, cited as side {side}.",
                where,
            )
        )
        return None
    return found


def _claim_refs(refs: list[str], claim_ids: set[str], catalog: Catalog, where: str, out: Validation) -> None:
    for i, ref in enumerate(refs):
        if ref in claim_ids:
            continue
        if catalog.get(ref) is not None:
            out.diagnostics.append(
                Diagnostic(
                    "fragment_as_claim", f"{ref!r} is a fragment id where a claim id belongs.", f"{where}.{i}"
                )
            )
        else:
            out.diagnostics.append(
                Diagnostic("claim_unknown", f"{ref!r} is not a claim of this answer.", f"{where}.{i}")
            )


def validate_response(raw: str, catalog: Catalog, current_hashes: Mapping[Side, str | None]) -> Validation:
    """Check a model's answer against the catalog and the notes' current SHA-256 (see the module docstring)."""
    out = Validation()
    for side, sha in catalog.hashes().items():
        if current_hashes.get(side) != sha:
            out.diagnostics.append(
                Diagnostic(
                    "source_changed", f"{catalog.paths[side]} changed after the catalog was built.", side
                )
            )
    review = _parse(raw, out)
    if review is None:
        return out
    claim_ids: set[str] = set()
    for i, claim in enumerate(review.claims):
        if claim.id in claim_ids:
            out.diagnostics.append(
                Diagnostic("duplicate_claim_id", f"Claim id {claim.id!r} is used twice.", f"claims.{i}.id")
            )
        claim_ids.add(claim.id)
    for i, claim in enumerate(review.claims):
        a = _fragment(catalog, claim_ids, claim.evidenceA, "A", f"claims.{i}.evidenceA", out)
        b = _fragment(catalog, claim_ids, claim.evidenceB, "B", f"claims.{i}.evidenceB", out)
        if claim.evidenceA is None and claim.evidenceB is None:
            out.diagnostics.append(
                Diagnostic("claim_without_evidence", f"Claim {claim.id!r} cites no fragment.", f"claims.{i}")
            )
        out.claims.append(ResolvedClaim(claim.id, claim.kind, claim.text, a, b))
    _claim_refs(review.explanation.evidence, claim_ids, catalog, "explanation.evidence", out)
    _claim_refs(review.recommendation.evidence, claim_ids, catalog, "recommendation.evidence", out)
    out.review = review
    return out
