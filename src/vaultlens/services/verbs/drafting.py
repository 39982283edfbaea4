"""Drafting with a model: continue a note, transform a selection, a Dataview query, flashcards.

Each verb plans one exact write and returns it with its diff; nothing is written here (``apply``
in :mod:`vaultlens.services.verbs.changing` writes a confirmed diff, ``undo`` reverts it). Before
note text goes to a remote model the verb raises :class:`~vaultlens.errors.ConsentRequired`
unless ``consent`` (or a remembered grant; ``remember=False``: this call's ``consent`` only).
"""

from __future__ import annotations

from vaultlens.errors import translated_errors
from vaultlens.services.app import App
from vaultlens.services.drafting import continuation, draft, flashcards, transform
from vaultlens.services.drafting.dataview import query as dataview
from vaultlens.services.drafting.dataview.fields import collect
from vaultlens.services.drafting.presets import PRESETS, instruction_for
from vaultlens.services.drafting.results import (
    ContinueResult,
    DataviewResult,
    FlashcardsResult,
    TransformResult,
)

__all__ = [
    "PRESETS",
    "ContinueResult",
    "DataviewResult",
    "FlashcardsResult",
    "TransformResult",
    "write_continue",
    "write_dataview",
    "write_flashcards",
    "write_transform",
]


@translated_errors()
def write_continue(
    app: App,
    note: str,
    with_context: bool = False,
    after_line: int | None = None,
    consent: bool = False,
    remember: bool = True,
) -> ContinueResult:
    """Continue ``note`` at its end (or after line ``after_line``); ``with_context``: with passages of
    other notes found by search and re-read as Ask does (listed as the result's sources)."""
    files = app.files()
    source = draft.load(files, note)
    at = draft.insertion_point(source, after_line)  # a wrong --after is refused before anything is searched
    found = continuation.context_for(app, files, app.settings.search, source, at) if with_context else ()
    cont = continuation.prepare(source, after_line, found)
    provider = app.llm()
    try:
        done = continuation.write_on(files, provider, cont, consent, remember)
    finally:
        provider.close()
    where = "at the end" if after_line is None else f"after line {after_line}"
    planned = draft.plan(
        app.vault, done.change, f"continue {where}" + (" (with vault context)" if found else "")
    )
    return ContinueResult(source.path, after_line, done.change.text.strip("\n"), found, planned, done.usage)


@translated_errors()
def write_transform(
    app: App,
    note: str,
    first: int,
    last: int,
    preset: str | None = None,
    prompt: str | None = None,
    consent: bool = False,
    remember: bool = True,
) -> TransformResult:
    """Rewrite lines ``first``-``last`` of ``note`` with a preset or the user's ``prompt``; an answer
    that would change text outside those lines is refused (:class:`~vaultlens.errors.OutsideSelection`)."""
    instruction, title = instruction_for(preset, prompt)
    files = app.files()
    sel = transform.prepare(draft.load(files, note), first, last, instruction)
    provider = app.llm()
    try:
        done = transform.rewrite(files, provider, sel, consent, remember)
    finally:
        provider.close()
    planned = draft.plan(app.vault, done.change, f"{title}: lines {first}-{last}")
    return TransformResult(sel.source.path, first, last, instruction, done.change.text, planned, done.usage)


@translated_errors()
def write_dataview(
    app: App,
    question: str,
    insert: str | None = None,
    after_line: int | None = None,
    consent: bool = False,
    remember: bool = True,
) -> DataviewResult:
    """A Dataview query for ``question`` from the vault's real fields, checked in code
    (:class:`~vaultlens.errors.InvalidQuery` otherwise); ``insert``: planned into that note as a
    ```` ```dataview ```` block (at its end, or after ``after_line``)."""
    files = app.files()
    target = draft.load(files, insert) if insert is not None else None
    if target is not None:
        draft.insertion_point(target, after_line)  # refused before the model is asked
    fields = collect(files)
    prompt = dataview.prepare(question, fields)
    provider = app.llm()
    try:
        made = dataview.generate(files, provider, prompt, fields, consent, remember)
    finally:
        provider.close()
    planned = None
    if target is not None:
        change = dataview.placed(target, after_line, made.query)
        planned = draft.plan(app.vault, change, f"dataview query: {' '.join(question.split())[:80]}")
    return DataviewResult(question, made.query, made.explanation, planned, made.usage)


@translated_errors()
def write_flashcards(app: App, note: str, consent: bool = False, remember: bool = True) -> FlashcardsResult:
    """Spaced Repetition cards from ``note``, each citing the lines it comes from (checked), the
    questions it already has left out; planned under its ``## Flashcards`` heading."""
    files = app.files()
    source = draft.load(files, note)
    provider = app.llm()
    try:
        made = flashcards.write_cards(files, provider, source, flashcards.prepare(source), consent, remember)
    finally:
        provider.close()
    planned = None
    if made.change is not None:
        planned = draft.plan(app.vault, made.change, f"{len(made.cards)} flashcards")
    return FlashcardsResult(source.path, made.cards, made.skipped, planned, made.usage)
