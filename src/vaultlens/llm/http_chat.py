"""HTTP chat providers: any OpenAI-compatible ``/chat/completions`` (SSE) and Ollama ``/api/chat`` (NDJSON).

Both share one request loop: a connect timeout and a read timeout (the longest silence, also
between two pieces of a stream), retries with backoff on 429, 5xx, timeouts and dropped
connections *until the first piece of text has been passed on* (after that a retry would
repeat text the user already saw), ``Retry-After`` honoured by the same rule as the embedding
providers (:func:`~vaultlens.embedding.http.retry_pause`). httpx errors and HTTP statuses become
specific :class:`~vaultlens.errors.ProviderError` subclasses; any server text quoted in them goes
through :func:`~vaultlens.config.keys.redact` first. Ctrl-C raises ``KeyboardInterrupt`` out of
the ``with`` block, which closes the connection: nothing is left open. :meth:`close` from
another thread cuts a request in flight at once (its socket is shut down; the request raises
:class:`~vaultlens.errors.Cancelled`), so a stopped batch need not wait for a model's answer.
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import time
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Self

from vaultlens.config.keys import KeySource, find_key, redact
from vaultlens.config.settings import LLMSettings
from vaultlens.embedding.http import RETRY_STATUS, is_loopback, retry_pause
from vaultlens.errors import (
    Cancelled,
    ConfigError,
    MalformedStream,
    ModelNotFound,
    ProviderAuthError,
    ProviderError,
    ProviderTimeout,
    ProviderUnreachable,
)
from vaultlens.llm.base import MAX_ANSWER_CHARS, Completion, Message, OnText, SchemaRefused, Usage, too_long

# httpx, ssl and certifi are imported where a client is built or called: importing this module
# (the provider registry does, for every command) costs nothing until a chat provider is used
if TYPE_CHECKING:
    import ssl

    import httpx


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context per process: loading the CA bundle took 80 ms per client under load, a
    third of the time-to-first-token budget, so chat and follow-ups share it."""
    import ssl

    import certifi

    return ssl.create_default_context(cafile=certifi.where())


# the most bytes one stream line (or a whole JSON body) may take: an answer of MAX_ANSWER_CHARS
# characters, each JSON-escaped (``\uXXXX``, six bytes), plus the envelope
MAX_LINE_BYTES = 6 * MAX_ANSWER_CHARS + 65_536


class _Stream:
    """What one streamed answer collected so far (refused past :data:`MAX_ANSWER_CHARS`)."""

    def __init__(self, on_text: OnText | None, who: str = "the model") -> None:
        self.on_text = on_text
        self.who = who
        self.chars = 0
        self.parts: list[str] = []
        self.usage: Usage | None = None
        self.model = ""
        self.finish: str | None = None
        self.done = False

    @property
    def started(self) -> bool:
        return bool(self.parts)

    def text(self, piece: Any) -> None:
        if isinstance(piece, str) and piece:
            self.chars += len(piece)
            if self.chars > MAX_ANSWER_CHARS:
                raise too_long(self.who)
            self.parts.append(piece)
            if self.on_text is not None:
                self.on_text(piece)


def _bounded(chunks: Iterator[bytes], stream: _Stream) -> Iterator[bytes]:
    """``chunks`` until they pass :data:`MAX_LINE_BYTES` together; then :class:`AnswerTooLong`
    (nothing more is read: the caller's ``with`` closes the connection)."""
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > MAX_LINE_BYTES:
            raise too_long(stream.who)
        yield chunk


def _lines(chunks: Iterator[str], stream: _Stream) -> Iterator[str]:
    """The lines of a streamed body (``\n``, ``\r\n`` or ``\r`` ends one), none longer than
    :data:`MAX_LINE_BYTES`: a line that never ends is refused, not buffered without bound."""
    pending: list[str] = []  # the unfinished line's pieces
    size = 0
    for chunk in chunks:
        *ended, rest = chunk.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if ended:
            yield "".join(pending) + ended[0]
            yield from ended[1:]
            pending, size = [], 0
        pending.append(rest)
        size += len(rest)
        if size > MAX_LINE_BYTES:
            raise too_long(stream.who)
    if "".join(pending):
        yield "".join(pending)


