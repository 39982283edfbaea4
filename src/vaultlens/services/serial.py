"""The one JSON form of a result: ``as_dict()``, shared by the CLI's ``--json``, the HTTP API and MCP."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any


class AsDict:
    """For result dataclasses whose JSON form is their fields, recursively (tuples become lists)."""

    __slots__ = ()

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return data
