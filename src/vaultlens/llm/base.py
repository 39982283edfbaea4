"""The chat-model interface: messages in, a streamed answer out, with usage when the API says it.

A provider only speaks its wire protocol; retries, timeouts and error translation live in
:mod:`vaultlens.llm.http_chat`, structured output (JSON schema, or a validated fallback) in
:mod:`vaultlens.llm.structured`. Streaming is a callback rather than an iterator so that a
provider closes its connection in one place whatever happens (end, error or Ctrl-C).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol

from vaultlens.errors import AnswerTooLong, ProviderError

# The longest answer any feature reads: 200,000 characters (about 50,000 tokens) is ten times what a
# transform of the largest selection (20,000 characters) asks for; a longer answer is a runaway or
# hostile model, refused (AnswerTooLong) and, over HTTP, not read any further.
MAX_ANSWER_CHARS = 200_000

Role = Literal["system", "user", "assistant"]
OnText = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def prompt_text(messages: Sequence[Message]) -> str:
    """Messages as the user is shown them before a yes: exactly what will be sent, role by role."""
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts and cost exactly as the API reported them (None where it said nothing)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None  # in the API's currency (OpenRouter: USD credits)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    usage: Usage | None
    model: str  # the model the server says answered (may differ from the one asked for)
    finish_reason: str | None = None


class SchemaRefused(ProviderError):
    """The server refused every way of asking for schema-constrained output (HTTP 400/422 to
    ``response_format``). :func:`vaultlens.llm.structured.structured` catches it and falls back to
    a prompted, validated answer, so users never see it."""

    code = "schema_refused"


def check_answer_size(provider: LLMProvider, text: str) -> None:
    """:class:`AnswerTooLong` when ``text`` passes :data:`MAX_ANSWER_CHARS`."""
    if len(text) > MAX_ANSWER_CHARS:
        raise too_long(f"{provider.name} model {provider.model}")


def too_long(who: str) -> AnswerTooLong:
    """The refusal of an answer past :data:`MAX_ANSWER_CHARS` from ``who``."""
    return AnswerTooLong(
        f"{who} answered with more than {MAX_ANSWER_CHARS:,} characters; the answer was refused "
        "(nothing of it is used).",
        hint="A model that runs on without stopping may need another --set llm.model.",
    )


class LLMProvider(Protocol):
    name: str  # the registry name (ollama, openai, ...)
    model: str
    endpoint: str
    remote: bool  # True when messages leave this machine
    supports_json_schema: bool  # the API constrains output to a JSON schema

    def chat(
        self,
        messages: Sequence[Message],
        *,
        on_text: OnText | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        """Stream an answer to ``messages``; ``on_text`` gets each piece as it arrives."""
        ...

    def close(self) -> None: ...


def llm_destination(provider: LLMProvider) -> str | None:
    """Where ``provider`` sends messages, in words a user can judge; None when they stay here.

    Consent is granted for this string, so it names the provider, the model and the endpoint;
    the ``LLM`` prefix keeps it apart from an embedding grant for the same endpoint.
    """
    if not provider.remote:
        return None
    return f"LLM {provider.name} model {provider.model} at {provider.endpoint}"
