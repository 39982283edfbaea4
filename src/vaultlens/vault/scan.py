"""Walk a vault the way Obsidian sees it, and say why every left-out file was left out.

Skipped: dot-folders (``.obsidian/``, ``.trash/``, ``.git/``...), the user's
``userIgnoreFilters`` from ``.obsidian/app.json``, patterns in ``.vaultlensignore``
(gitignore syntax), files over the size limit, every symlink (one that leaves the vault, a loop,
or one into the vault, whose files are listed under their real path), names no note path may
have (not UTF-8, control characters; reported under a :func:`printable_path` spelling), and
anything the OS will not let the walk open (a folder that can be listed but not entered, a path
too long): any ``OSError`` met while walking is a skip with its reason, never a failed scan.

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from vaultlens.errors import VaultError
from vaultlens.vault.safepath import REFUSED_CHARACTERS, refused_character

if TYPE_CHECKING:
    import pathspec

IGNORE_FILE = ".vaultlensignore"
FileKind = Literal["note", "canvas", "base", "pdf", "attachment"]
_KINDS: dict[str, FileKind] = {".md": "note", ".canvas": "canvas", ".base": "base", ".pdf": "pdf"}
# the kinds the index may read (index.attachments picks among pdf and canvas): over the size limit, a skip
_READ_KINDS = frozenset({"note", "canvas", "pdf"})


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

    def readable(self, kinds: Iterable[str]) -> list[VaultFile]:
        """The notes and the files of ``kinds`` (``index.attachments``) the index reads, sorted by path."""
        wanted = {"note", *kinds}
        return [f for f in self.files if f.kind in wanted]


def check_vault(path: Path) -> Path:
    """Resolve and validate a vault root, with a message a user can act on."""
    if not path.exists():
        raise VaultError(
            f"Vault folder {path} does not exist.", hint="Pass --vault PATH or set VAULTLENS_VAULT."
        )
    if not path.is_dir():
        raise VaultError(f"Vault path {path} is not a folder.")
    root = path.resolve()
    try:
        str(root).encode("utf-8")
    except UnicodeEncodeError:
        raise VaultError(
            f"The vault path {str(root)!r} is not valid UTF-8 text.",
            hint="Rename the folder (or the parent folder whose name holds the odd bytes) to a UTF-8 name: "
            "the index keeps paths as text.",
        ) from None
    return root


APP_JSON = ".obsidian/app.json"
TOO_LARGE = "too large"  # how a note over index.max_file_mb's skip reason starts

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
    except (ValueError, RecursionError) as exc:  # RecursionError: nested thousands of levels deep
        return [], [f"{APP_JSON} is not valid JSON ({exc}); its excluded files are not applied"]
    if not isinstance(config, dict):
        return [], [f"{APP_JSON} is not a JSON object; its excluded files are not applied"]
    raw = config.get("userIgnoreFilters")
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"{APP_JSON} userIgnoreFilters is not a list; no excluded files are applied"]
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
    import pathspec  # only for a vault that has the file

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
    key: tuple[int, int]  # (st_dev, st_ino) of the folder, to catch loops through mounts


Entry = VaultFile | Skipped | _Folder | None


class VaultRules:
    """The ignore rules and size limit of one vault, applied to a whole walk or to single paths.

    The watcher asks about one path at a time (``classify``) or one folder (``scan(folder)``);
    answering with the same code the full scan uses keeps a watched index equal to a freshly
    scanned one. Every answer depends only on the path and the folders above it, never on what
    a walk met before, so a path gets the same answer whichever way it is reached.

    Symlinks are never followed. One that leads outside the vault is refused; one that leads to
    a file or folder inside it names files the walk reaches under their real path anyway
    (following it would index them twice, loop, or bypass the ignore rules of the real path),
    so it is skipped with the path it duplicates.

    ``rule_problems`` lists what could not be applied from ``.obsidian/app.json`` and
    ``.vaultlensignore`` (read once, here); every valid rule is applied regardless.
    """

    def __init__(self, root: Path, max_file_bytes: int, obsidian_sees: bool = False) -> None:
        self.root = check_vault(root)
        self.max_file_bytes = max_file_bytes
        self._filters, app_problems = _obsidian_filters(self.root)
        self._spec, ignore_problems = _ignore_spec(self.root)
        self.rule_problems: tuple[str, ...] = (*app_problems, *ignore_problems)
        self._obsidian_sees = obsidian_sees  # every file Obsidian links: the ignore rules left out

    def ignored(self, rel: str, is_dir: bool) -> str | None:
        if self._obsidian_sees:
            return None
        probe = rel + "/" if is_dir else rel
        for label, match in self._filters:
            if match(probe):
                return f"excluded by .obsidian/app.json userIgnoreFilters {label!r}"
        if self._spec is not None and self._spec.match_file(probe):
            return f"ignored by {IGNORE_FILE}"
        return None

    def entry(self, rel: str) -> Entry:
        """What a walk makes of one entry whose parent folder it entered; None = silently left out.

        Never raises for what it finds on disk: any :class:`OSError` becomes a skip with its reason.
        """
        full = self.root / rel
        name = rel.rsplit("/", 1)[-1]
        bad_name = refused_character(name)
        if bad_name:
            return self._bad_name(rel, full, bad_name)
        try:
            info = os.lstat(full)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):  # gone since the folder was listed
                return None
            return Skipped(rel, f"cannot read: {_why(exc)}")
        if stat.S_ISLNK(info.st_mode):
            return self._symlink(rel, full)
        if stat.S_ISDIR(info.st_mode):
            if name.startswith("."):
                return Skipped(rel + "/", "hidden folder")
            reason = self.ignored(rel, True)
            if reason:
                return Skipped(rel + "/", reason)
            try:  # a folder that can be listed but not entered (mode 644) fails here, not later
                os.stat(os.path.join(full, os.curdir))
            except OSError as exc:
                return Skipped(rel + "/", f"cannot read folder: {_why(exc)}")
            return _Folder(rel, (info.st_dev, info.st_ino))
        kind = _KINDS.get(os.path.splitext(name)[1].lower(), "attachment")
        if not stat.S_ISREG(info.st_mode):  # a FIFO, socket or device: reading it could block
            why: str | None = "not a regular file"
        elif name.startswith("."):
            why = "hidden file"
        else:
            why = self.ignored(rel, False)
        if why:
            return None if kind == "attachment" else Skipped(rel, why)
        if kind in _READ_KINDS and info.st_size > self.max_file_bytes:
            limit = self.max_file_bytes / 1e6
            return Skipped(rel, f"{TOO_LARGE} ({info.st_size / 1e6:.1f} MB > {limit:g} MB limit)")
        return VaultFile(rel, kind, info.st_size, info.st_mtime_ns)

    def _bad_name(self, rel: str, full: Path, problem: str) -> Skipped | None:
        """A name no note path may have (not UTF-8, a control character): reported under a
        printable spelling, since the name itself cannot be stored, shown or read back."""
        try:
            info = os.lstat(full)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return None
            info = None
        shown = printable_path(rel)
        if problem.startswith("contains an unpaired surrogate"):
            problem = "is not valid UTF-8"
        if info is not None and stat.S_ISDIR(info.st_mode):
            return Skipped(shown + "/", f"folder name {problem} (rename it)")
        if _KINDS.get(os.path.splitext(full.name)[1].lower(), "attachment") == "attachment":
            return None  # attachments are never read: one left out is not reported
        return Skipped(shown, f"file name {problem} (rename it)")

    def _symlink(self, rel: str, full: Path) -> Skipped | None:
        """Why symlink ``rel`` is not followed: see the class docstring."""
        real = Path(os.path.realpath(full))  # never raises; a loop leaves a path that stat refuses
        if not real.is_relative_to(self.root):
            return Skipped(rel, "symlink points outside the vault")
        try:
            info = os.stat(full)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return Skipped(rel, "symlink loop")
            if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                return Skipped(rel, "broken symlink (its target does not exist)")
            return Skipped(rel, f"cannot read: {_why(exc)}")
        target = real.relative_to(self.root).as_posix()
        if stat.S_ISDIR(info.st_mode):
            parent = self.root / rel.rpartition("/")[0]  # real: no folder on the way is a link
            if parent.is_relative_to(real):
                return Skipped(rel + "/", "symlink loop (folder already visited)")
            shown = f"{target}/" if target != "." else "the vault root"
            return Skipped(rel + "/", f"symlink into the vault: same files as {shown}")
        kind = _KINDS.get(os.path.splitext(full.name)[1].lower(), "attachment")
        if kind == "attachment":
            return None
        return Skipped(rel, f"symlink into the vault: same file as {target}")

    def _chain(self, rel: str) -> list[_Folder] | None:
        """The folders a walk from the root enters to reach folder ``rel`` (root first), or None
        when it enters not all of them (one is skipped, missing, or repeats a folder above it)."""
        st = self.root.stat()
        chain = [_Folder("", (st.st_dev, st.st_ino))]
        parts = rel.split("/") if rel else []
        for i in range(len(parts)):
            found = self.entry("/".join(parts[: i + 1]))
            if not isinstance(found, _Folder) or any(f.key == found.key for f in chain):
                return None
            chain.append(found)
        return chain

    def folder_visible(self, rel: str) -> bool:
        """True when a walk from the root enters folder ``rel`` ("" is the root)."""
        return self._chain(rel) is not None

    def classify(self, rel: str) -> VaultFile | Skipped | None:
        """What a full scan says about one file: listed, skipped with a reason, or None (absent,
        a folder, an attachment left out, or inside a folder the scan does not enter)."""
        chain = self._chain(rel.rpartition("/")[0])
        if chain is None:
            return None
        found = self.entry(rel)
        if isinstance(found, _Folder):
            return _loop(found, chain)
        return found

    def scan(self, under: str = "") -> ScanResult:
        """List every file below folder ``under`` ("" = the whole vault), sorted, plus every skip.

        ``scan(folder)`` finds exactly what ``scan()`` finds below ``folder``.
        """
        result = ScanResult(rule_problems=list(self.rule_problems))
        above = self._chain(under.rpartition("/")[0]) if under else []
        if above is None:
            return result
        if under:
            top: Entry = self.entry(under)
            if isinstance(top, _Folder):
                top = _loop(top, above) or top
            if isinstance(top, Skipped):
                result.skipped.append(top)
            if not isinstance(top, _Folder):
                return result
        else:
            st = self.root.stat()
            top = _Folder("", (st.st_dev, st.st_ino))

        def walk(folder: _Folder, chain: list[_Folder]) -> None:
            try:
                names = sorted(os.listdir(self.root / folder.path))
            except OSError as exc:
                result.skipped.append(Skipped(folder.path + "/", f"cannot read folder: {_why(exc)}"))
                return
            inside = [*chain, folder]
            for name in names:
                found = self.entry(f"{folder.path}/{name}" if folder.path else name)
                if isinstance(found, _Folder):
                    loop = _loop(found, inside)
                    if loop:
                        result.skipped.append(loop)
                    else:
                        walk(found, inside)
                elif isinstance(found, VaultFile):
                    result.files.append(found)
                elif found is not None:
                    result.skipped.append(found)

        walk(top, above)
        result.files.sort(key=lambda f: f.path)
        return result


def _loop(folder: _Folder, above: list[_Folder]) -> Skipped | None:
    """A folder that is one of the folders above it (a bind mount, a junction): a loop."""
    for outer in above:
        if outer.key == folder.key:
            shown = f"{outer.path}/" if outer.path else "the vault root"
            return Skipped(folder.path + "/", f"folder loop: the same folder as {shown}")
    return None


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def printable_path(rel: str) -> str:
    """``rel`` with every character a note path may not have written as an escape: a byte that
    is not UTF-8 as ``\\xff``, a control or bidirectional character as ``\\x0a`` / ``\\u202e``.

    The result is valid Unicode, so it can be stored, printed and put in JSON; paths without such
    characters are returned unchanged.
    """
    return REFUSED_CHARACTERS.sub(_escape, rel)


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for an undecodable byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def scan_vault(root: Path, max_file_bytes: int, under: str = "", obsidian_sees: bool = False) -> ScanResult:
    """List every file vaultlens may read, sorted by path, plus every skip with its reason.

    ``obsidian_sees``: the files excluded in Obsidian's settings or by ``.vaultlensignore`` too
    (Obsidian still resolves and renames their links; a move or merge must too)."""
    return VaultRules(root, max_file_bytes, obsidian_sees).scan(under)


def paths_sharing_a_file(vault: Path, rels: Iterable[str]) -> dict[str, list[str]]:
    """Vault-relative paths among ``rels`` that lead to one real file, for ``doctor``.

    Returns ``{real path: [rel, ...]}`` for every real file reached by two or more of ``rels``
    (through symlinks; the scanner skips a symlink into the vault, so an index holding both
    paths was made before it did, or by a path-level sync that did not check). The real path is
    relative to the vault, or absolute when it lies outside; each list is sorted. Paths that do
    not exist are left out. Hard links are separate files here, as they are to the scanner.
    """
    root = Path(os.path.realpath(vault))
    by_real: dict[str, list[str]] = {}
    for rel in rels:
        full = root / rel.rstrip("/")
        if not os.path.exists(full):
            continue
        real = Path(os.path.realpath(full))
        key = real.relative_to(root).as_posix() if real.is_relative_to(root) else str(real)
        by_real.setdefault(key, []).append(rel)
    return {real: sorted(paths) for real, paths in sorted(by_real.items()) if len(paths) > 1}
