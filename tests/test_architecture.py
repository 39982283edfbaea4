"""The layer order of docs/architecture.md, enforced: a package imports only from layers above it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "vaultlens"
ORDER = ["errors", "fsutil", "config", "vault", "chunking", "embedding", "index", "services", "server", "cli"]


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "vaultlens" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in ORDER else None


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_module_imports_only_from_layers_above(path: Path) -> None:
    own = _layer("vaultlens." + ".".join(path.relative_to(SRC).with_suffix("").parts))
    if own is None:
        return  # __init__, __main__
    allowed = set(ORDER[: ORDER.index(own) + 1])
    bad = {m for m in _imports(path) if (layer := _layer(m)) is not None and layer not in allowed}
    assert not bad, f"{path.relative_to(SRC)} ({own}) imports from lower layers: {sorted(bad)}"


BACKEND = SRC / "index" / "sqlite_store.py"
BACKEND_REGISTRY = SRC / "index" / "backends.py"


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_only_the_backend_registry_imports_the_sqlite_backend() -> None:
    importers = [
        p.relative_to(SRC).as_posix()
        for p in _sources()
        if p not in (BACKEND, BACKEND_REGISTRY) and "vaultlens.index.sqlite_store" in _imports(p)
    ]
    assert importers == [], "depend on vaultlens.index.store (the contract), not on the SQLite backend"


@pytest.mark.parametrize(
    ("pattern", "what"),
    [
        (r"\bMATCH\b", "FTS5 query syntax"),
        (r"bm25\(", "FTS5's BM25 function"),
        (r"df\s*\+\s*0\.5", "FTS5's idf formula"),
        (r"\bsqlite3\b", "SQLite itself"),
    ],
)
def test_backend_details_stay_in_the_backend(pattern: str, what: str) -> None:
    allowed = {BACKEND, SRC / "errors.py"} if what == "SQLite itself" else {BACKEND}
    leaks = [
        p.relative_to(SRC).as_posix()
        for p in _sources()
        if p not in allowed and re.search(pattern, p.read_text(encoding="utf-8"))
    ]
    assert leaks == [], f"{what} outside the SQLite backend: {leaks}"


def test_the_index_lifecycle_has_one_home() -> None:
    """The live folder, staging, the switch, wipe and the pointer file are defined in index/lifecycle.py only."""
    defines = re.compile(
        r"^\s*(POINTER\s*=|def (live_dir|live_index_dir|staging_dir|switch_to|write_pointer|read_pointer|"
        r"collect_garbage|discard_stale_staging|wipe_live|live_lock)\b)",
        re.M,
    )
    owners = [
        p.relative_to(SRC).as_posix() for p in _sources() if defines.search(p.read_text(encoding="utf-8"))
    ]
    assert owners == ["index/lifecycle.py"], owners


def test_services_and_indexer_take_the_store_protocol() -> None:
    for rel in ("index/indexer.py", "index/rebuild.py", "services/search.py", "services/discover.py"):
        text = (SRC / rel).read_text(encoding="utf-8")
        assert "SQLiteStore" not in text, rel
        assert "from vaultlens.index.store import" in text or "vaultlens.index.lifecycle" in text, rel
