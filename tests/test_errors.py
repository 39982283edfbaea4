"""Every error has a code, an exit code and an HTTP status; sqlite3 and OS errors become clear
VaultlensErrors. The sqlite3 cases are raised by a real SQLite on real files; the permission
cases by the real OS (as root, the test drops its effective uid to nobody for the moment)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pwd
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import vaultlens.errors as errors_module
from vaultlens.errors import (
    Cancelled,
    ConfigError,
    ConsentRequired,
    DiskFull,
    FileSystemError,
    IndexLocked,
    PermissionDenied,
    ProviderTimeout,
    SpaceMismatch,
    StoreBusy,
    StoreCorrupt,
    StoreError,
    VaultlensError,
    translate_error,
    translated_errors,
)
from vl_support import run_without_file_access


def _all_error_classes() -> list[type[VaultlensError]]:
    found: list[type[VaultlensError]] = []
    todo: list[type[VaultlensError]] = [VaultlensError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [c for c in found if c.__module__ == errors_module.__name__]


def test_every_error_carries_code_exit_code_and_http_status() -> None:
    classes = _all_error_classes()
    assert len(classes) >= 18
    codes = [c.code for c in classes]
    assert len(codes) == len(set(codes)), "codes are unique"
    for cls in classes:
        assert "code" in vars(cls) or cls is VaultlensError, f"{cls.__name__} must name its own code"
        assert isinstance(cls.exit_code, int) and cls.exit_code > 0
        assert 400 <= cls.http_status <= 599, cls
        assert cls.__name__ in (errors_module.__doc__ or ""), f"{cls.__name__} missing from the tree drawing"


@pytest.mark.parametrize(
    ("cls", "code", "exit_code", "http_status"),
    [
        (ConfigError, "config", 2, 400),
        (ConsentRequired, "consent_required", 7, 403),
        (errors_module.VaultError, "vault", 2, 400),
        (errors_module.NoteNotFound, "note_not_found", 2, 404),
        (errors_module.EmptyQuery, "empty_query", 2, 400),
        (errors_module.ProviderError, "provider", 3, 502),
        (ProviderTimeout, "provider_timeout", 3, 504),
        (StoreError, "store", 4, 500),
        (errors_module.IndexNotFound, "index_not_found", 4, 404),
        (StoreCorrupt, "store_corrupt", 4, 500),
        (SpaceMismatch, "space_mismatch", 5, 409),
        (IndexLocked, "index_locked", 6, 423),
        (StoreBusy, "store_busy", 6, 503),
        (FileSystemError, "filesystem", 8, 500),
        (DiskFull, "disk_full", 8, 507),
        (PermissionDenied, "permission_denied", 8, 500),
        (Cancelled, "cancelled", 130, 499),
    ],
)
def test_the_table(cls: type[VaultlensError], code: str, exit_code: int, http_status: int) -> None:
    assert (cls.code, cls.exit_code, cls.http_status) == (code, exit_code, http_status)


def test_consent_required_carries_destination_and_what() -> None:
    exc = ConsentRequired("openai model m at https://api.example/v1", "the text of your notes")
    assert exc.destination == "openai model m at https://api.example/v1"
    assert exc.what == "the text of your notes"
    assert "https://api.example/v1" in exc.message and "the text of your notes" in exc.message
    assert "Nothing was sent" in (exc.hint or "") and "--yes" in (exc.hint or "")
    assert exc.to_dict() == {
        "code": "consent_required",
        "message": exc.message,
        "hint": exc.hint,
        "destination": exc.destination,
        "what": exc.what,
        "proposal": {"kind": "send", "destination": exc.destination, "what": exc.what},
    }
    assert isinstance(exc, VaultlensError) and not isinstance(exc, ConfigError)


def test_to_dict_of_a_plain_error() -> None:
    assert StoreError("Broken.").to_dict() == {"code": "store", "message": "Broken."}


# ---- real SQLite errors --------------------------------------------------------------------------


def _db(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x TEXT)")
    con.execute("INSERT INTO t VALUES ('a')")
    con.commit()
    con.close()
    return path


def _raised(action: str, path: Path, fn) -> VaultlensError:  # type: ignore[no-untyped-def]
    with pytest.raises(VaultlensError) as info, translated_errors(action, path):
        fn()
    assert isinstance(info.value.__cause__, sqlite3.Error | OSError)  # the original is kept for logs
    assert "Traceback" not in str(info.value)
    return info.value


def test_database_is_locked_becomes_store_busy(tmp_path: Path) -> None:
    path = _db(tmp_path / "index.sqlite")
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, timeout=0)
    try:
        exc = _raised("read the index", path, lambda: other.execute("SELECT * FROM t").fetchall())
    finally:
        holder.rollback()
        holder.close()
        other.close()
    assert type(exc) is StoreBusy
    assert exc.message == f"Could not read the index: the index at {path} is busy."
    assert "try again" in (exc.hint or "")
    assert (exc.exit_code, exc.http_status) == (6, 503)


def test_writing_a_read_only_database_is_permission_denied(tmp_path: Path) -> None:
    path = _db(tmp_path / "index.sqlite")
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        exc = _raised("write the index", path, lambda: con.execute("INSERT INTO t VALUES ('b')"))
    finally:
        con.close()
    assert type(exc) is PermissionDenied
    assert exc.message == f"Could not write the index: the index at {path} is read-only."
    assert exc.to_dict()["path"] == str(path)


_WRITE_CHILD = """
import json, sqlite3, sys
from vaultlens.errors import VaultlensError, translated_errors
con = sqlite3.connect(sys.argv[1])
try:
    with translated_errors("write the index", sys.argv[1]):
        con.execute("INSERT INTO t VALUES ('b')")
        con.commit()
