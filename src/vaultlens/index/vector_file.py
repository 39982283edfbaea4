"""Rows of the vector cache file read one at a time, for the exact re-score past the ANN threshold.

The store mirrors its float32 vectors in ``matrix-<store id>-<generation>.ids.npy`` (chunk keys,
ascending) and ``.vecs.npy`` (one row per key). Below the ANN threshold searches map the whole
matrix; past it a search needs only a few hundred rows (the tier's candidates, the lexical hits, the
top notes' chunks), and reading each from SQLite costs three B-tree lookups (chunk row, embed-hash
index, vector row). Here a key is found by binary search in the memory-mapped ids and its row is
read with one ``pread`` (a run of adjacent rows with one): one page per vector, and nothing of the
matrix held or mapped, so a server's memory does not grow with it. Which keys changed since the file was written is the
store's business (it reads those from SQLite).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from vaultlens.fsutil import atomic_file

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


_PREAD: Callable[[int, int, int], bytes] | None = getattr(os, "pread", None)  # not on Windows


class RowFile:
    """Fixed-size rows of an open file read by position: ``pread`` where the OS has it (threads share
    the file without a seek position), else a seek and a read under a lock. Nothing is mapped, so a
    pass over every row leaves them in the OS's file cache, not in the reader's memory."""

    def __init__(self, file: BinaryIO, offset: int, row_bytes: int) -> None:
        self.file = file  # closed by its owner
        self._offset, self._row = offset, row_bytes  # where row 0 starts; bytes per row
        self._lock = threading.Lock()

    def read(self, first: int, count: int = 1) -> bytes:
        """Rows ``first`` .. ``first + count - 1`` (fewer bytes when the file ended early)."""
        offset, size = self._offset + first * self._row, count * self._row
        if _PREAD is not None:
            return _PREAD(self.file.fileno(), size, offset)
        with self._lock:
            self.file.seek(offset)
            return self.file.read(size)


class VectorFile:
    """One generation's vector cache, opened for row reads; :meth:`open` refuses a file it cannot trust
    the layout of (wrong dtype or shape, keys not ascending, a size that does not match its header)."""

    def __init__(self, ids: npt.NDArray[np.int64], file: BinaryIO, offset: int, dims: int) -> None:
        self.ids = ids  # memory-mapped: a lookup touches log2(n) of its pages
        self.dims = dims
        self._file = file  # unbuffered; closed with this object
        self._rows = RowFile(file, offset, dims * 4)

    @classmethod
    def open(cls, ids_file: Path, vec_file: Path, dims: int) -> VectorFile | None:
        import numpy as np

        fmt = np.lib.format
        fh = None
        try:
            ids = np.load(ids_file, mmap_mode="r")
            fh = vec_file.open("rb", buffering=0)
            version = fmt.read_magic(fh)
            read_header = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}[version]
            shape, fortran, dtype = read_header(fh)
            rows = ids.shape[0] if ids.ndim == 1 else -1
            fits = (
                ids.dtype == np.int64
                and dtype == np.dtype("<f4")
                and not fortran
                and shape == (rows, dims)
                and os.fstat(fh.fileno()).st_size == fh.tell() + rows * dims * 4
                and bool(np.all(ids[1:] > ids[:-1]))
            )
        except (OSError, ValueError, KeyError):
            fits = False
        if not fits:
            if fh is not None:
                fh.close()
            return None
        assert fh is not None
        return cls(ids, fh, fh.tell(), dims)

    def read(self, keys: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """(the keys of ``keys`` the file holds, their vectors), in the order of ``keys``."""
        import numpy as np

        n = self.ids.shape[0]
        pos = np.searchsorted(self.ids, keys)
        have = pos < n
        have[have] = self.ids[pos[have]] == keys[have]
        rows = pos[have]
        size = self.dims * 4
        # one read per run of adjacent rows: a note's chunks are adjacent (a search reads whole notes)
        starts = np.flatnonzero(np.diff(rows, prepend=-2) != 1)
        counts = np.diff(starts, append=rows.size)
        data = b"".join(
            [self._rows.read(p, n) for p, n in zip(rows[starts].tolist(), counts.tolist(), strict=True)]
        )
        if len(data) != rows.size * size:  # truncated since it was opened
            raise OSError(f"vector file ended early ({len(data)} of {rows.size * size} bytes)")
        return keys[have], np.frombuffer(data, dtype=np.float32).reshape(rows.size, self.dims)


def write_matrix(
    ids_file: Path, vec_file: Path, ids: npt.NDArray[np.int64], blocks: Iterable[npt.NDArray[Any]], dims: int
) -> None:
    """Write a vector cache: ``ids`` (ascending) and the float32 rows of ``blocks`` in their order, a block
    at a time (the matrix is never held), each file replaced atomically, the vectors last (readers check
    them). Raises OSError (a read-only folder)."""
    import numpy as np

    with atomic_file(ids_file, durable=False) as fh:
        np.save(fh, np.asarray(ids, dtype=np.int64))
    header = {"descr": "<f4", "fortran_order": False, "shape": (len(ids), dims)}
    with atomic_file(vec_file, durable=False) as fh:
        np.lib.format.write_array_header_2_0(fh, header)
        for block in blocks:
            fh.write(np.ascontiguousarray(block, dtype="<f4").tobytes())


def _map_matrix(
    ids_file: Path, vec_file: Path
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None:
    """(ids, memory-mapped vectors) of a vector cache, or None when it is missing, unreadable, empty (an
    empty array cannot be mapped) or its two files disagree."""
    import numpy as np

    try:
        ids, vecs = np.load(ids_file), np.load(vec_file, mmap_mode="r")
    except (OSError, ValueError):
        return None
    return (ids, vecs) if vecs.shape[0] == ids.shape[0] else None


def cached_matrix(
    files: tuple[Path, Path],
    write: Callable[[], bool],
    read: Callable[[], tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """A store's matrix: its vector cache ``files`` mapped, written first by ``write`` when missing or
    unreadable (False: the folder cannot be written), else ``read`` into memory (a read-only folder, or
    an empty matrix, which cannot be mapped)."""
    mapped = _map_matrix(*files)
    if mapped is None and write():
        mapped = _map_matrix(*files)
    return mapped if mapped is not None else read()
