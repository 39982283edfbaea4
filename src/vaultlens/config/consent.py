"""Which remote destinations the user agreed to send note text to, remembered per user.

Kept under ``$VAULTLENS_HOME`` (never in the vault), keyed by provider, model and endpoint, so
changing any of them asks again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from vaultlens.config.paths import home


def _file() -> Path:
    return home() / "consent.json"


def _load() -> list[str]:
    try:
        data = json.loads(_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(x) for x in data] if isinstance(data, list) else []


def granted(destination: str) -> bool:
    return destination in _load()


def grant(destination: str) -> None:
    """Remember a yes, written atomically so a crash never leaves a half-written file."""
    items = _load()
    if destination in items:
        return
    target = _file()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps([*items, destination], indent=2), encoding="utf-8")
    os.replace(tmp, target)
