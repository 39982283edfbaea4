"""HTTP embedding providers: Ollama (``/api/embed``) and any OpenAI-compatible ``/embeddings``.

Both share one request loop: a timeout per call, retries with exponential backoff on
timeouts, connection errors, 429 and 5xx (honouring ``Retry-After``), and errors translated
into :class:`ProviderError` so nothing above this module sees httpx.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Sequence
from typing import Any, Self
from urllib.parse import urlparse

from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors, normalize_rows
from vaultlens.errors import ConfigError, ProviderError, ProviderTimeout

# httpx is imported where a client is built or called: importing this module (the provider
# registry does, for every command) costs nothing until a remote provider is used

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0


def retry_pause(retry_after: str, attempt: int, backoff_s: float) -> float:
    """Seconds to wait before retry ``attempt + 1``: the server's ``Retry-After`` seconds when it
    gave some (capped), else exponential backoff. The LLM providers share this rule."""
    if retry_after.replace(".", "", 1).isdigit():
        return min(float(retry_after), MAX_RETRY_AFTER_S)
    return float(backoff_s * 2**attempt)


def is_loopback(endpoint: str) -> bool:
    """True when ``endpoint`` can only be this machine: ``localhost`` or a loopback address. A host
    name that merely starts with ``127.`` is resolved by DNS and may be anywhere: it is remote."""
    host = urlparse(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _HTTPProvider:
    """The shared request loop. Keyword defaults are the settings' own (one declaration, in
    :class:`~vaultlens.config.settings.EmbeddingSettings`); :meth:`from_settings` is what the
    registry calls."""

    name = "http"
    default_endpoint = ""

    def __init__(
        self,
        model: str,
        endpoint: str = EmbeddingSettings.endpoint,
        dimensions: int = EmbeddingSettings.dimensions,
        api_key: str | None = None,
        batch_size: int = EmbeddingSettings.batch_size,
        timeout_s: float = EmbeddingSettings.timeout_s,
        max_retries: int = EmbeddingSettings.max_retries,
        backoff_s: float = 0.5,  # first pause between retries; doubles each time
    ) -> None:
        self.calls_in_flight = 1  # one request at a time: a server queues the rest anyway
        self.endpoint = (endpoint or self.default_endpoint).rstrip("/")
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.remote = not is_loopback(self.endpoint)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        import httpx

        self._client = httpx.Client(timeout=timeout_s, headers=headers)
        self.space = EmbeddingSpace(self.name, model, self.endpoint, dimensions)

    @classmethod
    def from_settings(cls, s: EmbeddingSettings) -> Self:
        """``embedding.model`` left empty means the provider's default model (declared in settings);
        a provider without one (a plug-in name for this class) needs the model named."""
        if not s.model_name:
            raise ConfigError(
                f"embedding.provider is {s.provider} but embedding.model is not set.",
                hint=f"Name the {cls.name} model that should embed your notes: --set embedding.model=NAME.",
            )
        return cls(
            s.model_name,
            endpoint=s.endpoint,
            dimensions=s.dimensions,
            api_key=cls.api_key(s),
            batch_size=s.batch_size,
            timeout_s=s.timeout_s,
            max_retries=s.max_retries,
        )

    @staticmethod
    def api_key(s: EmbeddingSettings) -> str | None:
        """The key from the environment variable ``embedding.api_key_env`` names (never from a file)."""
        return (os.environ.get(s.api_key_env) or None) if s.api_key_env else None

    def _post(self, url: str, payload: dict[str, Any]) -> Any:
        import httpx

        where = f"{self.name} at {url}"
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                resp = self._client.post(url, json=payload)
            except httpx.TimeoutException:
                if last:
                    tries = f"{attempt + 1} tries" if attempt else "1 try"
                    raise ProviderTimeout(f"{where} did not answer in time ({tries}).") from None
            except httpx.HTTPError as exc:
                if last:
                    raise ProviderError(f"Cannot reach {where}: {exc}.") from None
            else:
                if resp.status_code < 400:
                    try:
                        return resp.json()
                    except ValueError:
                        raise ProviderError(f"{where} answered with something that is not JSON.") from None
                if resp.status_code not in RETRY_STATUS or last:
                    raise ProviderError(f"{where} answered HTTP {resp.status_code}: {resp.text[:300]}")
                time.sleep(retry_pause(resp.headers.get("retry-after", ""), attempt, self.backoff_s))
                continue
            time.sleep(self.backoff_s * (2**attempt))
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the HTTP connection pool (the provider cannot embed afterwards)."""
        self._client.close()

    def _finish(self, vectors: Any, count: int) -> Vectors:
        out = normalize_rows(vectors, count, self.dimensions, f"{self.name} model {self.model}")
        if not self.dimensions:
            self.dimensions = out.shape[1]
            self.space = EmbeddingSpace(self.name, self.model, self.endpoint, self.dimensions)
        return out


class OllamaProvider(_HTTPProvider):
    name = "ollama"
    default_endpoint = "http://127.0.0.1:11434"

    @staticmethod
    def api_key(s: EmbeddingSettings) -> str | None:
        return None  # Ollama takes no key

    def embed(self, texts: Sequence[str]) -> Vectors:
        data = self._post(f"{self.endpoint}/api/embed", {"model": self.model, "input": list(texts)})
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list):
            raise ProviderError(f"ollama model {self.model} returned no 'embeddings' list.")
        return self._finish(vectors, len(texts))


class OpenAICompatibleProvider(_HTTPProvider):
    name = "openai"
    default_endpoint = "https://api.openai.com/v1"

    @classmethod
    def from_settings(cls, s: EmbeddingSettings) -> Self:
        """A remote endpoint without an API key is refused before any request."""
        provider = super().from_settings(s)
        if provider.remote and not cls.api_key(s):
            provider.close()
            raise ConfigError(
                f"embedding.provider is openai at {provider.endpoint} but no API key is set.",
                hint=f"Set the environment variable {s.api_key_env} (or embedding.api_key_env to another name).",
            )
        return provider

    def embed(self, texts: Sequence[str]) -> Vectors:
        payload: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.dimensions:
            payload["dimensions"] = self.dimensions
        data = self._post(f"{self.endpoint}/embeddings", payload)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ProviderError(f"openai-compatible model {self.model} returned no 'data' list.")
        ordered = sorted(items, key=lambda i: i.get("index", 0))
        return self._finish([i.get("embedding") for i in ordered], len(texts))
