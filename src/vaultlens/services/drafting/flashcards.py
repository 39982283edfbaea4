"""Flashcards for the Spaced Repetition plugin, each traceable to the lines of the note it came from.

The model sees the note with numbered lines and answers with cards that cite a line range. Code keeps
a card only when the range is inside the note's body, outside the ``## Flashcards`` section, not blank,
and holds most words of the answer (compared by their first five letters); and only when its question
(normalised: case, punctuation and spacing ignored) is not already a card of the note or of this answer,
and neither side holds a heading (it would start a new section) nor the question a link or an embed. Kept cards go to the end of the
``## Flashcards`` section (created at the end of the note when missing, with the plugin's default
deck tag ``#flashcards`` unless the note has a deck tag): ``Question::Answer`` on one line, or a
question, a ``?`` line and the answer for text of several lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from vaultlens.chunking.source import NoteSource
from vaultlens.errors import InvalidInput
from vaultlens.llm.base import LLMProvider, Usage
from vaultlens.services.context import VaultFiles
from vaultlens.services.drafting.draft import (
    Prompt,
    Splice,
    ask_json,
    build_prompt,
    insert_block,
    numbered,
    object_schema,
)
from vaultlens.services.serial import AsDict

__all__ = ["Card", "Drafted", "Skipped", "existing_questions", "prepare", "section_span", "write_cards"]

HEADING = "Flashcards"
DECK_TAG = "flashcards"
MAX_CARDS = 20
MAX_CITED_LINES = 30
MAX_NOTE_CHARS = 40_000  # a longer note is refused rather than cut: every line must keep its number
SCHEMA = object_schema(
    cards={
        "type": "array",
        "maxItems": MAX_CARDS,
        "items": object_schema(
            question={"type": "string", "minLength": 1},
            answer={"type": "string", "minLength": 1},
            first_line={"type": "integer"},
            last_line={"type": "integer"},
        ),
    }
)
RULES = f"""- Write question-and-answer flashcards about what the note says (at most {MAX_CARDS}), in \
its language. Each card cites the numbered lines it comes from as first_line and last_line; the \
answer must be stated in those lines. No outside knowledge.
- Skip what the note's "## {HEADING}" section already asks."""
_SINGLE = re.compile(r"^(.+?):{2,3}(.+)$")  # Question::Answer (and Question:::Answer, both ways)
_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)", re.MULTILINE)  # would start a section of the note
_LINK = re.compile(r"\[\[|\[[^\]\n]*\]\([^)\n]*\)")  # [[link]], ![[embed]], [text](url), ![alt](img)


@dataclass(frozen=True, slots=True)
class Card(AsDict):
    question: str
    answer: str
    first_line: int  # 1-based, inclusive: the note lines the card comes from
    last_line: int

    @property
    def multiline(self) -> bool:
        return "\n" in self.question or "\n" in self.answer

    def markdown(self) -> str:
        if self.multiline:
            return f"{self.question}\n?\n{self.answer}"
        return f"{self.question}::{self.answer}"


@dataclass(frozen=True, slots=True)
class Skipped(AsDict):
    """A card of the model's answer that was not added, and why."""

    question: str
    reason: str


@dataclass(frozen=True, slots=True)
class Drafted:
    cards: tuple[Card, ...]
    skipped: tuple[Skipped, ...]
    change: Splice | None  # None: no new card
    usage: Usage | None


def normalised(question: str) -> str:
    """A question as compared for duplicates: case, punctuation and spacing ignored."""
    return " ".join(_WORD.findall(question.casefold()))


def section_span(source: NoteSource) -> tuple[int, int] | None:
    """Lines ``[first, end)`` (0-based) of the ``## Flashcards`` section's body, if the note has one."""
    headings = source.note.headings
    total = source.text.count("\n") + 1
    for i, h in enumerate(headings):
        if h.level == 2 and h.text.strip().casefold() == HEADING.casefold():
            end = next((n.line for n in headings[i + 1 :] if n.level <= 2), total)
            return h.line + 1, end
    return None


def existing_questions(source: NoteSource) -> set[str]:
    """Normalised questions of the note's cards: ``Q::A`` lines anywhere, ``?`` cards in the section."""
    lines = source.text.split("\n")
    found = {normalised(m[1]) for line in lines if (m := _SINGLE.match(line.strip()))}
    span = section_span(source)
    if span is not None:
        block: list[str] = []
        for line in lines[span[0] : span[1]]:
            if line.strip() in ("?", "??"):
                found.add(normalised("\n".join(block)))
            block = [] if not line.strip() else [*block, line]
    return found - {""}


