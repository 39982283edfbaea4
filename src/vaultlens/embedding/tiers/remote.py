"""The provider form of the quality tier: ``embedding.tier = "ollama:bge-m3"`` or
``"openai-compatible:MODEL"`` makes a model on an embedding server the second opinion.

The HTTP work is the main providers' own (:mod:`vaultlens.embedding.http`: endpoints, key from the
environment, retries, errors); this module adds what a tier needs on top: the model's query and
passage prefixes (declared per model below, overridable by settings), a space that names the
protocol, model, passage prefix and endpoint (so switching any of them drops the old tier vectors),
and two clients: passages (an index run's fill) retry like ``[embedding]``, a search's query does
not retry at all, so a slow or absent server costs a search at most ``embedding.tier_timeout_s``
before the bundled model answers alone (:mod:`vaultlens.services.finding.search`).

Note text goes to the server only after the user agreed (:mod:`vaultlens.services.consent`); an
endpoint on this machine (``localhost``, a loopback address) needs no agreement, like ``[embedding]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from vaultlens.config.settings import EmbeddingSettings
from vaultlens.embedding.base import EmbeddingSpace, Vectors, remote_destination
from vaultlens.embedding.http import OllamaProvider, OpenAICompatibleProvider
from vaultlens.embedding.tiers.base import TierProvider
from vaultlens.errors import ConfigError

BATCH_SIZE = 16  # passages per request: a large model on a CPU server answers 16 well inside its timeout
AUTO = "auto"  # embedding.tier_query_prefix / tier_passage_prefix: the model's declared prefix
HTTPClient = OllamaProvider | OpenAICompatibleProvider


@dataclass(frozen=True, slots=True)
class Prefixes:
    """What the model was trained to see before a search query and before a passage."""

    query: str = ""
    passage: str = ""


#: Prefixes of well-known embedding models, by name without an Ollama tag (``:latest``) or an
#: organisation (``intfloat/``); a model not listed gets none unless the settings declare them.
DECLARED: dict[str, Prefixes] = {
    "bge-m3": Prefixes(),  # trained without prefixes
    # EmbeddingGemma's retrieval prompts (its config_sentence_transformers.json; Ollama adds none)
    "embeddinggemma": Prefixes("task: search result | query: ", "title: none | text: "),
    "nomic-embed-text": Prefixes("search_query: ", "search_document: "),
    "mxbai-embed-large": Prefixes("Represent this sentence for searching relevant passages: ", ""),
    "snowflake-arctic-embed": Prefixes("Represent this sentence for searching relevant passages: ", ""),
}
E5_FAMILY = re.compile(r"(multilingual-)?e5-(small|base|large)(-v2)?")  # not -instruct: it takes instructions
E5_PREFIXES = Prefixes("query: ", "passage: ")


def declared_prefixes(model: str) -> Prefixes:
    """The built-in prefixes of ``model`` (none for a model this table does not know)."""
    name = model.rsplit("/", 1)[-1].split(":", 1)[0].lower()
    if E5_FAMILY.fullmatch(name):
        return E5_PREFIXES
    return DECLARED.get(name, Prefixes())


class RemoteTier:
    """A tier served over HTTP by one of the main providers' clients, with the model's prefixes."""

    def __init__(self, kind: str, passages: HTTPClient, queries: HTTPClient, prefixes: Prefixes) -> None:
        self.kind = kind
        self.prefixes = prefixes
        self.batch_size = passages.batch_size
        self.remote = passages.remote
        self._passages, self._queries = passages, queries
        self.space = self._space()

    def _space(self) -> EmbeddingSpace:
        """Vectors of another passage prefix are other vectors: the prefix is part of the model's name."""
        dims = self._passages.dimensions or self._queries.dimensions
        model = self._passages.model
        if self.prefixes.passage:
            model += f" [passage prefix {self.prefixes.passage!r}]"
        return EmbeddingSpace(self.kind, model, self._passages.endpoint, dims)

    @property
    def destination(self) -> str | None:
        """Where texts go, as consent names it (None: this machine); the same words as ``[embedding]``."""
        return remote_destination(self._passages)

    def _run(self, client: HTTPClient, prefix: str, texts: Sequence[str]) -> Vectors:
        out = client.embed([prefix + t for t in texts])
        if not self.space.dimensions:
            self.space = self._space()  # learnt from the first answer
        return out

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self._run(self._passages, self.prefixes.passage, texts)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._run(self._queries, self.prefixes.query, texts)

    def close(self) -> None:
        self._passages.close()
        self._queries.close()


def _tier_of(
    kind: str, client: type[OllamaProvider] | type[OpenAICompatibleProvider]
) -> Callable[[str, EmbeddingSettings], TierProvider]:
    """The factory of one tier form: ``model`` (after ``kind:``) and the settings -> a RemoteTier."""

    def make(model: str, s: EmbeddingSettings) -> TierProvider:
        key_env = s.tier_api_key_env or s.api_key_env
        key = client.api_key(replace(s, api_key_env=key_env))  # Ollama takes none

        def build(retries: int) -> HTTPClient:
            return client(model, s.tier_endpoint, 0, key, BATCH_SIZE, s.tier_timeout_s, retries)

        passages = build(s.max_retries)
        if client is OpenAICompatibleProvider and passages.remote and not key:
            passages.close()
            raise ConfigError(
                f"embedding.tier is {kind}:{model} at {passages.endpoint} but no API key is set.",
                hint=f"Set the environment variable {key_env} (or embedding.tier_api_key_env to another name).",
            )
        declared = declared_prefixes(model)
        prefixes = Prefixes(
            declared.query if s.tier_query_prefix == AUTO else s.tier_query_prefix,
            declared.passage if s.tier_passage_prefix == AUTO else s.tier_passage_prefix,
        )
        return RemoteTier(kind, passages, build(0), prefixes)  # a search does not wait for retries

    return make


#: ``kind`` of ``embedding.tier = "kind:model"`` -> its factory (for the tier registry's forms).
TIER_FORMS: dict[str, Callable[[str, EmbeddingSettings], TierProvider]] = {
    "ollama": _tier_of("ollama", OllamaProvider),
    "openai-compatible": _tier_of("openai-compatible", OpenAICompatibleProvider),
}


def tier_destination(tier: TierProvider | None) -> str | None:
    """Where ``tier`` sends texts, as consent names it; None for a tier on this machine (or none)."""
    return tier.destination if isinstance(tier, RemoteTier) else None