class ChatHTTPProvider:
    """The shared loop; subclasses say the URL, the payload and how to read one stream line."""

    name = "http"
    default_endpoint = ""
    default_key_env = ""
    needs_key = False  # a remote endpoint without a key is refused before any request
    supports_json_schema = True

    def __init__(
        self,
        model: str,
        endpoint: str = "",
        api_key: str | None = None,
        *,
        key_source: KeySource | None = None,
        connect_timeout_s: float = LLMSettings.connect_timeout_s,
        read_timeout_s: float = LLMSettings.read_timeout_s,
        max_retries: int = LLMSettings.max_retries,
        max_tokens: int = LLMSettings.max_tokens,
        temperature: float = LLMSettings.temperature,
        backoff_s: float = 0.5,
    ) -> None:
        self.model = model
        self.endpoint = (endpoint or self.default_endpoint).rstrip("/")
        self.remote = not is_loopback(self.endpoint)
        self.key_source = key_source or KeySource(self.default_key_env, None)
        self.max_retries = max_retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.backoff_s = backoff_s
        self._key = api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        import httpx

        timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
        self._client = httpx.Client(timeout=timeout, headers=headers, verify=_tls())
        self._sockets: weakref.WeakSet[Any] = weakref.WeakSet()  # this client's connections, for close()
        self._closed = False

    @classmethod
    def from_settings(cls, s: LLMSettings) -> Self:
        model = s.model_name
        if not model:
            raise ConfigError(
                f"llm.provider is {s.provider} but llm.model is not set.",
                hint="Name the model that should answer: --set llm.model=NAME.",
            )
        endpoint = (s.endpoint or cls.default_endpoint).rstrip("/")
        if not endpoint:
            raise ConfigError(
                f"llm.provider is {s.provider} but llm.endpoint is not set.",
                hint="Point it at the server's OpenAI-compatible base URL, e.g. "
                "--set llm.endpoint=http://127.0.0.1:8080/v1",
            )
        env_var = s.api_key_env or cls.default_key_env
        key, source = find_key(s.provider, env_var)
        if cls.needs_key and key is None and not is_loopback(endpoint):
            raise ConfigError(
                f"llm.provider is {s.provider} at {endpoint} but no API key is set.",
                hint=f"Set the environment variable {env_var or '(llm.api_key_env)'} or put the key in "
                "$VAULTLENS_HOME/keys.json (mode 600) under the provider's name.",
            )
        return cls(
            model,
            endpoint,
            key,
            key_source=source,
            connect_timeout_s=s.connect_timeout_s,
            read_timeout_s=s.read_timeout_s,
            max_retries=s.max_retries,
            max_tokens=s.max_tokens,
            temperature=s.temperature,
        )

    # ---- the protocol's parts ------------------------------------------------------------------

    def _request(self, messages: Sequence[Message], json_schema: dict[str, Any] | None) -> tuple[str, Any]:
        raise NotImplementedError

    def _read_line(self, line: str, stream: _Stream) -> None:
        raise NotImplementedError

    def _read_whole(self, body: Any, stream: _Stream) -> None:
        """A server that answered with one JSON document although a stream was asked for."""
        raise NotImplementedError

    # ---- the shared loop -----------------------------------------------------------------------

    @property
    def where(self) -> str:
        return f"{self.name} at {self.endpoint}"

    def chat(
        self,
        messages: Sequence[Message],
        *,
        on_text: OnText | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        import httpx

        url, payload = self._request(messages, json_schema)
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            stream = _Stream(on_text, f"{self.where} (model {self.model})")
            if self._closed:
                raise self._cancelled()
            try:
                traced = {"trace": self._trace}
                with (
                    self._cut_off(),
                    self._client.stream("POST", url, json=payload, extensions=traced) as resp,
                ):
                    if resp.status_code >= 400:
                        resp.read()
                        if json_schema is not None and self._refuses_schema(resp):
                            raise SchemaRefused(
                                f"{self.where} refused the output schema (HTTP {resp.status_code})."
                            )
                        if resp.status_code not in RETRY_STATUS or last:
                            raise self._status_error(resp)
                        time.sleep(retry_pause(resp.headers.get("retry-after", ""), attempt, self.backoff_s))
                        continue
                    self._consume(resp, stream)
                return self._finish(stream)
            except httpx.ConnectError as exc:  # refused or no route: retrying would not help
                raise ProviderUnreachable(
                    f"Cannot reach {self.where}: {redact(str(exc), self._key) or 'connection refused'}.",
                    hint=self._unreachable_hint(),
                ) from None
            except httpx.TimeoutException:
                if stream.started or last:
                    during = "stopped in the middle of its answer" if stream.started else "did not answer"
                    raise ProviderTimeout(
                        f"{self.where} {during} within llm.read_timeout_s ({attempt + 1} tries).",
                        hint="A slow local model may need a larger --set llm.read_timeout_s=SECONDS.",
                    ) from None
            except (httpx.RemoteProtocolError, httpx.ReadError):
                if stream.started or last:
                    raise MalformedStream(
                        f"{self.where} closed the connection before the answer was complete."
                    ) from None
            except httpx.HTTPError as exc:
                raise ProviderError(f"{self.where} failed: {redact(str(exc), self._key)}") from None
            time.sleep(self.backoff_s * (2**attempt))
        raise AssertionError("unreachable")

    def _consume(self, resp: httpx.Response, stream: _Stream) -> None:
        if resp.headers.get("content-type", "").startswith("application/json"):
            body = b"".join(_bounded(resp.iter_bytes(), stream))
            try:
                data = json.loads(body)
            except ValueError:
                raise MalformedStream(f"{self.where} answered with something that is not JSON.") from None
            self._read_whole(data, stream)
            stream.done = True
            return
        for line in _lines(resp.iter_text(), stream):
            if line.strip():
                self._read_line(line.strip(), stream)
            if stream.done:
                break

    def _finish(self, stream: _Stream) -> Completion:
        if not stream.done:
            raise MalformedStream(
                f"{self.where} ended its stream before the answer was complete "
                f"({len(''.join(stream.parts))} characters received, no end marker)."
            )
        return Completion("".join(stream.parts), stream.usage, stream.model or self.model, stream.finish)

    def _json(self, raw: str) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            shown = redact(raw[:120], self._key)
            raise MalformedStream(f"{self.where} sent a stream line that is not JSON: {shown!r}") from None

    def _server_error(self, data: Any) -> ProviderError:
        err = data.get("error") if isinstance(data, dict) else None
        text = err.get("message") if isinstance(err, dict) else err
        return ProviderError(f"{self.where} reported an error: {redact(str(text)[:300], self._key)}")

    def _status_error(self, resp: httpx.Response) -> ProviderError:
        status = resp.status_code
        body = redact(resp.text[:300], self._key)
        if status in (401, 403):
            var = self.key_source.env_var
            told = f" from {self.key_source.found_in}" if self.key_source.found_in else " (none was set)"
            return ProviderAuthError(
                f"{self.where} refused the API key{told} (HTTP {status}).",
                hint=f"Check the key in {'$' + var if var else 'keys.json'}; the key is never printed.",
            )
        if status == 404:
            if "model" in body.lower():
                return ModelNotFound(
                    f"{self.where} has no model {self.model!r} (HTTP 404: {body}).",
                    hint=self._model_hint(),
                )
            return ProviderError(
                f"{self.where} has no chat API at this address (HTTP 404).",
                hint="Check llm.endpoint (an OpenAI-compatible base URL usually ends in /v1).",
            )
        return ProviderError(f"{self.where} answered HTTP {status}: {body}")

    @staticmethod
    def _refuses_schema(resp: httpx.Response) -> bool:
        """A request error about the schema: 400/422, or any error naming the field (llama-cpp-python's
        server answers its own validation errors with HTTP 500, which must not be retried)."""
        return resp.status_code in (400, 422) or any(w in resp.text for w in ("response_format", '"format"'))

    def _unreachable_hint(self) -> str:
        return (
            "Check that the server runs and llm.endpoint is right; `vaultlens ask --extractive` "
            "answers with passages and needs no model."
        )

    def _model_hint(self) -> str:
        return "Set llm.model to a model this server has (--set llm.model=NAME)."

    def _cancelled(self) -> Cancelled:
        return Cancelled(f"The request to {self.where} was cancelled.")

    @contextlib.contextmanager
    def _cut_off(self) -> Iterator[None]:
        """A request :meth:`close` cut fails as :class:`Cancelled`, never retried."""
        import httpx

        try:
            yield
        except httpx.HTTPError:
            if self._closed:
                raise self._cancelled() from None
            raise

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace hook: keep each new connection's network stream, so close() can cut it."""
        if event == "connection.connect_tcp.complete":
            self._sockets.add(info["return_value"])

    def close(self) -> None:
        """Close the client; a request in flight in another thread fails at once (its socket is shut
        down: closing alone would leave that thread waiting for the server's answer)."""
        self._closed = True
        for stream in list(self._sockets):
            with contextlib.suppress(OSError, AttributeError):  # already closed
                stream.get_extra_info("socket").shutdown(socket.SHUT_RDWR)
        self._client.close()


class OpenAICompatibleChat(ChatHTTPProvider):
    """Any server speaking OpenAI's ``/chat/completions`` with ``stream: true`` (llama.cpp, vLLM, ...).

    A schema is asked for the way OpenAI documents it (``response_format.type = json_schema``);
    a server that refuses that (llama-cpp-python's server takes only ``json_object`` with a
    ``schema``, the Anyscale form) is asked the other way, and the form that worked is kept.
    """

    name = "openai-compatible"
    SCHEMA_STYLES = ("json_schema", "json_object")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._style = self.SCHEMA_STYLES[0]

    def chat(
        self,
        messages: Sequence[Message],
        *,
        on_text: OnText | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        if json_schema is None:
            return super().chat(messages, on_text=on_text)
        styles = [self._style, *(s for s in self.SCHEMA_STYLES if s != self._style)]
        for style in styles:
            self._style = style
            try:
                return super().chat(messages, on_text=on_text, json_schema=json_schema)
            except SchemaRefused:
                continue
        raise SchemaRefused(f"{self.where} refused every form of schema-constrained output.")

    def _request(self, messages: Sequence[Message], json_schema: dict[str, Any] | None) -> tuple[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.as_dict() for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }
        if json_schema is not None and self._style == "json_object":
            payload["response_format"] = {"type": "json_object", "schema": json_schema}
        elif json_schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": json_schema, "strict": True},
            }
        return f"{self.endpoint}/chat/completions", payload

    def _read_line(self, line: str, stream: _Stream) -> None:
        if not line.startswith("data:"):
            if line.startswith((":", "event:", "id:", "retry:")):
                return  # SSE comments and fields that carry no answer
            raise MalformedStream(f"{self.where} sent a line that is not server-sent events: {line[:80]!r}")
        raw = line[5:].strip()
        if raw == "[DONE]":
            stream.done = True
            return
        data = self._json(raw)
        if not isinstance(data, dict):
            raise MalformedStream(f"{self.where} sent a stream event that is not a JSON object.")
        if "error" in data:
            raise self._server_error(data)
        self._read_chunk(data, stream, "delta")

    def _read_whole(self, body: Any, stream: _Stream) -> None:
        if not isinstance(body, dict) or "error" in body:
            raise self._server_error(body)
        self._read_chunk(body, stream, "message")

    def _read_chunk(self, data: dict[str, Any], stream: _Stream, key: str) -> None:
        stream.model = data.get("model") or stream.model
        usage = data.get("usage")
        if isinstance(usage, dict):
            stream.usage = Usage(
                _int(usage.get("prompt_tokens")),
                _int(usage.get("completion_tokens")),
                _int(usage.get("total_tokens")),
                _float(usage.get("cost")),
            )
        choices = data.get("choices")
        if not isinstance(choices, list):
            if usage is None:
                raise MalformedStream(f"{self.where} sent a stream event without 'choices'.")
            return
        for choice in choices:
            part = choice.get(key) if isinstance(choice, dict) else None
            if isinstance(part, dict):
                stream.text(part.get("content"))
            if isinstance(choice, dict) and choice.get("finish_reason"):
                stream.finish = str(choice["finish_reason"])


class OpenAIChat(OpenAICompatibleChat):
    name = "openai"
    default_endpoint = "https://api.openai.com/v1"
    default_key_env = "OPENAI_API_KEY"
    needs_key = True


class OpenRouterChat(OpenAICompatibleChat):
    name = "openrouter"
    default_endpoint = "https://openrouter.ai/api/v1"
    default_key_env = "OPENROUTER_API_KEY"
    needs_key = True

    def _request(self, messages: Sequence[Message], json_schema: dict[str, Any] | None) -> tuple[str, Any]:
        url, payload = super()._request(messages, json_schema)
        payload["usage"] = {"include": True}  # OpenRouter then reports the cost of the call
        return url, payload


class GroqChat(OpenAICompatibleChat):
    name = "groq"
    default_endpoint = "https://api.groq.com/openai/v1"
    default_key_env = "GROQ_API_KEY"
    needs_key = True
    supports_json_schema = False  # only some Groq models take a schema: validate the JSON instead


class OllamaChat(ChatHTTPProvider):
    """Ollama's native ``/api/chat``: one JSON object per line, ``format`` for a JSON schema."""

    name = "ollama"
    default_endpoint = "http://127.0.0.1:11434"

    def _request(self, messages: Sequence[Message], json_schema: dict[str, Any] | None) -> tuple[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [m.as_dict() for m in messages],
            "stream": True,
            "options": {"temperature": self.temperature, "num_predict": self.max_tokens},
        }
        if json_schema is not None:
            payload["format"] = json_schema
        return f"{self.endpoint}/api/chat", payload

    def _read_line(self, line: str, stream: _Stream) -> None:
        data = self._json(line)
        if not isinstance(data, dict):
            raise MalformedStream(f"{self.where} sent a stream line that is not a JSON object.")
        self._read_whole(data, stream)

    def _read_whole(self, body: Any, stream: _Stream) -> None:
        if not isinstance(body, dict) or "error" in body:
            raise self._server_error(body)
        stream.model = body.get("model") or stream.model
        message = body.get("message")
        if isinstance(message, dict):
            stream.text(message.get("content"))
        elif not body.get("done"):
            raise MalformedStream(f"{self.where} sent a stream line without 'message'.")
        if body.get("done"):
            stream.done = True
            stream.finish = body.get("done_reason") or "stop"
            prompt, completion = _int(body.get("prompt_eval_count")), _int(body.get("eval_count"))
            total = prompt + completion if prompt is not None and completion is not None else None
            stream.usage = Usage(prompt, completion, total)

    def _unreachable_hint(self) -> str:
        return (
            "Start Ollama (`ollama serve`) or point llm.endpoint at it; `vaultlens ask --extractive` "
            "answers with passages and needs no model."
        )

    def _model_hint(self) -> str:
        return f"Pull it first (`ollama pull {self.model}`) or set llm.model to one `ollama list` shows."


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