def prepare(source: NoteSource) -> Prompt:
    """The note with numbered lines as data, and the task; :class:`InvalidInput` for a note over
    :data:`MAX_NOTE_CHARS` characters."""
    if len(source.text) > MAX_NOTE_CHARS:
        raise InvalidInput(
            f"{source.path} has {len(source.text):,} characters; flashcards read at most {MAX_NOTE_CHARS:,}.",
            hint="Split the note first (vaultlens write split), or make cards from a shorter note.",
        )
    parts = [(f"The note {source.path}, each line prefixed with its number:", numbered(source.text))]
    task = (
        'Write flashcards. Return {"cards": [{"question": "...", "answer": "...", "first_line": N, '
        '"last_line": M}]}.'
    )
    return build_prompt(RULES, parts, task)


def _stems(text: str) -> set[str]:
    """Words of 3+ letters (and numbers) cut to 5 characters: an answer in other inflections still matches."""
    return {w[:5] for w in _WORD.findall(text.casefold()) if len(w) >= 3 or w.isdigit()}


def _problem(source: NoteSource, card: Card, seen: set[str]) -> str | None:
    lines = source.text.split("\n")
    body_line = source.note.body_start_line
    span = section_span(source)
    first, last = card.first_line, card.last_line
    if not (body_line < first <= last <= len(lines)) or last - first >= MAX_CITED_LINES:
        return f"cites lines {first}-{last}, which are not a passage of the note's body"
    if span is not None and span[0] < last and first <= span[1]:
        return f"cites lines {first}-{last} of the {HEADING} section itself"
    cited = "\n".join(lines[first - 1 : last]).casefold()
    if not cited.strip():
        return f"cites lines {first}-{last}, which are blank"
    words = _stems(card.answer)
    if words and 2 * len(words & _stems(cited)) <= len(words):
        return f"its answer is not in lines {first}-{last}"
    key = normalised(card.question)
    if key in seen:
        return "the note already has this question"
    if "::" in card.question or (not card.multiline and "::" in card.answer):
        return "it contains '::', which would break the card format"
    if _HEADING.search(card.question) or _HEADING.search(card.answer):
        return "it contains a Markdown heading, which would start a new section of the note"
    if _LINK.search(card.question):
        return "its question contains a link or an embed, which a question card should not carry"
    return None


def check_cards(source: NoteSource, raw: list[dict[str, Any]]) -> tuple[list[Card], list[Skipped]]:
    """The model's cards split into the ones to add and the ones refused (with the reason)."""
    seen = existing_questions(source)
    kept: list[Card] = []
    skipped: list[Skipped] = []
    for item in raw:
        card = Card(
            str(item["question"]).strip(),
            str(item["answer"]).strip(),
            int(item["first_line"]),
            int(item["last_line"]),
        )
        why = _problem(source, card, seen)
        if why is None:
            kept.append(card)
            seen.add(normalised(card.question))
        else:
            skipped.append(Skipped(card.question, why))
    return kept, skipped


def placed(source: NoteSource, cards: list[Card]) -> Splice:
    """The cards at the end of the Flashcards section, or in a new one at the end of the note."""
    singles = "\n".join(c.markdown() for c in cards if not c.multiline)
    block = "\n\n".join([x for x in (singles,) if x] + [c.markdown() for c in cards if c.multiline])
    span = section_span(source)
    if span is None:
        # the plugin reviews only notes with a deck tag (#flashcards by default): add it with the section
        tagged = any(t.casefold().lstrip("#").startswith(DECK_TAG) for t in source.note.tags)
        deck = "" if tagged else f"#{DECK_TAG}\n\n"
        return insert_block(source, len(source.text), f"## {HEADING}\n\n{deck}{block}")
    end_line = span[1]
    lines = source.text.split("\n")
    at = len("\n".join(lines[:end_line])) + (1 if end_line < len(lines) else 0)
    return insert_block(source, at, block)


def write_cards(
    files: VaultFiles,
    provider: LLMProvider,
    source: NoteSource,
    prompt: Prompt,
    consent: bool,
    remember: bool = True,
) -> Drafted:
    """Send the prompt (after consent), check every card, and place the new ones."""
    what = f"the text of {source.path} ({len(source.text):,} characters)"
    answer, usage = ask_json(files, provider, prompt, SCHEMA, what, consent, remember)
    kept, skipped = check_cards(source, list(answer["cards"]))
    return Drafted(tuple(kept), tuple(skipped), placed(source, kept) if kept else None, usage)
