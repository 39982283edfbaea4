"""The write token that pairs the Obsidian plugin with a vault's server (`vaultlens obsidian pair`).

The page's write guard (``web/csrf.py``) rests on a browser: a token only the page can read and an
``Origin`` only the page sends. The plugin is not a page, so it proves itself with a token the user
pasted once from ``vaultlens obsidian pair``. Only the token's SHA-256 is kept, in the vault's index
root under VAULTLENS_HOME (never in the vault, which sync tools copy); pairing again replaces it,
``--revoke`` deletes it, and the server reads it on every write, so either takes effect at once.
"""

from __future__ import annotations

import hmac
import json
import secrets
from pathlib import Path

from vaultlens.config.paths import ensure_home, index_dir
from vaultlens.errors import translated_errors
from vaultlens.fsutil import atomic_write, sha256_hex

FILE_NAME = "obsidian-pair.json"


def pair_file(vault: Path) -> Path:
    return index_dir(vault) / FILE_NAME


def issue(vault: Path) -> str:
    """A new write token for ``vault`` (shown once; an earlier one stops working)."""
    token = secrets.token_urlsafe(32)
    ensure_home()
    target = pair_file(vault)
    with translated_errors("keep the write token", target):
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, json.dumps({"sha256": sha256_hex(token)}), mode=0o600)
    return token


def revoke(vault: Path) -> bool:
    """Forget the vault's write token; False when none was issued."""
    target = pair_file(vault)
    with translated_errors("revoke the write token", target):
        if not target.exists():
            return False
        target.unlink()
    return True


def accepts(vault: Path, given: str) -> bool:
    """True when ``given`` is the vault's current write token (compared in constant time)."""
    try:
        stored = json.loads(pair_file(vault).read_bytes())["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return isinstance(stored, str) and hmac.compare_digest(sha256_hex(given), stored)
