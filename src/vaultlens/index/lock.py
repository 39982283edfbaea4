"""One writer per index, across processes: an OS file lock that dies with its holder.

The lock is taken with portalocker (``flock`` on POSIX, ``msvcrt.locking`` on Windows), on a
descriptor of our own, non-blocking. The OS releases it when the process exits for any
reason (kill -9 included), so a lock left by a crashed process is never stale. Each
:class:`WriterLock` opens its own descriptor, so a second lock on the same folder is refused
inside one process too, not only across processes.

The holder's PID is written into ``writer.lock`` only to name it in the error message; on
Windows the locked bytes cannot be read by others, so the message may say "unknown".
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from vaultlens.errors import IndexLocked, StoreError, translated_errors

LOCK_NAME = "writer.lock"


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who holds a writer lock, as the holder wrote it into the lock file."""

    pid: int
    command: str = ""

    def __str__(self) -> str:
        return f"PID {self.pid}" + (f": {self.command}" if self.command else "")

    def as_dict(self) -> dict[str, int | str]:
        return {"pid": self.pid, "command": self.command}


def _holder(fd: int) -> LockHolder | None:
    """The current holder as it wrote itself, or None (not written yet, unreadable)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
    except OSError:
        return None
    pid, _, command = raw.decode("utf-8", "replace").strip().partition("\n")
    if not pid.strip().isdigit():
        return None
    return LockHolder(int(pid), command.strip())


def _me() -> bytes:
    """What a holder writes into the lock file: its PID and its command line, to name it to others."""
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
    return f"{os.getpid()}\n{command[:1000]}".encode("utf-8", "replace")


def process_alive(pid: int) -> bool:
    """Whether a process with this PID exists (one owned by another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


class WriterLock:
    def __init__(self, directory: Path, what: str = "this index") -> None:
        self.path = directory / LOCK_NAME
        self.what = what
        with translated_errors("create the index folder", directory):
            directory.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> LockHolder | None:
        """Who holds the lock now, as it wrote itself (None: nobody, or not written yet, or unreadable)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            return _holder(fd)
        finally:
            os.close(fd)

    def busy(self) -> bool:
        """True when another holder has the lock right now (probes without keeping it)."""
        try:
            self.acquire()
        except IndexLocked:
            return True
        self.release()
        return False

    def acquire(self) -> None:
        import portalocker  # imported by writers only: readers and --help skip its start-up cost
        from portalocker.exceptions import AlreadyLocked, LockException

        with translated_errors("open the writer lock", self.path):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            portalocker.lock(fd, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except AlreadyLocked:
            holder = _holder(fd)
            os.close(fd)
            raise IndexLocked(
                f"Another vaultlens process ({holder or 'unknown'}) is writing {self.what}.",
                hint="Wait for it to finish or stop it; searches keep working meanwhile.",
            ) from None
        except LockException as exc:
            os.close(fd)
            raise StoreError(f"Could not lock {self.path}: {exc}.") from exc
        with contextlib.suppress(OSError):  # the PID only names the holder; the lock is held anyway
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, _me())
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        import portalocker
        from portalocker.exceptions import LockException

        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        with contextlib.suppress(LockException, OSError):
            portalocker.unlock(fd)  # closing below releases it anyway
        os.close(fd)

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