except VaultlensError as e:
    print(json.dumps([type(e).__name__, e.message, e.hint, e.to_dict().get("path")]))
"""


@pytest.mark.skipif(os.name != "posix", reason="uses POSIX permissions")
@pytest.mark.parametrize("locked", ["folder", "file"])
def test_a_read_only_index_names_what_is_not_writable_and_not_rebuild(tmp_path: Path, locked: str) -> None:
    """SQLite says only "attempt to write a readonly database"; the user learns which folder or file
    vaultlens may not write to. A rebuild could not help, so it is not offered. The write runs in
    a child that feels file permissions (as root: without CAP_DAC_OVERRIDE)."""
    folder = tmp_path / "index"
    folder.mkdir()
    path = _db(folder / "index.sqlite")
    shut = folder if locked == "folder" else path
    shut.chmod(0o555 if locked == "folder" else 0o444)
    try:
        proc = run_without_file_access([sys.executable, "-c", _WRITE_CHILD, str(path)])
    finally:
        shut.chmod(0o755 if locked == "folder" else 0o644)
    assert proc.returncode == 0, proc.stderr
    kind, message, hint, where = json.loads(proc.stdout)
    assert kind == "PermissionDenied"
    assert message == f"Could not write the index: the index {locked} is not writable: {shut}."
    assert hint.startswith(f"Check the owner and permissions of {shut}: vaultlens must be able to write")
    assert "rebuild`" not in hint and "Rebuilding would not help" in hint
    assert where == str(shut)


def test_a_file_that_is_not_a_database_is_store_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    path.write_bytes(b"this is a note, not a database\n" * 200)
    con = sqlite3.connect(path)
    try:
        exc = _raised("open the index", path, lambda: con.execute("SELECT * FROM sqlite_master").fetchall())
    finally:
        con.close()
    assert type(exc) is StoreCorrupt
    assert "is damaged (file is not a database)" in exc.message
    assert "vaultlens rebuild" in (exc.hint or "")


def test_a_malformed_database_is_store_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 1024")
    con.execute("CREATE TABLE t (x TEXT)")
    con.execute("CREATE INDEX tx ON t (x)")
    con.executemany("INSERT INTO t VALUES (?)", [(f"row {i} " * 20,) for i in range(400)])
    con.commit()
    con.close()
    raw = bytearray(path.read_bytes())
    for page in range(2, len(raw) // 1024):  # scribble over every page but the header page
        raw[page * 1024 : page * 1024 + 64] = b"\xff" * 64
    path.write_bytes(bytes(raw))
    con = sqlite3.connect(path)
    try:
        exc = _raised(
            "read the index", path, lambda: con.execute("SELECT count(*), max(x) FROM t").fetchall()
        )
    finally:
        con.close()
    assert type(exc) is StoreCorrupt
    assert "malformed" in exc.message
    assert "vaultlens rebuild" in (exc.hint or "")


def test_database_or_disk_is_full_becomes_disk_full(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 1024")
    con.execute("CREATE TABLE t (x TEXT)")
    con.execute("PRAGMA max_page_count = 4")  # SQLite's own SQLITE_FULL, as on a full disk

    def fill() -> None:
        for _ in range(100):
            con.execute("INSERT INTO t VALUES (?)", ("x" * 900,))

    try:
        exc = _raised("write the index", path, fill)
    finally:
        con.close()
    assert type(exc) is DiskFull
    assert exc.message.startswith("Could not write the index: the disk is full")
    assert "Free some space" in (exc.hint or "")
    assert exc.http_status == 507


def test_opening_a_database_in_a_missing_folder(tmp_path: Path) -> None:
    path = tmp_path / "gone" / "index.sqlite"
    exc = _raised("open the index", path, lambda: sqlite3.connect(path))
    assert type(exc) is FileSystemError
    assert exc.message == f"Could not open the index: the folder {path.parent} does not exist."


def test_other_sqlite_errors_are_store_errors(tmp_path: Path) -> None:
    path = _db(tmp_path / "index.sqlite")
    con = sqlite3.connect(path)
    try:
        exc = _raised("read the index", path, lambda: con.execute("SELECT nope FROM t"))
    finally:
        con.close()
    assert type(exc) is StoreError
    assert "no such column: nope" in exc.message


# ---- real OS errors ------------------------------------------------------------------------------


@contextlib.contextmanager
def _denied(folder: Path) -> Iterator[Path]:
    """A folder this process may not enter: as root, by becoming nobody for the block (root
    passes every permission check); otherwise by taking the folder's permissions away."""
    folder.mkdir(mode=0o700)
    if os.geteuid() == 0:
        try:
            nobody = pwd.getpwnam("nobody").pw_uid
        except KeyError:
            pytest.skip("no 'nobody' user to drop privileges to")
        os.seteuid(nobody)
        try:
            yield folder
        finally:
            os.seteuid(0)
    else:
        folder.chmod(0)
        try:
            yield folder
        finally:
            folder.chmod(0o700)


