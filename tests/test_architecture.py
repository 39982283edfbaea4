"""The layer order of docs/architecture.md, enforced: a package imports only from layers above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "vaultlens"
ORDER = ["errors", "config", "vault", "chunking", "embedding", "index", "services", "cli"]


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
