"""Where vaultlens keeps its own files: never inside the vault, so sync does not carry them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import platformdirs

from vaultlens.fsutil import sha256_hex


def home() -> Path:
    """Per-user data dir for indexes and state; ``VAULTLENS_HOME`` overrides it."""
    env = os.environ.get("VAULTLENS_HOME")
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir("vaultlens"))


def user_config_file() -> Path:
    env = os.environ.get("VAULTLENS_CONFIG")
    if env:
        return Path(env).expanduser()
    if os.environ.get("VAULTLENS_HOME"):
        return home() / "config.toml"
    return Path(platformdirs.user_config_dir("vaultlens")) / "config.toml"


def index_dir(vault: Path) -> Path:
    """The vault's index root: one per resolved vault path, a readable slug plus a hash that keeps
    them apart. What lives inside it is index/lifecycle.py's business."""
    resolved = str(vault.resolve())
    digest = sha256_hex(resolved)[:12]
    slug = re.sub(r"[^\w.-]+", "-", vault.resolve().name).strip("-")[:40] or "vault"
    return home() / "indexes" / f"{slug}-{digest}"
