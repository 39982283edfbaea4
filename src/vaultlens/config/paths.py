"""Where vaultlens keeps its own files: never inside the vault, so sync does not carry them."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import platformdirs


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
    them apart. The live store is :func:`live_index_dir` of it."""
    resolved = str(vault.resolve())
    digest = hashlib.sha256(resolved.encode("utf-8")).hexdigest()[:12]
    slug = re.sub(r"[^\w.-]+", "-", vault.resolve().name).strip("-")[:40] or "vault"
    return home() / "indexes" / f"{slug}-{digest}"


# ---- the live index inside a vault's index root ------------------------------------------------
# The root holds ``writer.lock`` (the live writer lock, stable across switches) and either the
# store itself (before any background rebuild) or a ``current`` pointer naming the folder
# ``r<k>`` that holds it. Higher k = newer; a folder above the live one is a rebuild in
# progress, one below it is left over from a switch and may be deleted.
POINTER = "current"


def read_pointer(root: Path) -> str | None:
    try:
        name = (root / POINTER).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    return name if re.fullmatch(r"r\d+", name) else None


def live_index_dir(root: Path) -> Path:
    """The folder every command opens: the one the pointer names, else the root itself."""
    name = read_pointer(root)
    return root / name if name else root


def index_number(root: Path, directory: Path) -> int:
    """k of ``r<k>``; 0 for the root itself (an index from before any background rebuild)."""
    return 0 if directory == root else int(directory.name[1:])


def numbered_dirs(root: Path) -> dict[int, Path]:
    if not root.is_dir():
        return {}
    return {int(p.name[1:]): p for p in root.iterdir() if p.is_dir() and re.fullmatch(r"r\d+", p.name)}


def write_pointer(root: Path, name: str) -> None:
    """Point the root at ``name`` atomically and durably (write, fsync, rename, fsync the folder)."""
    tmp = root / f".{POINTER}.{os.getpid()}.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(name + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, root / POINTER)
    fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
