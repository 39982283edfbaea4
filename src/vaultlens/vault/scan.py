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


@dataclass(frozen=True, slots=True)
class _Folder:
    path: str
    key: tuple[int, int]  # (st_dev, st_ino) of the folder, to catch symlink loops


Entry = VaultFile | Skipped | _Folder | None


class VaultRules:
    """The ignore rules and size limit of one vault, applied to a whole walk or to single paths.

    The watcher asks about one path at a time (``classify``); answering with the same code the
    full scan uses keeps a watched index equal to a freshly scanned one.
    """

    def __init__(self, root: Path, max_file_bytes: int) -> None:
        self.root = check_vault(root)
        self.max_file_bytes = max_file_bytes
        self._filters = _obsidian_filters(self.root)
        self._spec = _ignore_spec(self.root)

    def ignored(self, rel: str, is_dir: bool) -> str | None:
        probe = rel + "/" if is_dir else rel
        for label, match in self._filters:
            if match(probe):
                return f"excluded by .obsidian/app.json userIgnoreFilters {label!r}"
        if self._spec is not None and self._spec.match_file(probe):
            return f"ignored by {IGNORE_FILE}"
        return None

    def entry(self, rel: str) -> Entry:
        """What a walk makes of one entry whose parent folder it entered; None = silently left out."""
        full = self.root / rel
        name = rel.rsplit("/", 1)[-1]
        is_link = full.is_symlink()
        try:
            if is_link:
                problem = _link_problem(self.root, full)
                if problem:
                    return Skipped(rel, problem)
            info = full.stat()
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return Skipped(rel, "symlink loop")
            if exc.errno == errno.ENOENT:
                return Skipped(rel, "broken symlink (its target does not exist)") if is_link else None
            return Skipped(rel, f"cannot read: {exc.strerror}")
        if stat.S_ISDIR(info.st_mode):
            if name.startswith("."):
                return Skipped(rel + "/", "hidden folder")
            reason = self.ignored(rel, True)
            return Skipped(rel + "/", reason) if reason else _Folder(rel, (info.st_dev, info.st_ino))
        kind = _KINDS.get(os.path.splitext(name)[1].lower(), "attachment")
        if not stat.S_ISREG(info.st_mode):  # a FIFO, socket or device: reading it could block
            why: str | None = "not a regular file"
        elif name.startswith("."):
            why = "hidden file"
        else:
            why = self.ignored(rel, False)
        if why:
            return None if kind == "attachment" else Skipped(rel, why)
        if kind == "note" and info.st_size > self.max_file_bytes:
            limit = self.max_file_bytes / 1e6
            return Skipped(rel, f"too large ({info.st_size / 1e6:.1f} MB > {limit:g} MB limit)")
        return VaultFile(rel, kind, info.st_size, info.st_mtime_ns)

    def folder_visible(self, rel: str) -> bool:
        """True when a walk from the root enters folder ``rel`` ("" is the root)."""
        parts = rel.split("/") if rel else []
        return all(isinstance(self.entry("/".join(parts[: i + 1])), _Folder) for i in range(len(parts)))

    def classify(self, rel: str) -> VaultFile | Skipped | None:
        """What a full scan says about one file: listed, skipped with a reason, or None (absent,
        a folder, an attachment left out, or inside a folder the scan does not enter)."""
        parent = rel.rpartition("/")[0]
        if not self.folder_visible(parent):
            return None
        found = self.entry(rel)
        return None if isinstance(found, _Folder) else found

    def scan(self, under: str = "") -> ScanResult:
        """List every file below folder ``under`` ("" = the whole vault), sorted, plus every skip."""
        result = ScanResult()
        if under:
            top = self.entry(under) if self.folder_visible(under.rpartition("/")[0]) else None
            if isinstance(top, Skipped):
                result.skipped.append(top)
            if not isinstance(top, _Folder):
                return result
        else:
            st = self.root.stat()
            top = _Folder("", (st.st_dev, st.st_ino))
        seen: set[tuple[int, int]] = set()

        def walk(folder: _Folder) -> None:
            if folder.key in seen:
                result.skipped.append(Skipped(folder.path + "/", "symlink loop (folder already visited)"))
                return
            seen.add(folder.key)
            try:
                names = sorted(os.listdir(self.root / folder.path))
            except OSError as exc:
                result.skipped.append(Skipped(folder.path + "/", f"cannot read folder: {exc.strerror}"))
                return
            for name in names:
                found = self.entry(f"{folder.path}/{name}" if folder.path else name)
                if isinstance(found, _Folder):
                    walk(found)
                elif isinstance(found, VaultFile):
                    result.files.append(found)
                elif found is not None:
                    result.skipped.append(found)

        walk(top)
        result.files.sort(key=lambda f: f.path)
        return result


def scan_vault(root: Path, max_file_bytes: int, under: str = "") -> ScanResult:
    """List every file vaultlens may read, sorted by path, plus every skip with its reason."""
    return VaultRules(root, max_file_bytes).scan(under)


def _link_problem(root: Path, path: Path) -> str | None:
    """Why a symlink cannot be followed (a loop, a target outside the vault), or None."""
    try:
        target = path.resolve()
    except RuntimeError:  # Python < 3.13: symlink loop while resolving
        return "symlink loop"
    except OSError as exc:
        return "symlink loop" if exc.errno == errno.ELOOP else f"cannot read: {exc.strerror}"
    return None if target.is_relative_to(root) else "symlink points outside the vault"
