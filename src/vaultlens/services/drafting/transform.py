"""Rewrite lines A-B of a note (a preset or the user's prompt); the answer may replace only that selection.

The model sees the selection and a few lines around it (marked as context) and returns only the new
text of the selection. Code then refuses (:class:`~vaultlens.errors.OutsideSelection`) an answer that
echoes the lines around the selection, and checks that the planned bytes equal the note's bytes
everywhere outside the selection's byte range, so no rewrite can touch the rest of the note.
"""

from __future__ import annotations

from dataclasses import dataclass

from vaultlens.chunking.source import NoteSource
from vaultlens.errors import InvalidInput, InvalidModelOutput, OutsideSelection
from vaultlens.llm.base import LLMProvider, Usage
from vaultlens.services.context import VaultFiles
from vaultlens.services.drafting.draft import (
    Prompt,
    Splice,
    ask_json,
    build_prompt,
    line_span,
    object_schema,
    splice,
)

__all__ = ["Selection", "Transformed", "check_inside", "prepare", "rewrite", "transformed"]

CONTEXT_LINES = 3  # lines shown on each side of the selection, never to be returned
MAX_SELECTION_CHARS = 20_000
SCHEMA = object_schema(replacement={"type": "string"})
RULES = """- The task names a selection of the note. Put in "replacement" only the new text of the \
selection: never the context lines around it, never the whole note, no code fence around it, no \
commentary."""


@dataclass(frozen=True, slots=True)
class Selection:
    """Lines ``first``..``last`` of a note as read now, and the prompt that asks for their rewrite."""

    source: NoteSource
    first: int
    last: int
    start: int  # text offsets of the selection (the last line's break included)
    end: int
    prompt: Prompt


@dataclass(frozen=True, slots=True)
class Transformed:
    change: Splice
    usage: Usage | None


def prepare(source: NoteSource, first: int, last: int, instruction: str) -> Selection:
    """The selection (refused when outside the note) and its prompt: the selection with up to
    :data:`CONTEXT_LINES` lines on each side, each part labelled, as data."""
    start, end = line_span(source, first, last)
    if end - start > MAX_SELECTION_CHARS:
        raise InvalidInput(
            f"Lines {first}-{last} of {source.path} hold {end - start:,} characters; a selection may hold "
            f"at most {MAX_SELECTION_CHARS:,}.",
            hint="Transform a smaller range of lines at a time.",
        )
    lines = source.text.split("\n")
    before = "\n".join(lines[max(0, first - 1 - CONTEXT_LINES) : first - 1])
    after = "\n".join(lines[last : last + CONTEXT_LINES])
    parts = [
        (f"Context before the selection (from {source.path}; do not return it):", before),
        (f"The selection: lines {first}-{last} of {source.path}:", source.text[start:end].rstrip("\n")),
        ("Context after the selection (do not return it):", after),
    ]
    task = (
        f"{instruction}\nApply this to the selection only and return its new text as "
        '{"replacement": "..."}.'
    )
    return Selection(source, first, last, start, end, build_prompt(RULES, parts, task))


ECHO_CHARS = 8  # a line this long (stripped) from outside the selection, repeated, is an echo anywhere


def _echo(sel: Selection, change: Splice) -> tuple[int, str] | None:
    """The first line outside the selection (number, text) that the answer repeats and the selection
    does not hold: the nearest non-blank line on either side as the answer's first or last line, or
    any line of at least :data:`ECHO_CHARS` characters anywhere in it."""
    lines = [x.strip() for x in sel.source.text.split("\n")]
    selected = set(lines[sel.first - 1 : sel.last])
    outside = [
        (n, x) for n, x in enumerate(lines, 1) if x and x not in selected and not sel.first <= n <= sel.last
    ]
    answer = [x.strip() for x in change.text.split("\n") if x.strip()]
    if not answer:
        return None
    above = next(((n, x) for n, x in reversed(outside) if n < sel.first), None)
    below = next(((n, x) for n, x in outside if n > sel.last), None)
    ends = [w for w, at in ((above, answer[0]), (below, answer[-1])) if w is not None and w[1] == at]
    long = {x: (n, x) for n, x in reversed(outside) if len(x) >= ECHO_CHARS}
    return ends[0] if ends else next((long[x] for x in answer if x in long), None)


def check_inside(sel: Selection, change: Splice) -> None:
    """:class:`OutsideSelection` when the answer echoes lines from around the selection or the new
    bytes differ from the note's anywhere outside the selection's byte range."""
    echo = _echo(sel, change)
    if echo is not None:
        n, line = echo
        side = "above" if n < sel.first else "below"
        raise OutsideSelection(
            f"The model's answer repeats line {n} ({line[:80]!r}), which is {side} the selection "
            f"(lines {sel.first}-{sel.last} of {sel.source.path}); nothing was planned.",
            hint="Run it again, or choose a larger selection with --lines if that line should change too.",
        )
    raw, new = sel.source.raw, change.after
    b_start, b_end = sel.source.byte_span(sel.start, sel.end)
    tail = len(raw) - b_end
    if new[:b_start] != raw[:b_start] or new[len(new) - tail :] != raw[b_end:] or len(new) < b_start + tail:
        raise OutsideSelection(
            f"The planned change of {sel.source.path} would alter bytes outside lines {sel.first}-{sel.last}; "
            "nothing was planned."
        )


def transformed(sel: Selection, replacement: str) -> Splice:
    """The model's replacement as a change of the selection only (see :func:`check_inside`); an empty
    one is refused. The selection's final line break is kept whatever the model did with trailing
    newlines."""
    text = replacement.replace("\r\n", "\n").strip("\n")
    if not text.strip():  # a rewrite, never a deletion: an empty answer is a failed one
        raise InvalidModelOutput(
            f"The model returned an empty replacement for lines {sel.first}-{sel.last} of {sel.source.path}, "
            "which would delete them; nothing was planned.",
            hint="Run it again, or delete the lines yourself if that is what you want.",
        )
    if sel.source.text[sel.start : sel.end].endswith("\n"):
        text += "\n"
    change = splice(sel.source, sel.start, sel.end, text)
    check_inside(sel, change)
    return change


def rewrite(
    files: VaultFiles, provider: LLMProvider, sel: Selection, consent: bool, remember: bool = True
) -> Transformed:
    """Send the selection's prompt (after consent) and turn the answer into a checked change."""
    what = f"lines {sel.first}-{sel.last} of {sel.source.path} and up to {CONTEXT_LINES} lines on each side"
    answer, usage = ask_json(files, provider, sel.prompt, SCHEMA, what, consent, remember)
    return Transformed(transformed(sel, str(answer["replacement"])), usage)
