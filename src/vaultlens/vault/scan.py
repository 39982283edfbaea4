"""Walk a vault the way Obsidian sees it, and say why every left-out file was left out.

Skipped: dot-folders (``.obsidian/``, ``.trash/``, ``.git/``...), the user's
``userIgnoreFilters`` from ``.obsidian/app.json``, patterns in ``.vaultlensignore``
(gitignore syntax), files over the size limit, symlink loops and links that leave the vault.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pathspec

from vaultlens.errors import VaultError

IGNORE_FILE = ".vaultlensignore"
FileKind = Literal["note", "canvas", "base", "attachment"]
_KINDS: dict[str, FileKind] = {".md": "note", ".canvas": "canvas", ".base": "base"}


@dataclass(frozen=True, slots=True)
class VaultFile:
    path: str  # vault-relative, POSIX separators
    kind: FileKind
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str  # a folder ends with "/"
    reason: str


@dataclass
class ScanResult:
    files: list[VaultFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def notes(self) -> list[VaultFile]:
        return [f for f in self.files if f.kind == "note"]


def check_vault(path: Path) -> Path:
    """Resolve and validate a vault root, with a message a user can act on."""
    if not path.exists():
        raise VaultError(
            f"Vault folder {path} does not exist.", hint="Pass --vault PATH or set VAULTLENS_VAULT."
        )
    if not path.is_dir():
        raise VaultError(f"Vault path {path} is not a folder.")
    return path.resolve()


def _obsidian_filters(root: Path) -> list[tuple[str, Callable[[str], bool]]]:
    """Obsidian's "Excluded files": a ``/regex/`` or a path prefix, matched against the relative path."""
    app = root / ".obsidian" / "app.json"
    try:
        raw = json.loads(app.read_text(encoding="utf-8")).get("userIgnoreFilters") or []
    except (OSError, ValueError, AttributeError):
        return []
    out: list[tuple[str, Callable[[str], bool]]] = []
    for item in raw:
        if not isinstance(item, str) or not item:
            continue
        if len(item) > 2 and item.startswith("/") and item.endswith("/"):
            try:
                rx = re.compile(item[1:-1])
            except re.error:
                continue
            out.append((item, _regex_matcher(rx)))
        else:
            out.append((item, _prefix_matcher(item)))
    return out


def _regex_matcher(rx: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda p: rx.search(p) is not None


def _prefix_matcher(prefix: str) -> Callable[[str], bool]:
    return lambda p: p.startswith(prefix)


def _ignore_spec(root: Path) -> pathspec.PathSpec[Any] | None:
    try:
        lines = (root / IGNORE_FILE).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def scan_vault(root: Path, max_file_bytes: int) -> ScanResult:
    """List every file vaultlens may read, sorted by path, plus every skip with its reason."""
    root = check_vault(root)
    filters = _obsidian_filters(root)
    spec = _ignore_spec(root)
    result = ScanResult()
    seen_dirs: set[tuple[int, int]] = set()

    def ignored(rel: str, is_dir: bool) -> str | None:
        probe = rel + "/" if is_dir else rel
        for label, match in filters:
            if match(probe):
                return f"excluded by .obsidian/app.json userIgnoreFilters {label!r}"
        if spec is not None and spec.match_file(probe):
            return f"ignored by {IGNORE_FILE}"
        return None

    def walk(folder: Path, rel_folder: str) -> None:
        try:
            st = folder.stat()
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            result.skipped.append(Skipped(rel_folder + "/", f"cannot read folder: {exc.strerror}"))
            return
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            result.skipped.append(Skipped(rel_folder + "/", "symlink loop (folder already visited)"))
            return
        seen_dirs.add(key)
        for entry in entries:
            rel = f"{rel_folder}/{entry.name}" if rel_folder else entry.name
            try:
                if entry.is_symlink():
                    problem = _link_problem(root, Path(entry.path))
                    if problem:
                        result.skipped.append(Skipped(rel, problem))
                        continue
                info = entry.stat()
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    why = "symlink loop"
                elif exc.errno == errno.ENOENT and entry.is_symlink():
                    why = "broken symlink (its target does not exist)"
                else:
                    why = f"cannot read: {exc.strerror}"
                result.skipped.append(Skipped(rel, why))
                continue
            if stat.S_ISDIR(info.st_mode):
                if entry.name.startswith("."):
                    result.skipped.append(Skipped(rel + "/", "hidden folder"))
                    continue
                reason = ignored(rel, True)
                if reason:
                    result.skipped.append(Skipped(rel + "/", reason))
                    continue
                walk(Path(entry.path), rel)
                continue
            kind = _KINDS.get(os.path.splitext(entry.name)[1].lower(), "attachment")
            if not stat.S_ISREG(info.st_mode):  # a FIFO, socket or device: reading it could block
                if kind != "attachment":
                    result.skipped.append(Skipped(rel, "not a regular file"))
                continue
            if entry.name.startswith("."):
                if kind != "attachment":
                    result.skipped.append(Skipped(rel, "hidden file"))
                continue
            reason = ignored(rel, False)
            if reason:
                if kind != "attachment":
                    result.skipped.append(Skipped(rel, reason))
                continue
            if kind == "note" and info.st_size > max_file_bytes:
                limit = max_file_bytes / 1e6
                result.skipped.append(
                    Skipped(rel, f"too large ({info.st_size / 1e6:.1f} MB > {limit:g} MB limit)")
                )
                continue
            result.files.append(VaultFile(rel, kind, info.st_size, info.st_mtime_ns))

    walk(root, "")
    result.files.sort(key=lambda f: f.path)
    return result


def _link_problem(root: Path, path: Path) -> str | None:
    """Why a symlink cannot be followed (a loop, a target outside the vault), or None."""
    try:
        target = path.resolve()
    except RuntimeError:  # Python < 3.13: symlink loop while resolving
        return "symlink loop"
    except OSError as exc:
        return "symlink loop" if exc.errno == errno.ELOOP else f"cannot read: {exc.strerror}"
    return None if target.is_relative_to(root) else "symlink points outside the vault"
