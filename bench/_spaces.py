"""Shared by the rebuild and crash benches: a seeded vault, and embedding spaces served by the
scripted loopback server (tests/scripted_server.py) in its own process, so the bench's own
searches do not share a GIL with the server that embeds for the rebuild."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

from _common import REPO

WORDS = [
    "river",
    "mountain",
    "bread",
    "starter",
    "cache",
    "latency",
    "garden",
    "budget",
    "train",
    "ticket",
    "server",
    "policy",
    "header",
    "browser",
    "tomato",
    "flour",
    "water",
    "backup",
    "restore",
    "index",
    "query",
    "invoice",
    "token",
    "stale",
    "fresh",
]

SERVER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from scripted_server import ScriptedEmbeddingServer, Step
from space_support import _Forever
server = ScriptedEmbeddingServer(dims=int(sys.argv[2]), port=int(sys.argv[4]))
server.script = _Forever(Step(delay=float(sys.argv[3])))
with server:
    print(server.url, flush=True)
    while True:
        time.sleep(3600)
"""


def write_notes(vault: Path, n: int, seed: int) -> None:
    """``n`` notes of two sections each, seeded: note i holds the rare word ``uniqueI``."""
    rng = random.Random(seed)
    for i in range(n):
        path = vault / f"topic{i % 20}" / f"note{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = " ".join(rng.choice(WORDS) for _ in range(80))
        tail = " ".join(rng.choice(WORDS) for _ in range(60))
        path.write_text(f"# Note {i}\n\n{body}\n\n## More\n\nunique{i} {tail}\n", encoding="utf-8")


def start_server(dims: int, delay: float, port: int = 0) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in a child process; every answer waits ``delay`` seconds (``port`` 0: a free one)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(REPO / "tests"), str(dims), str(delay), str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = (proc.stdout.readline() if proc.stdout else "").strip()
    if not url:
        sys.exit("error: the scripted embedding server did not start")
    return proc, url


def space(url: str, model: str, dims: int, batch: int = 32) -> dict[str, str]:
    """Settings of one embedding space on the scripted server (spaces differ by model name)."""
    return {
        "embedding.provider": "ollama",
        "embedding.endpoint": url,
        "embedding.model": model,
        "embedding.dimensions": str(dims),
        "embedding.batch_size": str(batch),
    }


def env_for(overrides: dict[str, str], **extra: str) -> dict[str, str]:
    """A child's environment with these settings as VAULTLENS_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTLENS_")}
    env["VAULTLENS_HOME"] = os.environ["VAULTLENS_HOME"]
    env.update({"VAULTLENS_" + k.replace(".", "__").upper(): v for k, v in overrides.items()})
    env.update(extra)
    return env
