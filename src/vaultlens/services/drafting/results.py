"""What each note tool returns: the model's part, what code checked, and the planned write (its diff)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultlens.llm.base import Usage
from vaultlens.services.asking.ask import Source
from vaultlens.services.changing.writes import Planned
from vaultlens.services.drafting.flashcards import Card, Skipped

__all__ = ["ContinueResult", "DataviewResult", "FlashcardsResult", "TransformResult"]


def _usage(usage: Usage | None) -> dict[str, Any] | None:
    return None if usage is None else usage.as_dict()


@dataclass(frozen=True, slots=True)
class TransformResult:
    """Lines ``first``-``last`` of ``path`` rewritten: the new text and the planned write."""

    path: str
    first: int
    last: int
    instruction: str
    replacement: str
    plan: Planned
    usage: Usage | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "lines": [self.first, self.last],
            "instruction": self.instruction,
            "replacement": self.replacement,
            "plan": self.plan.as_dict(),
            "usage": _usage(self.usage),
        }


@dataclass(frozen=True, slots=True)
class ContinueResult:
    """New text for ``path`` (at its end, or after ``after_line``), the passages it saw, the plan."""

    path: str
    after_line: int | None
    text: str
    sources: tuple[Source, ...]
    plan: Planned
    usage: Usage | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "after_line": self.after_line,
            "text": self.text,
            "sources": [s.as_dict() for s in self.sources],
            "plan": self.plan.as_dict(),
            "usage": _usage(self.usage),
        }


@dataclass(frozen=True, slots=True)
class DataviewResult:
    """A checked Dataview query for ``question``; ``plan`` when it was placed into a note."""

    question: str
    query: str
    explanation: str
    plan: Planned | None = None
    usage: Usage | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "query": self.query,
            "explanation": self.explanation,
            "plan": None if self.plan is None else self.plan.as_dict(),
            "usage": _usage(self.usage),
        }


@dataclass(frozen=True, slots=True)
class FlashcardsResult:
    """The new cards of ``path`` (each with the lines it came from), the ones refused, the plan
    (None when no card is new)."""

    path: str
    cards: tuple[Card, ...]
    skipped: tuple[Skipped, ...]
    plan: Planned | None = None
    usage: Usage | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "cards": [c.as_dict() for c in self.cards],
            "skipped": [s.as_dict() for s in self.skipped],
            "plan": None if self.plan is None else self.plan.as_dict(),
            "usage": _usage(self.usage),
        }
