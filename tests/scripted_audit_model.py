"""DeepModel: the scripted chat model of the deep audit's tests and bench (loopback, OpenAI-compatible).

It answers each map request from the note paths it finds inside the prompt's data part and each reduce request
with SYNTHESIS, and counts both from the requests it received.
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler
from typing import Any

from scripted_chat_server import ChatStep, ScriptedChatServer

_NOTE = re.compile(r"^Note (N\d+): (.+?)(?: \(first \d+ characters\))?$", re.MULTILINE)


def analysis(path: str) -> dict[str, Any]:
    return {"main_idea": f"About {path}.", "key_points": [path.split("/")[0]], "entities": [],
            "quality": {"score": 3, "issues": ["short"]}, "suggested_tags": ["t"], "topics": ["x"],
            "suggested_links": []}  # fmt: skip


SYNTHESIS = {"clusters": [{"id": 1, "name": "Named by the model", "description": "One topic."}],
             "findings": ["Two topics."], "structural_problems": ["No links."],
             "recommendations": ["Link notes."], "action_plan": ["Add a MOC."]}  # fmt: skip


class DeepModel(ScriptedChatServer):
    """Map: an entry per ``Note Nk: path`` of the data part (none for ``broken`` paths: an invalid entry;
    ``says`` replaces fields of a path's entry).
    Reduce: SYNTHESIS. A scripted step with its own reply or an error status is served as scripted."""

    def __init__(self, broken: set[str] | None = None, says: dict[str, dict[str, Any]] | None = None) -> None:
        super().__init__()
        self.broken = broken or set()
        self.says = says or {}  # path -> fields that replace its analysis's (what a misbehaving model writes)

    def _respond(self, handler: BaseHTTPRequestHandler, body: Any, step: Any) -> None:
        if isinstance(body, dict) and "messages" in body and step.status < 400 and step.reply is None:
            user = body["messages"][1]["content"]
            if body["messages"][0]["content"].startswith("You analyse notes"):
                entries = []
                for nid, path in _NOTE.findall(user):
                    entry = {"id": nid, **analysis(path), **self.says.get(path, {})}
                    if path in self.broken:
                        del entry["main_idea"]
                    entries.append(entry)
                step = ChatStep(reply=json.dumps({"notes": entries}))
            else:
                step = ChatStep(reply=json.dumps(SYNTHESIS))
        super()._respond(handler, body, step)

    def map_requests(self) -> list[list[str]]:
        """The note paths of each map request received."""
        return [
            [p for _, p in _NOTE.findall(b["messages"][1]["content"])]
            for b in self.chats()
            if b["messages"][0]["content"].startswith("You analyse notes")
        ]

    def reduce_requests(self) -> int:
        return sum(1 for b in self.chats() if b["messages"][0]["content"].startswith("You review a whole"))
