"""One review of a candidate pair: prepare (catalog + exact prompt), send, validate, plan.

:func:`prepare` calls no model: it returns the exact messages and the destination, which the
interface shows and the user accepts. :func:`send` enforces consent for a remote model, sends
those messages unchanged (JSON-schema output where the provider supports it, else the schema in
the text) and validates the answer against the catalog and the notes' current bytes.
:func:`resolve_options` checks a user's fragment choices against the catalog before anything is
sent (a wrong one is refused then, not after the model has answered). :func:`propose` turns a valid recommendation into an exact edit; recording it for ``apply`` is
:func:`vaultlens.services.changing.writes.plan_write`'s job.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from typing import Any

from vaultlens.errors import InvalidInput, PlanRefused, ProviderUnreachable
from vaultlens.llm.base import Completion, LLMProvider, Message, llm_destination, prompt_text
from vaultlens.safewrite import render_diff
from vaultlens.services.changing.review.catalog import Catalog, Fragment, Side, build_catalog, current_hashes
from vaultlens.services.changing.review.contract import (
    ResolvedClaim,
    Validation,
    response_schema,
    validate_response,
)
from vaultlens.services.changing.review.planner import (
    INSERTABLE_AFTER,
    PlannedEdit,
    plan_add_link,
    plan_merge,
)
from vaultlens.services.changing.review.prompt import build_prompt
from vaultlens.services.consent import require_llm_consent
from vaultlens.services.context import VaultFiles
from vaultlens.vault.hidden import describe, refused_in, visible
from vaultlens.vault.model import block_phrase

__all__ = ["PlanOptions", "Prepared", "Reviewed", "prepare", "propose", "resolve_options", "send"]

_SHORT_ID = re.compile(r"([AB]):(\d+)")


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
        return prompt_text(self.messages)


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
    after: str | None = None  # the fragment id to insert after (default: the last block in the catalog)
    fragment: str | None = None  # consider_merge: the block to copy (default: the recommendation's evidence)
    label: str = "See also"


def prepare(files: VaultFiles, path_a: str, path_b: str, provider: LLMProvider) -> Prepared:
    catalog = build_catalog(files.root, path_a, path_b, files.chunker, max_bytes=files.max_bytes)
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


def send(
    files: VaultFiles, prepared: Prepared, provider: LLMProvider, consent: bool = False, remember: bool = True
) -> Reviewed:
    """Send the prepared messages (after consent for a remote model) and validate the answer
    (``remember``: see :func:`~vaultlens.services.consent.require_llm_consent`)."""
    catalog = prepared.catalog
    a, b = catalog.paths["A"], catalog.paths["B"]
    size = sum(len(m.content) for m in prepared.messages)
    require_llm_consent(
        files,
        provider,
        consent,
        what=f"the text of {a} and {b} (up to {catalog.max_chars:,} characters of each) "
        f"in a review prompt of {size:,} characters",
        remember=remember,
    )
    started = time.monotonic()
    try:
        completion = provider.chat(
            list(prepared.messages), json_schema=response_schema() if prepared.json_schema else None
        )
    except ProviderUnreachable as exc:  # the provider's own hint is about Ask
        raise ProviderUnreachable(exc.message, hint=_unreachable_hint(prepared)) from None
    seconds = time.monotonic() - started
    validation = validate_response(
        completion.text, prepared.catalog, current_hashes(files.root, prepared.catalog)
    )
    return Reviewed(prepared, completion, validation, seconds)


def _unreachable_hint(prepared: Prepared) -> str:
    start = "start it with `ollama serve`" if prepared.provider == "ollama" else "start that server"
    return (
        f"Nothing was reviewed: {start}, or point review at a model that runs with "
        "--set llm.provider=NAME --set llm.endpoint=URL (or the [llm] table of config.toml); "
        "`vaultlens providers` shows the current choice."
    )


def _resolve(catalog: Catalog, value: str, option: str) -> Fragment:
    found = catalog.get(value.strip())
    short = _SHORT_ID.fullmatch(value.strip())
    if found is None and short:
        found = catalog.get(f"{catalog.nonce}:{short[1]}:{int(short[2])}")
    if found is None:
        sides = (("A", catalog.side("A")), ("B", catalog.side("B")))
        spans = [f"{s}:0" + (f"-{s}:{len(own) - 1}" if len(own) > 1 else "") for s, own in sides if own]
        raise InvalidInput(
            f"{option} {value!r} names no block of this review (its blocks: {', '.join(spans) or 'none'}).",
            hint="Give a block as SIDE:NUMBER from the fragment catalog in the prompt, e.g. A:2; "
            "leave out the nonce in front of it, which is new for every review.",
        )
    return found


def resolve_options(catalog: Catalog, options: PlanOptions) -> PlanOptions:
    """``options`` with ``after`` and ``fragment`` as this catalog's full fragment ids (``A:2`` is
    accepted for ``<nonce>:A:2``); :class:`InvalidInput` when one names no block of it, or a block
    nothing can be inserted after, or link text holding a line break or a control character. Call it
    before sending, so a mistake costs no model call."""
    hidden = refused_in(options.label)
    if hidden is not None or "\n" in options.label:
        what = f"the control character {describe(hidden)}" if hidden else "a line break"
        raise InvalidInput(
            f"The link text {visible(options.label)!r} holds {what}; nothing was planned.",
            hint="Give link text of one line of visible characters.",
        )
    after = _resolve(catalog, options.after, "--after") if options.after else None
    fragment = _resolve(catalog, options.fragment, "--fragment") if options.fragment else None
    if after is not None and after.kind not in INSERTABLE_AFTER:
        raise InvalidInput(
            f"--after {options.after} is {block_phrase(after.kind)} (lines {after.start_line}-{after.end_line} "
            f"of {catalog.paths[after.side]}); nothing is inserted after one.",
            hint="Choose a paragraph, list, quote or heading.",
        )
    if after is not None and fragment is not None and after.side == fragment.side:
        raise InvalidInput(
            f"--after {options.after} and --fragment {options.fragment} are blocks of the same note; "
            "the copied block goes into the other note.",
            hint=f"Give --after a block of {catalog.paths['B' if fragment.side == 'A' else 'A']}.",
        )
    return replace(options, after=after.id if after else None, fragment=fragment.id if fragment else None)


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


def propose(files: VaultFiles, reviewed: Reviewed, options: PlanOptions) -> PlannedEdit | None:
    """The exact edit for a valid recommendation; None for keep_separate / manual_review."""
    review = reviewed.validation.review
    if review is None or not reviewed.validation.ok:
        return None
    catalog = reviewed.prepared.catalog
    action = review.recommendation.action
    if action == "add_link":
        return plan_add_link(
            files.root, catalog, options.link_from, options.after, options.label, files.max_bytes
        )
    if action == "consider_merge":
        return plan_merge(files.root, catalog, _merge_fragment(reviewed, options), options.after)
    return None


def _quote(fragment: Fragment | None, catalog: Catalog) -> dict[str, Any] | None:
    if fragment is None:
        return None
    return {**fragment.as_dict(), "path": catalog.paths[fragment.side]}


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
