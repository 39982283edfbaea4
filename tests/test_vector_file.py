"""Rows of the vector cache file by key (index/vector_file.py): exact rows in the order asked, unknown
keys left out, one read per run of adjacent rows, and a file cut short refused."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from vaultlens.index import vector_file
from vaultlens.index.vector_file import VectorFile

DIMS = 8


def cache_files(folder: Path, keys: list[int]) -> tuple[Path, Path, np.ndarray]:
    vecs = np.random.default_rng(3).standard_normal((len(keys), DIMS)).astype(np.float32)
    ids_file, vec_file = folder / "m.ids.npy", folder / "m.vecs.npy"
    np.save(ids_file, np.array(keys, dtype=np.int64))
    np.save(vec_file, vecs)
    return ids_file, vec_file, vecs


def test_rows_come_back_exact_in_the_order_asked_one_read_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = [10, 11, 12, 13, 20, 30, 31, 40]  # file rows 0..7
    ids_file, vec_file, vecs = cache_files(tmp_path, keys)
    reads: list[tuple[int, int]] = []

    def counted(fd: int, size: int, offset: int) -> bytes:
        reads.append((size, offset))
        return os.pread(fd, size, offset)

    monkeypatch.setattr(vector_file, "_PREAD", counted)
    opened = VectorFile.open(ids_file, vec_file, DIMS)
    assert opened is not None
    asked = np.array([11, 12, 13, 99, 30, 31, 10, 40, 5], dtype=np.int64)
    found, rows = opened.read(asked)
    assert found.tolist() == [11, 12, 13, 30, 31, 10, 40]  # 99 and 5 are not in the file
    assert np.array_equal(rows, vecs[[1, 2, 3, 5, 6, 0, 7]])
    assert [size // (DIMS * 4) for size, _ in reads] == [3, 2, 1, 1]  # rows 1-3, 5-6, 0, 7


def test_a_file_cut_short_inside_a_run_is_refused(tmp_path: Path) -> None:
    ids_file, vec_file, _ = cache_files(tmp_path, [1, 2, 3, 4])
    opened = VectorFile.open(ids_file, vec_file, DIMS)
    assert opened is not None
    with vec_file.open("r+b") as fh:
        fh.truncate(os.path.getsize(vec_file) - DIMS * 4 - 1)  # cut inside the last row
    with pytest.raises(OSError, match="ended early"):
        opened.read(np.array([2, 3, 4], dtype=np.int64))
