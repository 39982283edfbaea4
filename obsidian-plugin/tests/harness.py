"""A real `vaultlens serve` on loopback for the plugin's tests (vitest's globalSetup runs this).

It writes a small vault (English and Russian notes, a pair to review), starts the scripted model
server of the Python suite (tests/scripted_chat_server.py: the one allowed stand-in, for the LLM;
named as 0.0.0.0, which reaches it but is no loopback name, so it counts as remote and Ask asks
for consent as it would for a cloud model),
indexes the vault with the bundled model (quality tier off, to stay fast), spawns `vaultlens serve`
on a free port, prints one JSON line (urls and paths) and keeps everything up until stdin closes.
`--vault DIR` copies that vault instead, `--answer TEXT` replaces ANSWER (scripts/screenshots.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from scripted_chat_server import ChatStep, ScriptedChatServer  # noqa: E402
from test_review import link_answer  # noqa: E402
from vaultlens.services.asking.chat import REWRITE_PROMPT  # noqa: E402

ANSWER = "Feed the starter rye flour every day [S1]; see also [S9]."
REWRITTEN = "How warm should the sourdough starter be kept?"  # every follow-up, rewritten
SLOW = "SLOW-ANSWER"  # a question holding this is answered slowly, at length
NOTES = {
    "Bread/Starter.md": "# Starter\n\n## Feeding\n\nFeed the sourdough starter rye flour and water every day.\n"
    "Keep it warm so the yeast stays active.\n",
    "Garden/Tomatoes.md": "# Tomatoes\n\nWater tomato plants deeply twice a week and stake them.\n",
    "Физика/Гравитация.md": "# Гравитация\n\nЯблоко падает на землю из-за силы тяжести Земли.\n",
    "Study/Caching/Cache lifetime.md": "# Cache lifetime\n\nA cached value expires after its TTL.\n",
    "Study/Systems/Cache lifetime.md": "# Cache lifetime\n\nEvery entry lives five minutes.\n",
}


class Model(ScriptedChatServer):
    """Answers a review prompt (it names its NONCE) with a valid link review, a follow-up's rewrite
    with REWRITTEN, anything else with ANSWER."""

    def _respond(self, handler: BaseHTTPRequestHandler, body: Any, step: Any) -> None:
        if isinstance(body, dict) and "messages" in body and step.status < 400:
            if body["messages"][0]["content"] == REWRITE_PROMPT:
                step = ChatStep(reply=json.dumps({"question": REWRITTEN}))
            elif SLOW in body["messages"][-1]["content"]:  # an answer to stop halfway
                step = ChatStep(reply=" ".join(f"word{n}" for n in range(400)), piece_delay=0.05)
            found = re.search(r"NONCE is ([0-9a-f]+)\.", body["messages"][-1]["content"])
            if found:
                step = ChatStep(reply=json.dumps(link_answer(found.group(1))))
        super()._respond(handler, body, step)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path, help="copy this vault instead of writing the test notes")
    parser.add_argument("--answer", default=ANSWER, help="what the model answers a question")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="vaultlens-plugin-"))
    vault, home = root / "vault", root / "home"
    if args.vault is not None:
        shutil.copytree(args.vault, vault)
    else:
        for rel, text in NOTES.items():
            (vault / rel).parent.mkdir(parents=True, exist_ok=True)
            (vault / rel).write_bytes(text.encode("utf-8"))
    env = {**os.environ, "VAULTLENS_HOME": str(home), "PYTHONPATH": str(REPO / "src")}
    with Model(args.answer) as model:
        settings = {"embedding.tier": "off", "llm.provider": "openai-compatible", "llm.model": "chat-test",
                    "llm.endpoint": model.url.replace("127.0.0.1", "0.0.0.0") + "/v1", "llm.max_retries": "0", "llm.read_timeout_s": "10"}  # fmt: skip
        sets = [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
        cli = [sys.executable, "-m", "vaultlens"]
        subprocess.run(
            [*cli, "index", "--vault", str(vault), *sets], env=env, check=True, capture_output=True
        )
        port = free_port()
        server = subprocess.Popen(
            [*cli, "serve", "--vault", str(vault), "--port", str(port), *sets],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(root / "serve.log", "wb"),  # noqa: SIM115
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(url + "/v1/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit("serve did not start: " + (root / "serve.log").read_text())
                time.sleep(0.2)
            ready = {"url": url, "vault": str(vault), "home": str(home), "python": sys.executable,
                     "model": model.url, "repo": str(REPO)}  # fmt: skip
            print(json.dumps(ready), flush=True)
            sys.stdin.read()  # until the test run ends
        finally:
            server.terminate()
            server.wait(30)
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
