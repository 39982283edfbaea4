"""Turn a vault-relative path supplied by a user or an agent into a real file inside the vault.

Every caller that opens a note by a path it did not get from :mod:`vaultlens.vault.scan` goes
through :func:`resolve_note_path`. It refuses, with a :class:`~vaultlens.errors.VaultError` that
says why:

- an empty path, an absolute path (``/etc/passwd``), a drive letter (``C:x``, ``C:\\x``) or a
  backslash anywhere (``..\\x``): paths are written with ``/`` only, as the scanner reports them,
  and Obsidian does not allow ``\\`` or ``:`` in a note name;
- ``..``, ``.`` and empty segments (``a/../x``, ``./x``, ``a//x``, ``x/``), and hidden segments
  (``.obsidian/app.json``, ``.git/config``): the scanner never lists them;
- NUL, other control characters, lone surrogates and bidirectional-override characters (which
  can make a path display as something else);
- a symlink, the file itself or any folder on the way, that leads outside the vault (the vault's
  own root may be a symlink: containment is checked against its real path);
- a path that names a folder or anything but a regular file.

Unicode normalisation. macOS has written NFD names for years and a vault synced to Linux keeps
them, while a user or an agent types NFC. Each segment is looked up exactly first; when absent,
the folder is listed and an entry whose NFC form equals the NFC form of the segment is used.
The returned path is the spelling found on disk (so it equals the path the scanner lists and
the store keys), not the one asked for. When no entry matches exactly and two or more entries
are NFC-equal (``é`` stored both ways on a byte-exact filesystem), the path is refused as
ambiguous rather than guessed. Normalisation only ever picks among the entries of a folder
already reached inside the vault, so it cannot lead out of it. On a case-insensitive
filesystem a lookup in another case succeeds and the returned path keeps the asked spelling.

Scope: this protects against path *strings*. A local process that swaps folders for symlinks
between this check and the read can still race it; vaultlens does not defend against a hostile
process with write access to the vault.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from vaultlens.errors import NoteNotFound, VaultError, VaultlensError, translate_error
from vaultlens.vault.hidden import BIDI

__all__ = [
    "REFUSED_CHARACTERS",
    "NotePath",
    "check_relative",
    "check_untrusted",
    "refused_character",
    "resolve_note_path",
]

_DRIVE = re.compile(r"^[A-Za-z]:")
_BIDI = BIDI  # bidirectional embeddings, overrides and isolates: they reorder how a name is displayed
# every character a path may not contain: controls (Unicode category Cc), lone surrogates (what
# Python makes of bytes that are not UTF-8 in a file name) and the bidirectional controls above
REFUSED_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff" + "".join(sorted(_BIDI)) + "]")
# The same rule as a pattern an API schema declares (ECMA and Rust syntax alike); surrogates are left
# out, since a UTF-8 query string cannot carry them.
ALLOWED_TEXT_PATTERN = (
    "^[^\\u0000-\\u001f\\u007f-\\u009f" + "".join(f"\\u{ord(c):04x}" for c in sorted(_BIDI)) + "]*$"
)


@dataclass(frozen=True, slots=True)
class NotePath:
    """A checked note path: ``rel`` as spelled on disk (POSIX separators), ``real`` its real path."""

    rel: str
    real: Path


def _refuse(rel: str, why: str) -> VaultError:
    return VaultError(
        f"Refusing note path {rel!r}: {why}.",
        hint="Give a path relative to the vault root with '/' separators, like 'folder/Note.md'.",
    )


def check_relative(rel: str) -> list[str]:
    """The segments of a vault-relative path, or :class:`VaultError` saying why it is refused.

    Purely textual (no filesystem access): see the module docstring for the rules.
    """
    if not isinstance(rel, str):
        raise _refuse(repr(rel), "a path must be a string")
    if not rel:
        raise _refuse(rel, "the path is empty")
    problem = refused_character(rel)
    if problem:
        raise _refuse(rel, f"it {problem}")
    if "\\" in rel:
        raise _refuse(rel, "backslashes are not allowed (use '/' between folders)")
    if rel.startswith("/"):
        raise _refuse(rel, "absolute paths are not allowed")
    if _DRIVE.match(rel):
        raise _refuse(rel, "drive letters are not allowed")
    parts = rel.split("/")
    for part in parts:
        if part in ("", "."):
            raise _refuse(rel, "empty or '.' path segments are not allowed")
        if part == "..":
            raise _refuse(rel, "'..' segments are not allowed")
        if part.startswith("."):
            raise _refuse(rel, f"hidden files and folders ({part!r}) are not notes")
    return parts


def refused_character(name: str) -> str | None:
    """Why ``name`` (a path or one of its segments) has a character no note path may have, as
    "contains ..." / "is not valid ...", or None. Purely textual; see the module docstring."""
    found = REFUSED_CHARACTERS.search(name)
    if found is None:
        return None
    ch = found.group()
    if ch == "\x00":
        return "contains a NUL byte"
    if "\ud800" <= ch <= "\udfff":
        return "contains an unpaired surrogate (not valid Unicode)"
    if ch in _BIDI:
        return f"contains the bidirectional control character U+{ord(ch):04X}"
    return f"contains the control character U+{ord(ch):04X}"


def resolve_note_path(vault: Path, rel: str) -> NotePath:
    """Check ``rel`` and find the regular file it names inside ``vault``.

    Raises :class:`VaultError` when the path is refused (see the module docstring),
    :class:`NoteNotFound` (a ``VaultError``) when nothing by that name exists, and the
    :func:`~vaultlens.errors.translate_error` form of any other :class:`OSError`
    (``PermissionDenied``, ``FileSystemError``), with the ``OSError`` as ``__cause__``.
    """
    parts = check_relative(rel)
    try:
        root = vault.resolve(strict=True)
    except OSError as exc:
        raise VaultError(f"Vault folder {vault} cannot be opened ({exc.strerror or exc}).") from exc
    cur = root
    found: list[str] = []
    linked = False
    for i, part in enumerate(parts):
        name, info = _entry(cur, part, rel)
        found.append(name)
        cur = cur / name
        last = i == len(parts) - 1
        try:
            info = info or os.lstat(cur)
            if stat.S_ISLNK(info.st_mode):
                linked = True
                _check_link(root, cur, rel, "/".join(found))
                info = os.stat(cur)
        except OSError as exc:
            raise _os_error(rel, exc) from exc
        if not last and not stat.S_ISDIR(info.st_mode):
            raise _not_found(rel, f"{'/'.join(found)!r} is not a folder")
        if last and not stat.S_ISREG(info.st_mode):
            what = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise _refuse(rel, f"it is {what}")
    # without a link on the way, every name is a real entry below the resolved root: cur is its real path
    real = Path(os.path.realpath(cur)) if linked else cur
    if not real.is_relative_to(root):  # belt and braces: every link on the way was checked
        raise _refuse(rel, "it leads outside the vault")
    return NotePath("/".join(found), real)


def _entry(folder: Path, part: str, rel: str) -> tuple[str, os.stat_result | None]:
    """The on-disk name of ``part`` in ``folder``: itself if present (with its lstat, so a path's
    entries are each looked at once), else its one NFC-equal entry (not looked at yet: None)."""
    try:
        return part, os.lstat(folder / part)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _os_error(rel, exc) from exc
    want = unicodedata.normalize("NFC", part)
    if want == part and part.isascii():
        raise _not_found(rel)
    try:
        names = os.listdir(folder)
    except OSError as exc:
        raise _os_error(rel, exc) from exc
    matches = [n for n in names if unicodedata.normalize("NFC", n) == want]
    if not matches:
        raise _not_found(rel)
    if len(matches) > 1:
        raise _refuse(rel, f"{len(matches)} entries match {part!r} once Unicode-normalised (ambiguous)")
    return matches[0], None


def _check_link(root: Path, link: Path, rel: str, shown: str) -> None:
    try:
        target = link.resolve(strict=True)
    except RuntimeError:  # Python < 3.13: symlink loop
        raise _refuse(rel, f"{shown!r} is a symlink loop") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(rel, f"{shown!r} is a symlink loop") from exc
        raise _os_error(rel, exc) from exc
    if not target.is_relative_to(root):
        raise _refuse(rel, f"{shown!r} is a symlink that leads outside the vault")


def _not_found(rel: str, detail: str | None = None) -> NoteNotFound:
    return NoteNotFound(f"No note {rel!r} in the vault" + (f" ({detail})." if detail else "."))


def _os_error(rel: str, exc: OSError) -> VaultlensError:
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return _not_found(rel)
    if exc.errno == errno.ENAMETOOLONG:  # no note can have that name; not a failing file system
        return _not_found(rel, "a name in it is longer than the file system allows")
    return translate_error(exc, f"read the note {rel!r}")


# ---- paths from callers that may be hostile (HTTP API, MCP agents) -----------------------------------

_DECODE_ROUNDS = 3  # %252e%252e (double-encoded) needs two; a third catches one more layer
# characters that look like a slash or a backslash (NFKC folds only the fullwidth ones)
_SLASH_LOOKALIKES = frozenset("\u2044\u2215\u2216\u29f5\u29f8\u29f9\ufe68\uff0f\uff3c")


def check_untrusted(rel: str) -> list[str]:
    """:func:`check_relative`, plus the tricks a path from an HTTP client or an agent may carry.

    A server decodes a URL once; a path still holding ``%2e%2e%2f`` (double-encoded) or a
    look-alike (``\uff0e\uff0e\uff0f``, ``\u2025``, ``\u2215``) may be decoded or normalised again
    by some other layer, and a caller who sends one is probing. So a path is refused when any
    percent-decoding of it (up to three rounds) or its NFKC form would be refused, when NFKC
    turns a character into ``/``, and when it starts with ``~`` (a home folder, never a note).
    Scanned paths do not come through here: a note may be named ``100% done.md``.
    """
    parts = check_relative(rel)
    if parts[0].startswith("~"):
        raise _refuse(rel, "'~' (a home folder) is not allowed")
    lookalike = next((ch for ch in rel if ch in _SLASH_LOOKALIKES), None)
    if lookalike is not None:
        raise _refuse(rel, f"it contains U+{ord(lookalike):04X}, a look-alike of '/' or '\\'")
    decoded = rel
    for _ in range(_DECODE_ROUNDS):
        try:
            nxt = unquote(decoded, errors="strict") if "%" in decoded else decoded
        except UnicodeDecodeError:
            raise _refuse(rel, "it holds percent-escapes that are not UTF-8") from None
        if nxt == decoded:
            break
        decoded = nxt
        if decoded.count("/") != rel.count("/"):
            raise _refuse(rel, "it holds a percent-encoded '/'")
        _refuse_disguised(rel, decoded, "once percent-decoded")
    folded = unicodedata.normalize("NFKC", rel)
    if folded != rel:
        if folded.count("/") != rel.count("/"):
            raise _refuse(rel, "it contains a look-alike of '/'")
        _refuse_disguised(rel, folded, "once Unicode look-alikes are folded (NFKC)")
    return parts


def _refuse_disguised(rel: str, spelled: str, how: str) -> None:
    try:
        check_relative(spelled)
        if spelled.startswith("~"):
            raise _refuse(spelled, "'~' is not allowed")
    except VaultError as exc:
        raise _refuse(rel, f"{how} it reads {spelled!r}, which is refused") from exc
