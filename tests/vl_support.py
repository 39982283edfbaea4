"""Helpers shared by the test modules: vault builders, snapshots, an in-process CLI runner."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vaultlens.config.settings import Settings, load_settings
from vaultlens.embedding.base import EmbeddingProvider, EmbeddingSpace, Vectors
from vaultlens.index.indexer import Indexer, RunStats
from vaultlens.index.sqlite_store import DB_NAME, SQLiteStore

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
VAULTLENS_BIN = VENV_BIN / "vaultlens"


def write_vault(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create files under ``root`` (text is written as UTF-8 with the newlines given)."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return root


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (hidden ones included) -> SHA-256 of its bytes, or its link target."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = "symlink -> " + os.readlink(full)
            elif full.is_dir():
                out[rel] = "dir"
            else:
                try:
                    out[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
                except PermissionError:
                    st = full.stat()
                    out[rel] = f"unreadable size={st.st_size} mtime={st.st_mtime_ns}"
    return out


class RecordingProvider:
    """Delegates to a real provider and records every text it was asked to embed."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self.space: EmbeddingSpace = inner.space
        self.batch_size = inner.batch_size
        self.remote = inner.remote
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    @property
    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]

    def reset(self) -> None:
        self.calls.clear()


def settings(vault: Path | None = None, **overrides: str) -> Settings:
    return load_settings(vault, dict(overrides)).settings


def run_index(
    vault: Path, store_dir: Path, provider: EmbeddingProvider, s: Settings | None = None
) -> RunStats:
    """One indexing run with the real Indexer on a real SQLite store in ``store_dir``."""
    store = SQLiteStore(store_dir)
    try:
        return Indexer(vault, store, provider, s or settings(vault)).run()
    finally:
        store.close()


def db_rows(store_dir: Path, sql: str, params: Sequence[object] = ()) -> list[tuple[object, ...]]:
    """Read the store's SQLite file directly (read-only), as an outside observer."""
    con = sqlite3.connect(f"file:{store_dir / DB_NAME}?mode=ro", uri=True)
    try:
        return list(con.execute(sql, params))
    finally:
        con.close()


def chunk_keys(store_dir: Path) -> set[tuple[str, str]]:
    return {(str(r[0]), str(r[1])) for r in db_rows(store_dir, "SELECT id, content_hash FROM chunks")}


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None = field(default=None)

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(args: Sequence[str], stdin: str = "") -> CliResult:
    """Run ``vaultlens ARGS`` in this process through the console script's own entry point."""
    from vaultlens.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.argv, sys.stdin
    sys.argv = ["vaultlens", *args]
    sys.stdin = io.StringIO(stdin)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv, sys.stdin = old
    return CliResult(code, out.getvalue(), err.getvalue())


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """Environment for a real `vaultlens` subprocess: this test's home, no other VAULTLENS_* vars."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTLENS_")}
    env["VAULTLENS_HOME"] = str(home)
    env["COLUMNS"] = "200"
    env.update(extra)
    return env
