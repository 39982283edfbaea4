"""Drafting with a model: continue a note, transform a selection, a Dataview query, flashcards.

Each verb plans one exact write and returns it with its diff; nothing is written here (``apply``
in :mod:`vaultlens.services.verbs.changing` writes a confirmed diff, ``undo`` reverts it). Before
note text goes to a remote model the verb raises :class:`~vaultlens.errors.ConsentRequired`
unless ``consent`` (or a remembered grant; ``remember=False``: this call's ``consent`` only).
"""

from __future__ import annotations

from vaultlens.errors import translated_errors
from vaultlens.services.app import App
from vaultlens.services.notetools import draft, transform
from vaultlens.services.notetools.presets import instruction_for
from vaultlens.services.notetools.results import TransformResult

__all__ = ["write_transform"]


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
    summary = f"{title}: lines {first}-{last}"
    planned = draft.plan(app.vault, done.change, summary)
    return TransformResult(sel.source.path, first, last, instruction, done.change.text, planned, done.usage)
