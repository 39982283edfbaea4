"""Changing notes: review a pair (one, or a batch with its report), then plan, apply, undo, history.

No verb here writes a note without a confirmation: a review's valid recommendation becomes a
*planned* operation; :func:`apply` writes it only when called with the proposal the user saw
(:class:`~vaultlens.errors.WriteUnconfirmed` carries it otherwise). A review first proposes its
exact prompt (:class:`~vaultlens.errors.ConsentRequired`) and sends it only when called again
with that proposal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vaultlens.errors import ConfigError, InvalidInput, PlanRefused, Proposal, translated_errors
from vaultlens.safewrite import Entry, Group, Recovered
from vaultlens.services.app import App
from vaultlens.services.changing import writes
from vaultlens.services.changing.review import batch, outcome
from vaultlens.services.changing.review.batch import BatchReport
from vaultlens.services.changing.review.catalog import Fragment
from vaultlens.services.changing.review.outcome import ReviewResult
from vaultlens.services.changing.review.session import (
    PlanOptions,
    Prepared,
    Reviewed,
    prepare,
    propose,
    resolve_options,
    send,
)
from vaultlens.services.changing.writes import SHOW_BEFORE, Applied, Befores, Planned

__all__ = [
    "SHOW_BEFORE",
    "Applied",
    "BatchReport",
    "Befores",
    "Entry",
    "Fragment",
    "Group",
    "PlanOptions",
    "Planned",
    "ReviewResult",
    "apply",
    "discard",
    "history",
    "plan_undo",
    "prompt_sources",
    "recover",
    "replan",
    "review",
    "review_batch",
    "show_before",
    "to_confirm",
]


@translated_errors()
def review(
    app: App,
    a: str,
    b: str,
    options: PlanOptions | None = None,
    confirmed: Proposal | None = None,
    remember: bool = True,
) -> ReviewResult:
    """Ask the configured model how notes ``a`` and ``b`` relate; a valid recommendation becomes a
    planned edit (``options``: where and how). Without ``confirmed``: :class:`ConsentRequired` with
    the exact prompt; with it, that prompt is sent. ``remember=False`` (a server's request): the
    grant covers this call only and is not stored for a remote model."""
    provider = app.llm()
    try:
        files = app.files()
        shown = batch.accepted(confirmed, files.root, a, b)  # the prompt the user saw for this pair, if any
        prepared = shown or prepare(files, a, b, provider)
        chosen = resolve_options(prepared.catalog, options or PlanOptions())  # before anything is sent
        if shown is None:  # no grant, or one for another prompt: show this one first
            raise batch.proposal_for(prepared)
        return _planned(app, send(files, prepared, provider, consent=True, remember=remember), chosen)
    finally:
        provider.close()


def prompt_sources(proposal: Proposal) -> list[dict[str, Any]]:
    """A review prompt's proposal summed up: how many characters of which note it carries (``[]`` for
    any other proposal)."""
    prepared = proposal.payload
    return outcome.prompt_sources(prepared) if isinstance(prepared, Prepared) else []


def _planned(app: App, reviewed: Reviewed, chosen: PlanOptions) -> ReviewResult:
    try:
        edit = propose(app.files(), reviewed, chosen)
    except PlanRefused as exc:
        return ReviewResult(reviewed, None, exc.message)
    if edit is None:
        return ReviewResult(reviewed)
    planned = writes.plan_write(app.vault, edit.path, edit.after, edit.summary, based_on=edit.before)
    return ReviewResult(reviewed, planned)


@translated_errors()
def replan(app: App, result: ReviewResult, options: PlanOptions) -> ReviewResult:
    """The same review's recommendation planned again with other ``options`` (where the link goes,
    from which note, its text): no model call, nothing sent; a new planned operation to apply."""
    chosen = resolve_options(result.reviewed.prepared.catalog, options)
    return _planned(app, result.reviewed, chosen)


@translated_errors()
def review_batch(app: App, pairs_file: Path, report: Path, confirmed: Proposal | None = None) -> BatchReport:
    """Review every pair of a JSONL file into a Markdown report outside the vault; plans no edit.
    Without ``confirmed``: :class:`ConsentRequired` with the first pair's exact prompt."""
    target = batch.report_target(report, app.vault)  # before anything is read or sent
    pairs = batch.read_pairs(pairs_file)
    provider = app.llm()
    try:
        return batch.run_batch(app.files(), provider, pairs, target, confirmed)
    finally:
        provider.close()


def check_review_arguments(
    a: str | None, b: str | None, pairs: Path | None, report: Path | None, options: PlanOptions
) -> None:
    """Refuse combinations that would silently ignore part of what the user asked for."""
    if pairs is not None and (a or b):
        given = " ".join(repr(x) for x in (a, b) if x)
        raise InvalidInput(
            f"Give either two notes or --batch, not both (got {given} and --batch {pairs}).",
            hint="Review one pair with `vaultlens review A B`, or put every pair into the --batch file.",
        )
    if pairs is None and report is not None:
        raise InvalidInput(
            "--report is for --batch; a single review prints its result.",
            hint="Use `vaultlens review --batch pairs.jsonl --report report.md`, or leave out --report.",
        )
    if pairs is not None and (options.after or options.fragment):
        raise InvalidInput(
            "--after and --fragment choose the edit of one review; --batch plans no edit.",
            hint="Review the pair on its own (vaultlens review A B) to choose where an edit goes.",
        )
    if pairs is not None and report is None:
        raise ConfigError("--batch needs --report FILE (the batch never changes a note; it writes a report).")
    if pairs is None and not (a and b):
        raise ConfigError("Give two notes (vaultlens review A B) or --batch pairs.jsonl --report report.md.")


def to_confirm(app: App, op_id: str) -> Planned:
    """A planned operation and its exact diff, refused when it can no longer apply."""
    return writes.to_confirm(app.vault, op_id)


def apply(
    app: App, op_id: str, confirmed: Proposal | str | None = None, allow_open: bool = False
) -> writes.Applied:
    """Write planned operation ``op_id``; without ``confirmed`` (the proposal shown, or its token):
    :class:`~vaultlens.errors.WriteUnconfirmed` with the exact diff."""
    return writes.applied(app.vault, writes.apply(app.vault, op_id, confirmed, allow_open))


def plan_undo(app: App, op_id: str) -> Planned:
    """Plan putting an applied operation's original bytes back (refused if the note changed since)."""
    return writes.plan_undo(app.vault, op_id)


def discard(app: App, op_id: str) -> Entry | Group:
    """Drop a planned operation (a re-plan left behind, a change the user does not want): it is
    marked ``discarded`` in the journal and can no longer be applied; no note is touched."""
    return writes.discard(app.vault, op_id)


def history(app: App) -> list[Entry | Group]:
    """Every change vaultlens planned or made in this vault, oldest first (an operation group as one item)."""
    return writes.history(app.vault)


def unfinished(app: App) -> list[tuple[str, str]]:
    """(operation, what is unfinished and the command that settles it) for each write a crash left."""
    return writes.unfinished(app.vault)


def show_before(app: App, op_id: str, output: Path | None = None) -> writes.Befores:
    """What the notes held before operation (or group) ``op_id`` wrote them, byte for byte from the
    journal: the way back to any text a change replaced, even where undo is refused. ``output``: a
    file outside the vault to save the one earlier text to."""
    return writes.befores(app.vault, op_id, output)


def recover(app: App) -> list[Recovered]:
    """Settle writes a crash interrupted (no note is written); what was found, per operation."""
    return writes.recover(app.vault)
