"""A scripted model for the note tools: each chat request is answered with the next JSON object
(the last one repeats), so a test decides exactly what "the model" returns; every request is kept."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from loopback_proxy import remote_url
from scripted_chat_server import ChatStep, ScriptedChatServer


class ToolModel(ScriptedChatServer):
    """Answers chat request n with ``answers[n]`` (the last answer once they run out) as JSON text."""

    def __init__(self, *answers: dict[str, Any] | str) -> None:
        super().__init__()
        self.answers = list(answers)
        self.count = 0

    def _respond(self, handler: BaseHTTPRequestHandler, body: Any, step: Any) -> None:
        if isinstance(body, dict) and "messages" in body and step.status < 400:
            answer = self.answers[min(self.count, len(self.answers) - 1)]
            self.count += 1
            step = ChatStep(
                reply=answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
            )
        super()._respond(handler, body, step)

    def user_messages(self) -> list[str]:
        """The user message of every chat request, in order."""
        return [next(m["content"] for m in b["messages"] if m["role"] == "user") for b in self.chats()]


def llm_settings(server: ScriptedChatServer, remote: bool = False) -> dict[str, str]:
    """Settings for a model at ``server`` (``remote``: an address that counts as another machine)."""
    url = remote_url(server.url) if remote else server.url
    return {"embedding.provider": "fake", "llm.provider": "openai-compatible", "llm.model": "tool-test",
            "llm.endpoint": url + "/v1", "llm.max_retries": "0", "llm.read_timeout_s": "5"}  # fmt: skip


def cli_args(vault: Path, settings: dict[str, str]) -> list[str]:
    return ["--vault", str(vault), *[a for k, v in settings.items() for a in ("--set", f"{k}={v}")]]
