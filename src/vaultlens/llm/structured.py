"""Structured output: a JSON object that validates against a schema, whatever the provider can do.

Where the API constrains output to a schema (OpenAI ``response_format``, Ollama ``format``,
llama.cpp's grammar) it is asked to; every answer is still parsed and validated here, because a
server may ignore the request. Where it cannot, the schema goes into the prompt and the answer
is validated the same way; one invalid answer earns one retry that quotes the problem, a second
is an :class:`~vaultlens.errors.InvalidModelOutput`. Answers are validated with ``jsonschema``
(the draft a schema declares, else 2020-12), so any schema a provider accepts is checked in full.

Every string of the answer is also checked for characters a terminal would not show as themselves
(:data:`vaultlens.vault.hidden.REFUSED`: ESC, a lone CR, a backspace, a bidi override...): such an
answer is invalid the same way (one retry, then :class:`~vaultlens.errors.HiddenCharacters`), so no
tool plans bytes, and nobody is asked to confirm a diff, that would show other text than it writes.
An answer past :data:`~vaultlens.llm.base.MAX_ANSWER_CHARS` is refused
(:class:`~vaultlens.errors.AnswerTooLong`); HTTP providers stop reading there.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from vaultlens.errors import HiddenCharacters, InvalidModelOutput
from vaultlens.llm.base import LLMProvider, Message, SchemaRefused, Usage, check_answer_size
from vaultlens.vault.hidden import describe, refused_in_value

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def schema_problems(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every way ``value`` breaks ``schema`` (empty when it validates), as ``$.path: problem``.

    A long value is shortened in its problem: the text goes back to the model in a retry and into
    error messages.
    """
    validator = validator_for(schema, default=Draft202012Validator)(schema)
    return [
        f"{e.json_path}: {e.message.replace(repr(e.instance), reprlib.repr(e.instance))}"
        for e in validator.iter_errors(value)
    ]


def parse_json_answer(text: str) -> Any:
    """The JSON value in a model's answer, allowing the Markdown fence small models like to add."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    return json.loads(body)


def hidden_problem(value: Any) -> str | None:
    """Where a JSON value holds a character of :data:`~vaultlens.vault.hidden.REFUSED`, as a problem
    to quote (``$.text holds <ESC> (U+001B)...``), or None."""
    found = refused_in_value(value)
    if found is None:
        return None
    where, ch = found
    return (
        f"{where} holds the control character {describe(ch)}, which would hide or reorder text; "
        "only tabs and newlines are allowed"
    )


def _check(text: str, schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str, bool]:
    """The answer's object, or None and the problem (and whether it is a hidden character)."""
    try:
        value = parse_json_answer(text)
    except ValueError as exc:
        return None, f"not valid JSON ({exc})", False
    problems = schema_problems(value, schema)
    if problems or not isinstance(value, dict):
        return None, "; ".join(problems[:5]) or "not a JSON object", False
    hidden = hidden_problem(value)
    if hidden is not None:
        return None, hidden, True
    return value, "", False


def _schema_in_prompt(schema: dict[str, Any]) -> Message:
    return Message(
        "user",
        "Reply with only one JSON object, no prose and no code fence, that validates against "
        f"this JSON schema:\n{json.dumps(schema, ensure_ascii=False)}",
    )


def structured(
    provider: LLMProvider, messages: Sequence[Message], schema: dict[str, Any]
) -> tuple[dict[str, Any], Usage | None]:
    """A JSON object from ``provider`` that validates against ``schema`` (see the module docstring)."""
    asked = list(messages)
    native = provider.supports_json_schema
    if not native:
        asked.append(_schema_in_prompt(schema))
    problem, hidden = "", False
    for _ in range(2):
        try:
            done = provider.chat(asked, json_schema=schema if native else None)
        except SchemaRefused:  # the server takes no schema after all: ask in words, validate here
            native = False
            asked.append(_schema_in_prompt(schema))
            done = provider.chat(asked)
        check_answer_size(provider, done.text)
        value, problem, hidden = _check(done.text, schema)
        if value is not None:
            return value, done.usage
        asked = [
            *asked,
            Message("assistant", done.text),
            Message("user", f"That answer is invalid: {problem}. Reply again with only the corrected JSON."),
        ]
    if hidden:
        raise HiddenCharacters(
            f"{provider.name} model {provider.model} twice answered with text a terminal would not show "
            f"as it is: {problem}. Nothing was planned.",
            hint="Run it again or try another --set llm.model; a note tool never writes such characters.",
        )
    raise InvalidModelOutput(
        f"{provider.name} model {provider.model} twice returned JSON that does not fit the schema: {problem}.",
        hint="A larger model follows schemas better; try another --set llm.model.",
    )
