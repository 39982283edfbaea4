"""Per-note results of the deep audit, kept under VAULTLENS_HOME so a rerun pays only for new and changed notes.

One small JSON file per note result, named by a hash of the note's content, the model and the prompt version:
a result is saved the moment it arrives (Ctrl-C loses at most the requests in flight), a changed note, model or
prompt simply misses, and no file is ever rewritten by two runs at once. JSON, not pickle: loading runs no code.
An unreadable entry is a miss (the note is analysed again); failed notes are never stored, so they are retried.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from pathlib import Path
from typing import Any

from vaultlens.fsutil import atomic_write

__all__ = ["cache_key", "load", "save"]


def cache_key(content_hash: str, model: str, prompt_version: int) -> str:
    return hashlib.sha256(f"{prompt_version}\0{model}\0{content_hash}".encode()).hexdigest()


def load(folder: Path, key: str) -> dict[str, Any] | None:
    """The stored result for ``key``, or None (no entry, or one that cannot be read)."""
    try:
        data = json.loads((folder / f"{key}.json").read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def save(folder: Path, key: str, result: dict[str, Any]) -> None:
    """Store ``result`` (atomically, not fsynced: a result lost to a power cut is only asked for again)."""
    with contextlib.suppress(OSError):  # a read-only data folder: the next run asks again
        atomic_write(folder / f"{key}.json", json.dumps(result, ensure_ascii=False), durable=False)
