"""Where vaultlens keeps its own files: never inside the vault, so sync does not carry them."""

from __future__ import annotations

import errno
import os
import re
import tempfile
from pathlib import Path

import platformdirs

from vaultlens.errors import ConfigError, FileSystemError, PermissionDenied
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


def _vault_key(vault: Path) -> str:
    """One folder name per resolved vault path: a readable slug plus a hash that keeps them apart."""
    resolved = str(vault.resolve())
    digest = sha256_hex(resolved)[:12]
    slug = re.sub(r"[^\w.-]+", "-", vault.resolve().name).strip("-")[:40] or "vault"
    return f"{slug}-{digest}"


def index_dir(vault: Path) -> Path:
    """The vault's index root. What lives inside it is index/lifecycle.py's business."""
    return home() / "indexes" / _vault_key(vault)


def journals_dir() -> Path:
    """The write journals (safewrite), one folder per vault: beside the indexes, never inside them,
    so clearing or rebuilding an index can never lose the record (and backups) of a change to a note.
    Which folder is a vault's is safewrite/identity.py's business (an id that survives a move)."""
    return home() / "journals"


def legacy_journal_dir(vault: Path) -> Path:
    """Where a journal was kept while journals were keyed by the vault's path (adopted as it is)."""
    return journals_dir() / _vault_key(vault)


def batches_dir() -> Path:
    """The state of `vaultlens write batch` runs, one folder per batch id (so a stopped batch resumes)."""
    return home() / "batches"


def audit_dir(vault: Path) -> Path:
    """Where audit reports of the vault go unless the user names a folder (outside the vault, like the index)."""
    return home() / "audits" / _vault_key(vault)


HOME_HINT = "Set VAULTLENS_HOME to a writable folder outside the vault (vaultlens keeps its indexes there)."


def _named(root: Path) -> str:
    """How a message names the data folder: by the variable when the user set it."""
    if os.environ.get("VAULTLENS_HOME"):
        return f"VAULTLENS_HOME ({root})"
    return f"The vaultlens data folder {root} (VAULTLENS_HOME is not set)"


def _home_error(root: Path, what: str, exc: OSError | None = None) -> FileSystemError:
    if exc is not None and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        why = "the file system is read-only" if exc.errno == errno.EROFS else "permission denied"
        return PermissionDenied(f"{_named(root)} {what} ({why}).", hint=HOME_HINT, path=str(root))
    reason = f" ({(exc.strerror or str(exc)).lower()})" if exc is not None else ""
    return FileSystemError(f"{_named(root)} {what}{reason}.", hint=HOME_HINT, path=str(root))


def ensure_home(writable: bool = True) -> Path:
    """The data folder, created when missing; a clear error naming ``VAULTLENS_HOME`` when it cannot be.

    Refuses a path that is a file, lies under a file, cannot be created (for example under /proc)
    or, with ``writable`` (what every writer needs), cannot be written to. Readers may pass
    ``writable=False``: searching an index on a read-only disk works.
    """
    root = home()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        pass  # a file (or a dangling link) where the folder should be: said just below
    except NotADirectoryError as exc:
        raise _home_error(root, "cannot be created: a part of its path is a file, not a folder") from exc
    except OSError as exc:
        raise _home_error(root, "cannot be created", exc) from exc
    try:
        is_dir = root.is_dir()
    except OSError as exc:
        raise _home_error(root, "cannot be looked into", exc) from exc
    if not is_dir:
        raise _home_error(root, "is a file, not a folder" if root.exists() else "is a broken link")
    if writable:
        try:
            fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=root)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise _home_error(root, "is not writable", exc) from exc
    return root


def check_index_outside_vault(vault: Path) -> None:
    """Refuse when the vault's index would live inside the vault (sync tools would carry it, and
    writing it would change the vault): ``VAULTLENS_HOME`` inside the vault, or a vault that
    holds the data folder (the home folder opened without ``--vault``)."""
    root = vault.resolve()
    index = index_dir(vault).resolve()
    if not index.is_relative_to(root):
        return
    if os.environ.get("VAULTLENS_HOME"):
        hint = "Set VAULTLENS_HOME to a folder outside the vault."
    else:
        hint = (
            "Open the folder that holds your notes with --vault (not a folder above the vaultlens "
            "data folder, such as your home folder), or set VAULTLENS_HOME to a folder outside it."
        )
    raise ConfigError(
        f"The index would be inside the vault: {index} is in {root}; sync tools would carry it "
        "and the vault would change.",
        hint=hint,
    )
