"""The layer order of docs/architecture.md, enforced: a package imports only from layers above it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "vaultlens"
ORDER = [
    "errors",
    "fsutil",
    "config",
    "vault",
    "chunking",
    "embedding",
    "llm",
    "index",
    "safewrite",
    "services",
    "server",
    "cli",
]


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
        r"collect_garbage|discard_stale_staging|start_over|live_lock)\b)",
        re.M,
    )
    owners = [
        p.relative_to(SRC).as_posix() for p in _sources() if defines.search(p.read_text(encoding="utf-8"))
    ]
    assert owners == ["index/lifecycle.py"], owners


def test_services_and_indexer_take_the_store_protocol() -> None:
    for rel in (
        "index/indexer.py",
        "index/rebuild.py",
        "services/search.py",
        "services/discover.py",
        "services/duplicates.py",
        "services/compare.py",
        "services/layout.py",
    ):
        text = (SRC / rel).read_text(encoding="utf-8")
        assert "SQLiteStore" not in text, rel
        assert "from vaultlens.index.store import" in text or "vaultlens.index.lifecycle" in text, rel


# Calls that create, replace, move or delete files. Only safewrite may aim them at a vault; the
# modules listed below use them for vaultlens's own data under VAULTLENS_HOME (indexes, caches,
# consent, locks, the journal) or for the BEIR corpus that `eval beir` writes there.
_FILE_WRITES = {
    "write_bytes", "write_text", "symlink_to", "unlink", "rmdir", "rmtree", "mkdir", "makedirs", "touch",
    "chmod", "copy2", "copyfile", "copytree", "atomic_write", "atomic_file", "fdopen",
}  # fmt: skip
_MODULE_WRITES = {"replace", "rename", "link", "remove", "move", "copy", "open"}  # as os.X / shutil.X
_WRITES_UNDER_HOME = {
    "fsutil.py", "config/consent.py", "config/paths.py", "index/lifecycle.py", "index/lock.py",
    "index/sqlite_store.py", "services/evaluation.py",
    "services/audit/report_files.py",  # audit reports: only outside the vault (refuses a folder inside it)
    "services/audit/outline_cache.py",  # under VAULTLENS_HOME
    "services/audit/deep_cache.py",  # deep audit's per-note results, under VAULTLENS_HOME
    "server/runtime.py",  # serve.json beside the index, under VAULTLENS_HOME
}  # fmt: skip


def _write_mode(node: ast.Call, position: int) -> bool:
    modes = [a.value for a in node.args[position : position + 1] if isinstance(a, ast.Constant)]
    modes += [
        k.value.value
        for k in node.keywords
        if k.arg in ("mode", "flags") and isinstance(k.value, ast.Constant)
    ]
    return any(isinstance(m, str) and bool(set(m) & set("wax+")) for m in modes)


def _writes(path: Path) -> list[str]:
    """File-writing calls in ``path``: the names above, ``os.replace``-like calls, writing ``open``s."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            hit = func.id in _FILE_WRITES or (func.id == "open" and _write_mode(node, 1))
        elif isinstance(func, ast.Attribute):
            on_module = isinstance(func.value, ast.Name) and func.value.id in ("os", "shutil")
            hit = (
                func.attr in _FILE_WRITES
                or (on_module and func.attr in _MODULE_WRITES and func.attr != "open")
                or (on_module and func.attr == "open")  # os.open: flags decide; treat as a write
                or (func.attr == "open" and not on_module and _write_mode(node, 0))
            )
        else:
            hit = False
        if hit:
            found.append(f"{ast.unparse(func)}() line {node.lineno}")
    return found


def test_only_safewrite_writes_into_the_vault() -> None:
    """Every file write outside safewrite is in a module that writes only under VAULTLENS_HOME."""
    leaks = {
        rel: calls
        for p in _sources()
        if not (rel := p.relative_to(SRC).as_posix()).startswith("safewrite/")
        and rel not in _WRITES_UNDER_HOME
        and (calls := _writes(p))
    }
    assert leaks == {}, f"file writes outside safewrite: {leaks}"


def test_the_write_check_sees_writes(tmp_path: Path) -> None:
    """The check above finds each kind of write it forbids and ignores reads (it cannot pass vacuously)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os, shutil\nfrom pathlib import Path\n"
        "Path('x').write_text('y')\nos.replace('a', 'b')\nopen('f', 'w')\nPath('x').open('ab')\n"
        "shutil.move('a', 'b')\nos.open('f', os.O_WRONLY)\n"
        "open('r')\nPath('x').open()\n'abc'.replace('a', 'b')\nPath('x').read_bytes()\n",
        encoding="utf-8",
    )
    assert len(_writes(sample)) == 6