@pytest.mark.skipif(os.name != "posix", reason="uses POSIX permissions")
def test_sqlite_cannot_open_for_lack_of_permission(tmp_path: Path) -> None:
    (tmp_path / "private").mkdir(mode=0o700)
    with _denied(tmp_path / "private" / "index") as folder:
        path = folder / "index.sqlite"
        exc = _raised("open the index", path, lambda: sqlite3.connect(path))
    assert type(exc) is PermissionDenied
    assert "permission denied" in exc.message and str(path) in exc.message
    assert "permissions" in (exc.hint or "")


@pytest.mark.skipif(os.name != "posix", reason="uses POSIX permissions")
def test_a_real_permission_error_names_the_path(tmp_path: Path) -> None:
    with _denied(tmp_path / "private") as folder:
        target = folder / "consent.json"
        exc = _raised("save your agreement", target, lambda: target.write_text("[]"))
    assert type(exc) is PermissionDenied
    assert exc.message == f"Could not save your agreement: permission denied for {target}."
    assert exc.hint == f"Check the owner and permissions of {target}."
    assert exc.to_dict()["path"] == str(target)


def test_a_missing_file_is_a_file_system_error_with_strerror_and_path(tmp_path: Path) -> None:
    target = tmp_path / "missing.txt"
    exc = _raised("read the pointer", target, target.read_bytes)
    assert type(exc) is FileSystemError
    assert exc.message == f"Could not read the pointer: no such file or directory ({target})."


@pytest.mark.parametrize("code", [errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)])
def test_no_space_and_quota_are_disk_full(code: int, tmp_path: Path) -> None:
    exc = translate_error(OSError(code, os.strerror(code), str(tmp_path / "x")), "write the cache")
    assert type(exc) is DiskFull
    assert exc.message == f"Could not write the cache: the disk is full ({tmp_path / 'x'})."


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (errno.EACCES, "permission denied"),
        (errno.EPERM, "permission denied"),
        (errno.EROFS, "the file system is read-only"),
    ],
)
def test_denials_name_the_path(code: int, why: str) -> None:
    exc = translate_error(OSError(code, os.strerror(code), "/data/index.sqlite"), "write the index")
    assert type(exc) is PermissionDenied
    assert exc.message == f"Could not write the index: {why} for /data/index.sqlite."


def test_without_an_action_the_message_is_still_a_sentence() -> None:
    with pytest.raises(DiskFull) as info, translated_errors():
        raise OSError(errno.ENOSPC, "No space left on device", "/data/x")
    assert info.value.message == "The disk is full (/data/x)."


def test_vaultlens_errors_and_other_exceptions_pass_through() -> None:
    original = IndexLocked("Another process is writing this index.")
    with pytest.raises(IndexLocked) as info, translated_errors("index the vault"):
        raise original
    assert info.value is original
    with pytest.raises(KeyError), translated_errors("index the vault"):
        raise KeyError("a bug stays a bug")
    assert translate_error(original, "x") is original


def test_it_works_as_a_decorator(tmp_path: Path) -> None:
    @translated_errors("read the settings")
    def read() -> bytes:
        return (tmp_path / "nope.toml").read_bytes()

    with pytest.raises(FileSystemError, match="Could not read the settings: no such file"):
        read()
