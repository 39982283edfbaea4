"""What each note tool returns: the model's part, what code checked, and the planned write (its diff)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultlens.llm.base import Usage
from vaultlens.services.writes import Planned

__all__ = ["TransformResult"]


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
