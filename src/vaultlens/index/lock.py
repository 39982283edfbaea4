"""One writer per index, across processes: an OS file lock that dies with its holder.

``flock`` is released by the kernel when the process exits for any reason (kill -9
included), so a lock left by a crashed process is never stale; the PID written into the
file is only there to name the holder in the error message.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from vaultlens.errors import IndexLocked


class WriterLock:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "writer.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise IndexLocked(
                f"Another vaultlens process (PID {holder}) is writing this index.",
                hint="Wait for it to finish or stop it; searches keep working meanwhile.",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
