"""One review of a candidate pair: prepare (catalog + exact prompt), send, validate, plan.

:func:`prepare` calls no model: it returns the exact messages and the destination, which the
interface shows and the user accepts. :func:`send` enforces consent for a remote model, sends
those messages unchanged (JSON-schema output where the provider supports it, else the schema in
the text) and validates the answer against the catalog and the notes' current bytes.
:func:`propose` turns a valid recommendation into an exact edit; recording it for ``apply`` is
:func:`vaultlens.services.writes.plan_write`'s job.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from vaultlens.errors import PlanRefused
from vaultlens.llm.base import Completion, LLMProvider, Message, llm_destination
from vaultlens.safewrite import render_diff
from vaultlens.services.app import App, require_llm_consent
from vaultlens.services.review.catalog import Catalog, Fragment, Side, build_catalog, current_hashes
from vaultlens.services.review.contract import ResolvedClaim, Validation, response_schema, validate_response
from vaultlens.services.review.planner import PlannedEdit, plan_add_link, plan_merge
from vaultlens.services.review.prompt import build_prompt

__all__ = ["PlanOptions", "Prepared", "Reviewed", "prepare", "propose", "send"]


@dataclass(frozen=True)
class Prepared:
    """Everything decided before the model is called: the catalog, the exact messages, where they go."""

    catalog: Catalog
    messages: tuple[Message, ...]
    provider: str
    model: str
    endpoint: str
    destination: str | None  # None: the model runs on this machine
    json_schema: bool

    @property
    def prompt_text(self) -> str:
        """The prompt as shown to the user: exactly the messages that will be sent."""
        return "\n\n".join(f"[{m.role}]\n{m.content}" for m in self.messages)


@dataclass(frozen=True)
class Reviewed:
    prepared: Prepared
    completion: Completion
    validation: Validation
    seconds: float


@dataclass(frozen=True, slots=True)
class PlanOptions:
    """Parameters of the planned edit a user may change (defaults: the planner's choice)."""

    link_from: Side = "A"  # add_link: the note that gets the link
    after: str | None = None  # the fragment id to insert after (default: the last block)
    fragment: str | None = None  # consider_merge: the block to copy (default: the recommendation's evidence)
    label: str = "See also"


def prepare(app: App, path_a: str, path_b: str, provider: LLMProvider) -> Prepared:
    catalog = build_catalog(app.vault, path_a, path_b, app.chunker())
    system, user = build_prompt(catalog, with_schema=not provider.supports_json_schema)
    return Prepared(
        catalog,
        (Message("system", system), Message("user", user)),
        provider.name,
        provider.model,
        provider.endpoint,
        llm_destination(provider),
        provider.supports_json_schema,
    )


def send(app: App, prepared: Prepared, provider: LLMProvider, consent: bool = False) -> Reviewed:
    """Send the prepared messages (after consent for a remote model) and validate the answer."""
    a, b = prepared.catalog.paths["A"], prepared.catalog.paths["B"]
    size = sum(len(m.content) for m in prepared.messages)
    require_llm_consent(
        app, provider, consent, what=f"the full text of {a} and {b} in a review prompt of {size:,} characters"
    )
    started = time.monotonic()
    completion = provider.chat(
        list(prepared.messages), json_schema=response_schema() if prepared.json_schema else None
    )
    seconds = time.monotonic() - started
    validation = validate_response(
        completion.text, prepared.catalog, current_hashes(app.vault, prepared.catalog)
    )
    return Reviewed(prepared, completion, validation, seconds)


def _merge_fragment(reviewed: Reviewed, options: PlanOptions) -> str:
    if options.fragment:
        return options.fragment
    evidence = (
        set(reviewed.validation.review.recommendation.evidence) if reviewed.validation.review else set()
    )
    for claim in reviewed.validation.claims:
        if claim.id in evidence:
            chosen = claim.evidence_b or claim.evidence_a
            if chosen is not None:
                return chosen.id
    raise PlanRefused("The recommendation cites no block to copy; choose one with --fragment.")


def propose(app: App, reviewed: Reviewed, options: PlanOptions) -> PlannedEdit | None:
    """The exact edit for a valid recommendation; None for keep_separate / manual_review."""
    review = reviewed.validation.review
    if review is None or not reviewed.validation.ok:
        return None
    catalog = reviewed.prepared.catalog
    action = review.recommendation.action
    if action == "add_link":
        limit = int(app.settings.index.max_file_mb * 1_000_000)
        return plan_add_link(app.vault, catalog, options.link_from, options.after, options.label, limit)
    if action == "consider_merge":
        return plan_merge(app.vault, catalog, _merge_fragment(reviewed, options), options.after)
    return None


def _quote(fragment: Fragment | None, catalog: Catalog) -> dict[str, Any] | None:
    if fragment is None:
        return None
    return {**fragment.to_dict(), "path": catalog.paths[fragment.side]}


def claim_dict(claim: ResolvedClaim, catalog: Catalog) -> dict[str, Any]:
    """A claim as shown: the model's text, with quotes from the catalog only."""
    return {
        "id": claim.id,
        "kind": claim.kind,
        "text": claim.text,
        "evidenceA": _quote(claim.evidence_a, catalog),
        "evidenceB": _quote(claim.evidence_b, catalog),
    }


def edit_diff(edit: PlannedEdit) -> str:
    return render_diff(edit.path, edit.before, edit.after)
