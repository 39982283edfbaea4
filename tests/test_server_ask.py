"""POST /v1/ask on a real uvicorn server: the answer streams as server-sent events, the last event is
the `ask --json` object, and failures keep the one error shape (a JSON error before the stream, an
`error` event inside it). The model is ScriptedChatServer, a test double on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopback_proxy import remote_url
from scripted_chat_server import ChatStep, ScriptedChatServer
from server_support import running_server
from test_ask import NOTES, QUESTION
from vaultlens.config.consent import consent_file
from vl_support import run_cli, write_vault


def events(reply: httpx.Response) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for block in reply.text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out


@pytest.fixture
def model() -> Iterator[ScriptedChatServer]:
    with ScriptedChatServer("Feed it rye flour daily [S1] and see [S9].") as server:
        yield server


@pytest.fixture
def companion(tmp_path: Path, model: ScriptedChatServer) -> Iterator[str]:
    vault = write_vault(tmp_path / "vault", NOTES)
    overrides = {"embedding.provider": "fake", "llm.provider": "openai-compatible", "llm.model": "chat-test",
                 "llm.endpoint": model.url + "/v1", "llm.max_retries": "0", "llm.read_timeout_s": "5"}  # fmt: skip
    with running_server(vault, tmp_path / "home", watch=False, overrides=overrides) as server:
        yield server.url


def ask(url: str, **body: Any) -> httpx.Response:
    return httpx.post(url + "/v1/ask", json=body, timeout=30)


def test_the_answer_streams_then_ends_with_the_ask_json_object(companion: str) -> None:
    reply = ask(companion, question=QUESTION)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/event-stream")
    got = events(reply)
    kinds = [k for k, _ in got]
    assert kinds[-1] == "done" and kinds.count("token") >= 3 and set(kinds[:-1]) == {"token"}
    final = got[-1][1]
    assert "".join(d for k, d in got if k == "token") == final["answer"]
    assert set(final) == {"question", "answer", "sources", "invalid_citations", "usage"}
    assert final["sources"][0]["path"] == "Bread/Starter.md" and final["invalid_citations"] == ["S9"]


def test_extractive_calls_no_model(companion: str, model: ScriptedChatServer) -> None:
    got = events(ask(companion, question=QUESTION, extractive=True))
    assert [k for k, _ in got] == ["done"] and got[0][1]["sources"]
    assert model.chats() == []


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"question": ""}, 400, "invalid_input"),
        ({"question": "   "}, 400, "empty_query"),
        ({}, 400, "invalid_input"),
    ],
)
def test_bad_questions_are_json_errors(companion: str, body: dict[str, Any], status: int, code: str) -> None:
    reply = httpx.post(companion + "/v1/ask", json=body, timeout=30)
    assert reply.status_code == status and reply.json()["error"]["code"] == code


def test_a_model_failing_before_the_first_token_is_a_json_error(
    companion: str, model: ScriptedChatServer
) -> None:
    model.script.append(ChatStep(status=503))
    reply = ask(companion, question=QUESTION)
    assert reply.status_code == 502 and reply.json()["error"]["code"].startswith("provider")


def test_a_stream_cut_midway_ends_with_an_error_event(companion: str, model: ScriptedChatServer) -> None:
    model.script.append(ChatStep(cut_after=3))
    got = events(ask(companion, question=QUESTION))
    assert [k for k, _ in got][:3] == ["token"] * 3
    assert got[-1][0] == "error" and got[-1][1]["code"] == "malformed_stream"


# ---- consent through the API is per request ---------------------------------------------------------


@pytest.fixture
def remote(tmp_path: Path, model: ScriptedChatServer) -> Iterator[tuple[str, list[str]]]:
    """A companion whose model counts as remote (a made-up host name, reached through the tests' loopback
    proxy), and the `--vault`/`--set` arguments of a CLI run with the same settings."""
    vault = write_vault(tmp_path / "vault", NOTES)
    overrides = {"embedding.provider": "fake", "llm.provider": "openai-compatible", "llm.model": "chat-test",
                 "llm.endpoint": remote_url(model.url) + "/v1", "llm.max_retries": "0"}  # fmt: skip
    args = ["--vault", str(vault), *[a for k, v in overrides.items() for a in ("--set", f"{k}={v}")]]
    with running_server(vault, tmp_path / "home", watch=False, overrides=overrides) as server:
        yield server.url, args


def refused_for_consent(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code == 403, reply.text
    error: dict[str, Any] = reply.json()["error"]
    assert error["code"] == "consent_required" and error["destination"].startswith("LLM openai-compatible")
    return error


def test_consent_given_with_one_request_does_not_cover_the_next_or_the_cli(
    remote: tuple[str, list[str]], model: ScriptedChatServer
) -> None:
    url, args = remote
    error = refused_for_consent(ask(url, question=QUESTION))
    assert '"consent": true' in error["hint"] and model.chats() == []
    assert [k for k, _ in events(ask(url, question=QUESTION, consent=True))][-1] == "done"
    assert len(model.chats()) == 1
    refused_for_consent(ask(url, question=QUESTION))  # the next request without the flag
    assert len(model.chats()) == 1, "nothing was sent for the request without consent"
    assert not consent_file().exists(), "a request's consent is never stored"
    cli = run_cli(["ask", QUESTION, *args])  # the terminal still asks (no terminal here: refused)
    assert cli.exit_code == 7 and "will send your questions" in cli.stderr and len(model.chats()) == 1


def test_a_yes_given_in_the_terminal_does_not_cover_api_requests(
    remote: tuple[str, list[str]], model: ScriptedChatServer
) -> None:
    url, args = remote
    agreed = run_cli(["ask", QUESTION, "--yes", *args])
    assert agreed.exit_code == 0, agreed.output
    assert any(d.startswith("LLM openai-compatible") for d in json.loads(consent_file().read_text()))
    assert run_cli(["ask", QUESTION, *args]).exit_code == 0  # remembered for the terminal
    assert len(model.chats()) == 2
    refused_for_consent(ask(url, question=QUESTION))
    assert len(model.chats()) == 2, "the terminal's yes sent nothing for the program"
