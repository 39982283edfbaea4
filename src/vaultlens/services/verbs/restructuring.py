"""Restructuring notes with a model: split a note into atomic notes; run a preset over many notes.

Each verb plans exact writes and returns them with their diffs; nothing is written here (``apply``
in :mod:`vaultlens.services.verbs.changing` writes a confirmed diff or group, ``undo`` reverts
it). Before note text goes to a remote model the verb raises
:class:`~vaultlens.errors.ConsentRequired` unless ``consent`` (or a remembered grant;
``remember=False``: this call's ``consent`` only).
"""

from __future__ import annotations

from typing import Literal

from vaultlens.errors import translated_errors
from vaultlens.services import writes
from vaultlens.services.app import App
from vaultlens.services.notetools import draft, split
from vaultlens.services.notetools.split import SplitResult

__all__ = ["write_split"]

SplitMode = Literal["keep-original", "index"]


@translated_errors()
def write_split(
    app: App, note: str, mode: SplitMode = "keep-original", consent: bool = False, remember: bool = True
) -> SplitResult:
    """Plan splitting ``note`` into atomic notes as one operation group: the model names titles,
    line ranges and links; code builds the notes from the note's exact lines and refuses a plan
    that would lose or double a line (``mode``: the original becomes an index of links, or stays)."""
    files = app.files()
    source = draft.load(files, note)
    prompt = split.prepare(source)
    names = [f.path.rpartition("/")[2].removesuffix(".md") for f in files.scan().notes]
    provider = app.llm()
    try:
        what = f"{source.path} with numbered lines"
        answer, usage = draft.ask_json(files, provider, prompt, split.SCHEMA, what, consent, remember)
    finally:
        provider.close()
    proposed = split.propose(source, answer, names, index=mode == "index")
    count = len(proposed.split.parts)
    how = "the original becomes their index" if mode == "index" else "the original stays as it is"
    planned = writes.plan_group(
        app.vault, proposed.changes, f"split {source.path} into {count} notes ({how})"
    )
    return SplitResult(source.path, mode, proposed.split, planned, usage)
