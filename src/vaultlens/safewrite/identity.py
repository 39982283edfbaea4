"""Which journal is a vault's: an id that survives moving the vault folder.

Keyed by the vault's absolute path, the journal was lost to ``history`` and ``undo`` as soon as
the folder moved. Each vault now has a random id: its journal is ``journals/<id>/`` under
``VAULTLENS_HOME``, holding ``vault.json`` (the id, the last path, the folder's device and inode),
and a ``vault-id`` file beside the vault's index (which stays keyed by path) names it. Nothing is
written into the vault: a marker file there would be synced, copied with the vault and shared by
every copy, and the vault would change. So the id is found from what survives a move instead,
first match wins:

1. ``vault-id`` beside the index of this path, when its journal was recorded for this very folder
   (a new folder at the path of a vault that moved away is not that vault): the vault has not
   moved; or else the journal of the older layout, keyed by this path, adopted as it is;
2. a journal recorded for this very folder (same device and inode): the folder was moved or
   renamed on its file system, or is opened through another path (a symlink resolves to the
   same folder anyway);
3. a journal whose folder is gone from its recorded path and whose applied writes this vault's
   notes still hold byte for byte (moved to another file system, that is copied and deleted);
   taken only when exactly one journal fits.

Whatever step found it, the vault's current path, device and inode are recorded again, so the
next move is found by step 2. Limits: a folder moved across file systems whose journal holds no
applied write still holds its notes' old text starts a new journal (the old one stays on disk);
an inode the file system reuses for a new folder after the old vault was deleted leads it to the
old journal, where undo still refuses any note that is not byte for byte what was written.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, overload

from vaultlens.chunking.source import read_note
from vaultlens.config import paths
from vaultlens.errors import VaultlensError, translated_errors
from vaultlens.fsutil import atomic_write
from vaultlens.safewrite.journal import Journal

__all__ = ["find_journal", "journal_root"]

RECORD = "vault.json"
ID_FILE = "vault-id"
CLAIM_LOCK = ".claim.lock"  # in the journals folder: finding or claiming an id, one process at a time


def _record(folder: Path) -> dict[str, object] | None:
    """A journal folder's ``vault.json`` (folders of the older layout have none)."""
    with contextlib.suppress(OSError, ValueError):
        record = json.loads((folder / RECORD).read_bytes())
        if isinstance(record, dict):
            return record
    return None


def _records(journals: Path) -> list[tuple[Path, dict[str, object]]]:
    """Every journal folder with its ``vault.json``."""
    if not journals.is_dir():
        return []
    return [(folder, r) for folder in sorted(journals.iterdir()) if (r := _record(folder)) is not None]


def _claimed_id(vault: Path) -> str | None:
    """The id named beside the vault's index, if it is a plausible folder name."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        vault_id = (paths.index_dir(vault) / ID_FILE).read_text(encoding="utf-8").strip()
        if vault_id and "/" not in vault_id and "\\" not in vault_id and vault_id not in (".", ".."):
            return vault_id
    return None


def _named_by_index(vault: Path, journals: Path, device: int, inode: int) -> Path | None:
    """The journal the id beside this path's index names, unless it was recorded for another folder:
    then the vault that had this path moved away, and a new folder took its place."""
    vault_id = _claimed_id(vault)
    folder = journals / vault_id if vault_id else None
    if folder is None or not folder.is_dir():
        return None
    record = _record(folder)
    if record is not None and (record.get("device"), record.get("inode")) != (device, inode):
        return None
    return folder


def _claim_new(vault: Path, journals: Path) -> Path:
    """A new journal folder; its id is claimed beside the index with a hard link (which fails when
    the name exists), so two processes planning a vault's first change at once agree on one id."""
    id_file = paths.index_dir(vault) / ID_FILE
    id_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = id_file.with_name(f".{ID_FILE}.{os.getpid()}.tmp")
    try:
        atomic_write(tmp, uuid.uuid4().hex + "\n", mode=0o600)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, id_file)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    vault_id = _claimed_id(vault)
    if vault_id is None:  # an unreadable claim: replace it with a fresh one
        vault_id = uuid.uuid4().hex
        atomic_write(id_file, vault_id + "\n", mode=0o600)
    (journals / vault_id).mkdir(parents=True, exist_ok=True)
    return journals / vault_id


