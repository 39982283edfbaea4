"""The chat providers against ScriptedChatServer (OpenAI SSE and Ollama NDJSON on loopback): streaming,
retries, timeouts, broken streams, refused keys, unknown models, structured output, key handling."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from scripted_chat_server import ChatStep, ScriptedChatServer
from vaultlens.config.keys import find_key, keys_file, redact
from vaultlens.config.settings import LLMSettings
from vaultlens.errors import (
    Cancelled,
    ConfigError,
    InvalidModelOutput,
    MalformedStream,
    ModelNotFound,
    ProviderAuthError,
    ProviderError,
    ProviderTimeout,
    ProviderUnreachable,
)
from vaultlens.llm.base import Message, llm_destination
from vaultlens.llm.http_chat import (
    ChatHTTPProvider,
    GroqChat,
    OllamaChat,
    OpenAICompatibleChat,
    OpenRouterChat,
)
from vaultlens.llm.registry import llm_names, make_llm
from vaultlens.llm.structured import schema_problems, structured

HELLO = [Message("system", "Be brief."), Message("user", "Say hello")]
KEY = "sk-test-0123456789abcdefSECRET"


def provider(server: ScriptedChatServer, kind: str = "openai", **kw: object) -> ChatHTTPProvider:
    opts: dict[str, object] = {"max_retries": 2, "read_timeout_s": 5.0, "backoff_s": 0.05, **kw}
    if kind == "ollama":
        return OllamaChat("llama-test", server.url, **opts)  # type: ignore[arg-type]
    return OpenAICompatibleChat("chat-test", server.url + "/v1", **opts)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_the_answer_streams_piece_by_piece_and_usage_is_read(kind: str) -> None:
    reply = "Rye flour feeds the starter every morning [S1]."
    with ScriptedChatServer(reply, [ChatStep(piece_delay=0.05)]) as server:
        got: list[tuple[float, str]] = []
        done = provider(server, kind).chat(HELLO, on_text=lambda p: got.append((time.monotonic(), p)))
        last_piece_sent = server.sent[-1][0]
    assert done.text == reply and "".join(p for _, p in got) == reply
    assert len(got) == len(reply.split(" ")) > 3
    assert got[0][0] < last_piece_sent - 0.1, "the first piece reached the caller before the stream ended"
    assert done.usage is not None and (done.usage.prompt_tokens, done.usage.completion_tokens) == (50, 7)
    body = server.chats()[0]
    assert body["stream"] is True and body["messages"][1] == {"role": "user", "content": "Say hello"}


def test_openrouter_asks_for_usage_and_the_cost_is_reported() -> None:
    usage = {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940, "cost": 0.00021}
    with ScriptedChatServer("ok", [ChatStep(usage=usage)]) as server:
        chat = OpenRouterChat("openai/gpt-4o-mini", server.url + "/api/v1", KEY)
        done = chat.chat(HELLO)
        body = server.chats()[0]
    assert body["usage"] == {"include": True} and body["stream_options"] == {"include_usage": True}
    assert done.usage is not None and done.usage.as_dict() == usage


def test_429_with_retry_after_then_success() -> None:
    with ScriptedChatServer("ok", [ChatStep(status=429, headers={"Retry-After": "0.4"})]) as server:
        done = provider(server).chat(HELLO)
        times = [r.at for r in server.requests]
    assert done.text == "ok" and len(times) == 2
    assert times[1] - times[0] >= 0.4, "Retry-After was honoured"


def test_5xx_is_retried_with_backoff_and_then_reported() -> None:
    with ScriptedChatServer("ok", [ChatStep(status=503)]) as server:
        assert provider(server, "ollama").chat(HELLO).text == "ok"
    with ScriptedChatServer("ok", [ChatStep(status=500)] * 3) as server:
        with pytest.raises(ProviderError, match="HTTP 500"):
            provider(server).chat(HELLO)
        assert len(server.requests) == 3  # the first try and max_retries=2


def test_a_silent_server_times_out_with_a_clear_error() -> None:
    # the server would answer after a minute: a client that waited for it would get the answer
    with ScriptedChatServer("late", [ChatStep(delay=60.0), ChatStep(delay=60.0)]) as server:
        with pytest.raises(ProviderTimeout, match="did not answer within llm.read_timeout_s"):
            provider(server, max_retries=1, read_timeout_s=0.3).chat(HELLO)
        assert len(server.requests) == 2


def test_a_stream_that_stalls_midway_is_not_retried() -> None:
    # one piece, then silence past the read timeout: retrying would repeat text already shown
    with ScriptedChatServer("one two three", [ChatStep(piece_delay=1.0)]) as server:
        got: list[str] = []
        with pytest.raises(ProviderTimeout, match="stopped in the middle"):
            provider(server, read_timeout_s=0.3).chat(HELLO, on_text=got.append)
        assert got == ["one"] and len(server.requests) == 1


@pytest.mark.parametrize(
    ("kind", "step", "says"),
    [
        ("openai", ChatStep(lines=["data: {not json"]), "not JSON"),
        ("openai", ChatStep(lines=["<html>oops</html>"]), "not server-sent events"),
        ("openai", ChatStep(cut_after=2), "before the answer was complete"),
        ("ollama", ChatStep(lines=['{"message": {"content": "hi"}, "done": false}', "garbage"]), "not JSON"),
        ("ollama", ChatStep(cut_after=1), "before the answer was complete"),
    ],
    ids=["sse-not-json", "not-sse", "sse-cut", "ndjson-garbage", "ndjson-cut"],
)
def test_a_malformed_or_cut_stream_is_a_clear_error(kind: str, step: ChatStep, says: str) -> None:
    with ScriptedChatServer("a b c d", [step]) as server, pytest.raises(MalformedStream, match=says):
        provider(server, kind, max_retries=0).chat(HELLO)


def test_an_error_event_inside_the_stream_is_reported() -> None:
    line = 'data: {"error": {"message": "context length exceeded"}}'
    with (
        ScriptedChatServer("x", [ChatStep(lines=[line])]) as server,
        pytest.raises(ProviderError, match="exceeded"),
    ):
        provider(server, max_retries=0).chat(HELLO)


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_a_refused_key_is_named_but_never_printed(kind: str) -> None:
    echo = f"Incorrect API key provided: {KEY}"
    with ScriptedChatServer("x", [ChatStep(status=401, error=echo)]) as server:
        chat = provider(server, kind)
        chat._key = KEY  # as if read from the environment
        with pytest.raises(ProviderAuthError) as caught:
            chat.chat(HELLO)
    shown = str(caught.value) + json.dumps(caught.value.to_dict())
    assert "refused the API key" in shown and KEY not in shown and KEY[-8:] not in shown
    assert len(server.requests) == 1  # a wrong key is not retried


@pytest.mark.parametrize(
    ("kind", "error", "hint"),
    [
        ("ollama", 'model "nope" not found, try pulling it first', "ollama pull"),
        ("openai", "The model `nope` does not exist", "llm.model"),
    ],
)
def test_an_unknown_model_says_so(kind: str, error: str, hint: str) -> None:
    with (
        ScriptedChatServer("x", [ChatStep(status=404, error=error)]) as server,
        pytest.raises(ModelNotFound) as caught,
    ):
        provider(server, kind).chat(HELLO)
    assert caught.value.code == "model_not_found" and hint in (caught.value.hint or "")


def test_an_unreachable_server_fails_fast_with_a_hint() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    # a retry would first wait its backoff of a minute: the guard below is 30 times what the refusal takes
    chat = OllamaChat("m", f"http://127.0.0.1:{port}", max_retries=3, backoff_s=60.0)
    started = time.monotonic()
    with pytest.raises(ProviderUnreachable) as caught:
        chat.chat(HELLO)
    assert time.monotonic() - started < 30, "a refused connection is not retried"
    assert "ollama serve" in (caught.value.hint or "") and "--extractive" in (caught.value.hint or "")


SCHEMA = {
    "type": "object",
    "properties": {"question": {"type": "string", "minLength": 1}, "n": {"type": "integer"}},
    "required": ["question", "n"],
    "additionalProperties": False,
}


def test_structured_output_uses_the_json_schema_where_supported() -> None:
    with ScriptedChatServer('{"question": "why", "n": 2}') as server:
        value, usage = structured(provider(server), HELLO, SCHEMA)
        fmt = server.chats()[0]["response_format"]
    assert value == {"question": "why", "n": 2} and usage is not None
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA
    with ScriptedChatServer('{"question": "why", "n": 2}') as server:
        structured(provider(server, "ollama"), HELLO, SCHEMA)
        assert server.chats()[0]["format"] == SCHEMA


def test_structured_output_falls_back_to_a_validated_prompt_and_retries_once() -> None:
    steps = [
        ChatStep(reply='{"question": "why"}'),
        ChatStep(reply='```json\n{"question": "why", "n": 3}\n```'),
    ]
    with ScriptedChatServer("x", steps) as server:
        groq = GroqChat("g", server.url + "/v1", max_retries=0)
        value, _ = structured(groq, HELLO, SCHEMA)
        first, second = server.chats()
    assert value == {"question": "why", "n": 3}
    assert "response_format" not in first and json.dumps(SCHEMA) in first["messages"][-1]["content"]
    assert "$: 'n' is a required property" in second["messages"][-1]["content"]
    with ScriptedChatServer("not json at all") as server:
        with pytest.raises(InvalidModelOutput):
            structured(GroqChat("g", server.url + "/v1", max_retries=0), HELLO, SCHEMA)
        assert len(server.chats()) == 2


def test_a_server_that_refuses_openais_schema_form_is_asked_in_llama_cpps_form_then_in_words() -> None:
    good = '{"question": "why", "n": 1}'
    with ScriptedChatServer(good, [ChatStep(status=422)]) as server:
        chat = provider(server)
        assert structured(chat, HELLO, SCHEMA)[0] == {"question": "why", "n": 1}
        structured(chat, HELLO, SCHEMA)  # the form that worked is remembered
        formats = [b["response_format"] for b in server.chats()]
    assert formats[0]["type"] == "json_schema"
    assert formats[1] == formats[2] == {"type": "json_object", "schema": SCHEMA}
    refusal = (
        "1 validation error: ('body', 'response_format', 'type') Input should be 'text' or 'json_object'"
    )
    with ScriptedChatServer(good, [ChatStep(status=500, error=refusal)]) as server:  # llama-cpp-python's 500
        assert structured(provider(server), HELLO, SCHEMA)[0]["n"] == 1
        assert len(server.chats()) == 2, "a schema refusal is not retried as a server error"
    with ScriptedChatServer(good, [ChatStep(status=400), ChatStep(status=422)]) as server:
        assert structured(provider(server), HELLO, SCHEMA)[0]["n"] == 1
        last = server.chats()[-1]
    assert "response_format" not in last and json.dumps(SCHEMA) in last["messages"][-1]["content"]


def test_schema_problems_name_the_json_path_of_each_problem() -> None:
    assert schema_problems({"question": "q", "n": 1}, SCHEMA) == []
    short, *rest = schema_problems({"question": "", "n": True, "x": 1}, SCHEMA)
    assert short.startswith("$.question: ''")  # minLength 1's wording varies by release
    assert rest == [
        "$.n: True is not of type 'integer'",
        "$: Additional properties are not allowed ('x' was unexpected)",
    ]
    claims = {
        "type": "object",
        "properties": {"claims": {"type": "array", "items": {"$ref": "#/$defs/claim"}}},
        "$defs": {"claim": {"type": "object", "properties": {"kind": {"enum": ["fact", "opinion"]}}}},
    }
    assert schema_problems({"claims": [{"kind": "fact"}, {"kind": "x"}]}, claims) == [
        "$.claims[1].kind: 'x' is not one of ['fact', 'opinion']"
    ]


def test_a_long_value_is_shortened_in_its_problem() -> None:
    """The problem goes back to the model in a retry and into error messages: not the whole value."""
    [problem] = schema_problems(
        {"question": "why " * 500, "n": 1}, {**SCHEMA, "properties": {"question": {"maxLength": 9}, "n": {}}}
    )
    assert (
        problem.startswith("$.question: 'why why") and problem.endswith("' is too long") and len(problem) < 80
    )


def test_ctrl_c_in_the_middle_of_a_stream_closes_the_connection() -> None:
    with ScriptedChatServer("one two three four five six", [ChatStep(piece_delay=0.2)]) as server:
        chat = provider(server)

        def interrupt(piece: str) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            chat.chat(HELLO, on_text=interrupt)
        time.sleep(0.8)
        assert len(server.sent) < 6, "the server could not finish: the client had hung up"
        assert chat.chat(HELLO).text.startswith("one"), "the provider is still usable afterwards"


@pytest.mark.parametrize("when", ["waiting for the answer", "midway through the stream"])
def test_close_from_another_thread_cuts_a_request_in_flight(when: str) -> None:
    """A stopped batch closes its providers: the worker's request must end now, not when the model answers."""
    gate = threading.Event()  # never set while the request runs: the server holds the answer back
    step = ChatStep(delay=600) if when == "waiting for the answer" else ChatStep(gate=gate)
    with ScriptedChatServer("one two three", [step]) as server:
        chat = provider(server, read_timeout_s=300.0, max_retries=2)
        outcome: list[BaseException | str] = []

        def ask() -> None:
            try:
                outcome.append(chat.chat(HELLO).text)
            except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
                outcome.append(exc)

        worker = threading.Thread(target=ask, daemon=True)
        worker.start()
        deadline = time.monotonic() + 30
        while not server.chats() or (when != "waiting for the answer" and not server.sent):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        chat.close()
        worker.join(timeout=60)  # guards against a hang only: without the cut it waits for the model
        gate.set()
        assert not worker.is_alive(), "the request went on after close()"
    [got] = outcome
    assert isinstance(got, Cancelled) and "cancelled" in got.message, got
    assert len(server.chats()) == 1, "a cut request is not retried"


