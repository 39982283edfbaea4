"""Walk a vault the way Obsidian sees it, and say why every left-out file was left out.

Skipped: dot-folders (``.obsidian/``, ``.trash/``, ``.git/``...), the user's
``userIgnoreFilters`` from ``.obsidian/app.json``, patterns in ``.vaultlensignore``
(gitignore syntax), files over the size limit, symlink loops and links that leave the vault.

A rule file that cannot be read in full (malformed JSON, a filter that is not a valid regex, a
bad gitignore line) never stops a scan: every valid rule is kept, and each problem is listed in
``VaultRules.rule_problems`` / ``ScanResult.rule_problems``. A non-empty list means some files
the user meant to exclude may be listed, so callers must not send note text anywhere remote
until it is fixed.
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
    # problems in the vault's ignore rules (see VaultRules.rule_problems); [] when they are sound
    rule_problems: list[str] = field(default_factory=list)

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


APP_JSON = ".obsidian/app.json"

_Filter = tuple[str, Callable[[str], bool]]


def _obsidian_filters(root: Path) -> tuple[list[_Filter], list[str]]:
    """Obsidian's "Excluded files": a ``/regex/`` or a path prefix, matched against the relative path.

    Returns the valid filters and one message per problem. No ``app.json`` is no problem; a file
    that cannot be read or parsed gives no filters and a problem; an invalid entry is left out
    with a problem and every other entry is kept. An empty string is left out silently: it
    excludes nothing the user could have meant.
    """
    app = root / APP_JSON
    try:
        data = app.read_bytes()
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"{APP_JSON} cannot be read ({exc.strerror}); its excluded files are not applied"]
    try:
        config = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return [], [f"{APP_JSON} is not UTF-8 text; its excluded files are not applied"]
    except ValueError as exc:
        return [], [f"{APP_JSON} is not valid JSON ({exc}); its excluded files are not applied"]
    if not isinstance(config, dict):
        return [], [f"{APP_JSON} is not a JSON object; its excluded files are not applied"]
    raw = config.get("userIgnoreFilters")
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        kind = type(raw).__name__
        return [], [f"{APP_JSON} userIgnoreFilters is a {kind}, not a list; no excluded files are applied"]
    out: list[_Filter] = []
    problems: list[str] = []
    for i, item in enumerate(raw):
        if isinstance(item, str) and not item:
            continue
        if not isinstance(item, str):
            problems.append(
                f"{APP_JSON} userIgnoreFilters entry {i + 1} ({item!r}) is not a string; left out"
            )
        elif len(item) > 2 and item.startswith("/") and item.endswith("/"):
            try:
                rx = re.compile(item[1:-1])
            except re.error as exc:
                problems.append(
                    f"{APP_JSON} userIgnoreFilters entry {i + 1} ({item!r}) is not a valid regular "
                    f"expression ({exc}); left out"
                )
                continue
            out.append((item, _regex_matcher(rx)))
        else:
            out.append((item, _prefix_matcher(item)))
    return out, problems


def _regex_matcher(rx: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda p: rx.search(p) is not None


def _prefix_matcher(prefix: str) -> Callable[[str], bool]:
    return lambda p: p.startswith(prefix)


def _ignore_spec(root: Path) -> tuple[pathspec.PathSpec[Any] | None, list[str]]:
    """``.vaultlensignore`` as a spec (None when absent) and one message per problem; a bad line is
    left out and every other line kept."""
    try:
        lines = (root / IGNORE_FILE).read_bytes().decode("utf-8-sig").splitlines()
    except FileNotFoundError:
        return None, []
    except OSError as exc:
        return None, [f"{IGNORE_FILE} cannot be read ({exc.strerror}); its patterns are not applied"]
    except UnicodeDecodeError:
        return None, [f"{IGNORE_FILE} is not UTF-8 text; its patterns are not applied"]
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines), []
    except ValueError:
        pass
    good: list[str] = []
    problems: list[str] = []
    for n, line in enumerate(lines, 1):
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except ValueError:
            problems.append(f"{IGNORE_FILE} line {n} ({line!r}) is not a valid pattern; left out")
        else:
            good.append(line)
    return pathspec.GitIgnoreSpec.from_lines(good), problems


@dataclass(frozen=True, slots=True)
class _Folder:
    path: str
    key: tuple[int, int]  # (st_dev, st_ino) of the folder, to catch symlink loops


Entry = VaultFile | Skipped | _Folder | None


class VaultRules:
    """The ignore rules and size limit of one vault, applied to a whole walk or to single paths.

    The watcher asks about one path at a time (``classify``); answering with the same code the
    full scan uses keeps a watched index equal to a freshly scanned one.

    ``rule_problems`` lists what could not be applied from ``.obsidian/app.json`` and
    ``.vaultlensignore`` (read once, here); every valid rule is applied regardless.
    """

    def __init__(self, root: Path, max_file_bytes: int) -> None:
        self.root = check_vault(root)
        self.max_file_bytes = max_file_bytes
        self._filters, app_problems = _obsidian_filters(self.root)
        self._spec, ignore_problems = _ignore_spec(self.root)
        self.rule_problems: tuple[str, ...] = (*app_problems, *ignore_problems)

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
        result = ScanResult(rule_problems=list(self.rule_problems))
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