def _same_folder(records: list[tuple[Path, dict[str, object]]], device: int, inode: int) -> Path | None:
    return next((f for f, r in records if (r.get("device"), r.get("inode")) == (device, inode)), None)


def _holds_its_writes(vault: Path, folder: Path) -> bool:
    """Whether ``vault``'s notes still hold, byte for byte, at least one write this journal applied."""
    try:
        entries = list(Journal(folder).entries())
    except VaultlensError:  # a damaged entry: that journal is no evidence
        return False
    for entry in entries:
        if entry.state == "applied" and entry.after_sha is not None:
            with contextlib.suppress(VaultlensError):  # read as safewrite reads: never out of the vault
                if read_note(vault, entry.path).file_hash == entry.after_sha:
                    return True
    return False


def _moved_here(vault: Path, records: list[tuple[Path, dict[str, object]]]) -> Path | None:
    gone = [f for f, r in records if not (isinstance(r.get("path"), str) and Path(str(r["path"])).is_dir())]
    fits = [f for f in gone if _holds_its_writes(vault, f)]
    return fits[0] if len(fits) == 1 else None


def _remember(vault: Path, folder: Path, where: str, device: int, inode: int) -> None:
    """Record where the vault is now, in its journal and beside its index (only what changed)."""
    record = {"id": folder.name, "path": where, "device": device, "inode": inode}
    with contextlib.suppress(OSError, ValueError):
        if json.loads((folder / RECORD).read_bytes()) == record:
            record = {}
    if record:
        atomic_write(folder / RECORD, json.dumps(record, ensure_ascii=False) + "\n", mode=0o600)
    id_file = paths.index_dir(vault) / ID_FILE
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if id_file.read_text(encoding="utf-8").strip() == folder.name:
            return
    atomic_write(id_file, folder.name + "\n", mode=0o600)


@overload
def _locate(vault: Path, create: Literal[True]) -> Path: ...
@overload
def _locate(vault: Path, create: Literal[False]) -> Path | None: ...
def _locate(vault: Path, create: bool) -> Path | None:
    journals = paths.journals_dir()
    if not create:
        return _find_or_claim(vault, journals, create=False)
    with translated_errors("find the vault's journal", journals), _claiming(journals):
        return _find_or_claim(vault, journals, create=True)


@contextlib.contextmanager
def _claiming(journals: Path) -> Iterator[None]:
    """Processes planning a vault's first change at once must agree on one id: one could otherwise
    drop the claim another just made (before its journal folder exists) and claim a second id. The
    find-or-claim runs under a blocking lock on the journals folder, held for milliseconds."""
    import portalocker

    journals.mkdir(parents=True, exist_ok=True)
    with portalocker.Lock(str(journals / CLAIM_LOCK), mode="a", timeout=60):
        yield


def _find_or_claim(vault: Path, journals: Path, create: bool) -> Path | None:
    resolved = vault.resolve()
    with translated_errors("find the vault's journal", journals):
        st = resolved.stat()
        found = _named_by_index(vault, journals, st.st_dev, st.st_ino)
        if found is None and paths.legacy_journal_dir(vault).is_dir():
            found = paths.legacy_journal_dir(vault)
        if found is None:
            records = _records(journals)
            found = _same_folder(records, st.st_dev, st.st_ino) or _moved_here(resolved, records)
        if found is None:
            if not create:
                return None
            with contextlib.suppress(FileNotFoundError):  # a claim that names the moved vault's journal
                (paths.index_dir(vault) / ID_FILE).unlink()
            found = _claim_new(vault, journals)
        if create:
            _remember(vault, found, str(resolved), st.st_dev, st.st_ino)
        else:  # a reader records what it found when it can; a read-only home is no reason to fail
            with contextlib.suppress(OSError):
                _remember(vault, found, str(resolved), st.st_dev, st.st_ino)
        return found


def journal_root(vault: Path) -> Path:
    """The folder of ``vault``'s journal (see the module docstring), a new one when it has none."""
    return _locate(vault, create=True)


def find_journal(vault: Path) -> Path | None:
    """The folder of ``vault``'s journal for a reader; None when the vault has none."""
    return _locate(vault, create=False)
