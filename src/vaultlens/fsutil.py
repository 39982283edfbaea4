"""Bytes on disk: the one content hash and the one durable atomic write every layer uses.

A content hash is SHA-256 everywhere (file hashes, chunk hashes, embed hashes), so two
places can never disagree about whether text changed. Every file vaultlens writes for
itself (pointers, consent, caches, journals) goes through :func:`atomic_write`: a reader or
a crash sees the old bytes or the new ones, never a mix.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from vaultlens.errors import InvalidInput, VaultError


def sha256_hex(data: bytes | str) -> str:
    """Hex SHA-256 of bytes, or of a string's UTF-8 encoding."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def fsync_dir(directory: Path) -> None:
    """Make a rename inside ``directory`` durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def open_folder(root: Path, parts: Sequence[str], create: bool = False) -> int:
    """A descriptor of the folder ``root/parts...``, each component opened relative to the one
    before it with ``O_NOFOLLOW`` (``create``: missing folders are made on the way), so a folder
    swapped for a symbolic link after a path was checked is an ``OSError`` (``ELOOP`` /
    ``ENOTDIR``), never a way out. ``root`` itself is opened as given (a resolved path)."""
    # getattr: the names exist on POSIX only (tests/test_lock.py keeps the import path portable)
    flags = (
        os.O_RDONLY
        | getattr(os, "O_DIRECTORY", 0)
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    fd = os.open(root, flags)
    try:
        for part in parts:
            try:
                below = os.open(part, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                below = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = below
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def atomic_file(target: Path, mode: int | None = None, durable: bool = True) -> Iterator[BinaryIO]:
    """A binary file to write whose content replaces ``target`` atomically when the block ends.

    Temporary file in the same folder, fsync, rename over the target, fsync the folder; the
    temporary file is removed when anything fails, so no ``.tmp`` litter survives an error.
    ``durable=False`` skips the fsyncs, only for caches that are checked when read and can be
    rebuilt: a killed process still leaves the old or the new file, but a power loss may leave
    a short one.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with tmp.open("wb") as fh:
            yield fh
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable:
        fsync_dir(target.parent)


def atomic_write(target: Path, data: bytes | str, mode: int | None = None, durable: bool = True) -> None:
    """Replace ``target`` with ``data`` (a string is written as UTF-8); see :func:`atomic_file`."""
    with atomic_file(target, mode, durable) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def outside_vault(target: Path, vault: Path) -> Path:
    """``target`` resolved, or :class:`VaultError` when it lies inside the vault: a file there is a
    change to the vault and goes through safewrite."""
    resolved = target.expanduser().resolve()
    if resolved.is_relative_to(vault.resolve()):
        raise VaultError(
            f"Refusing to write {target} inside the vault.",
            hint="Choose a path outside the vault; vaultlens changes the vault only through a confirmed diff.",
        )
    return resolved


def nearest_existing(path: Path) -> Path:
    """``path`` itself if something is there (a dangling link counts), else its closest existing
    ancestor: where a file or folder that is still to be created would have to go."""
    return next(at for at in (path, *path.parents) if os.path.lexists(at))


def write_outside_vault(target: Path, data: bytes | str, vault: Path) -> Path:
    """Write a file the user asked for (a report, a map) atomically, never inside the vault."""
    resolved = outside_vault(target, vault)
    atomic_write(resolved, data)
    return resolved


def jsonl_rows(
    path: Path, what: str, shape: str = "one JSON object per line"
) -> list[tuple[int, dict[str, object] | InvalidInput]]:
    """Each non-blank line of a UTF-8 JSON Lines file the user handed in (a BOM allowed), with its
    1-based number: its JSON object, or the :class:`InvalidInput` naming ``path:line`` that says why
    it is none (not UTF-8, not JSON, not an object), so a caller may report the line and go on. A file
    that cannot be read is an :class:`InvalidInput` raised (``what`` names the file's role, ``shape``
    says what it must hold)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"Cannot read {what} {path} ({exc.strerror or exc}).") from None
    rows: list[tuple[int, dict[str, object] | InvalidInput]] = []
    hint = f"{what.capitalize()} holds {shape}."
    for n, raw in enumerate(data.removeprefix(codecs.BOM_UTF8).splitlines(), 1):
        try:
            line = raw.decode("utf-8")
            if not line.strip():
                continue
            item = json.loads(line)
        except UnicodeDecodeError as exc:
            problem = f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at position {exc.start + 1} of the line)"
            rows.append((n, InvalidInput(f"{path}:{n}: {problem}.", hint=f"{hint[:-1]}, saved as UTF-8.")))
        except ValueError as exc:
            rows.append((n, InvalidInput(f"{path}:{n}: not valid JSON ({exc}).", hint=hint)))
        else:
            if not isinstance(item, dict):
                item = InvalidInput(
                    f"{path}:{n}: expected a JSON object, got {type(item).__name__}.", hint=hint
                )
            rows.append((n, item))
    return rows


def read_jsonl(
    path: Path, what: str, shape: str = "one JSON object per line"
) -> list[tuple[int, dict[str, object]]]:
    """The JSON objects of a JSON Lines file with their line numbers (see :func:`jsonl_rows`); the
    first line that holds none is raised."""
    rows: list[tuple[int, dict[str, object]]] = []
    for n, item in jsonl_rows(path, what, shape):
        if isinstance(item, InvalidInput):
            raise item
        rows.append((n, item))
    return rows