def test_registry_knows_the_presets_and_refuses_remote_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    assert {"ollama", "openai", "openrouter", "groq", "openai-compatible"} <= set(llm_names())
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="no API key") as caught:
        make_llm(LLMSettings(provider="openrouter"))
    assert "OPENROUTER_API_KEY" in (caught.value.hint or "")
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY)
    chat = make_llm(LLMSettings(provider="openrouter"))
    assert (
        chat.remote
        and llm_destination(chat) == "LLM openrouter model openai/gpt-4o-mini at https://openrouter.ai/api/v1"
    )
    local = make_llm(LLMSettings())
    assert local.name == "ollama" and not local.remote and llm_destination(local) is None
    with pytest.raises(ConfigError, match="llm.endpoint is not set"):
        make_llm(LLMSettings(provider="openai-compatible", model="m"))
    with pytest.raises(ConfigError, match="llm.provider must be one of"):
        make_llm(LLMSettings(provider="nosuch"))


def test_a_key_file_is_used_only_when_only_its_owner_can_read_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    path = keys_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"groq": KEY}))
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match="may be read by other users") as caught:
        find_key("groq", "GROQ_API_KEY")
    assert "chmod 600" in (caught.value.hint or "") and KEY not in str(caught.value)
    os.chmod(path, 0o600)
    key, source = find_key("groq", "GROQ_API_KEY")
    assert key == KEY and source.found_in == str(path)
    monkeypatch.setenv("GROQ_API_KEY", "from-env")
    assert find_key("groq", "GROQ_API_KEY")[0] == "from-env"  # the environment comes first


def test_redact_hides_the_key_and_its_tail() -> None:
    assert redact(f"bad key {KEY}!", KEY) == "bad key ***!"
    assert redact(f"key ending ...{KEY[-8:]}", KEY) == "key ending ...***"
    assert redact("nothing", None) == "nothing"


def test_keys_file_lives_in_the_home(isolated_env: Path) -> None:
    assert keys_file() == isolated_env / "keys.json"
