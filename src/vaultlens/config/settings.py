"""Settings, grouped by concern, and where each value came from.

Layers, lowest first: built-in defaults, the user config file (``config.toml`` in the user's
config dir, or ``$VAULTLENS_HOME/config.toml``), the vault's own ``.vaultlens.toml``,
``VAULTLENS_<GROUP>__<NAME>`` environment variables, then ``--set group.name=value`` flags.
Every value remembers its layer so ``vaultlens config show`` can say why it is what it is.

Every field declares the values it allows beside its default (``setting(64, ge=1)``, a bound may
name another setting of its group); :func:`load_settings` refuses any other value with a
:class:`ConfigError` that names the setting, the allowed range and the layer it came from, so
every command stops before it does anything. :func:`allowed` says the range in symbols.
"""

from __future__ import annotations

import difflib
import functools
import math
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from vaultlens.config.paths import user_config_file
from vaultlens.errors import ConfigError, InvalidInput, translated_errors

VAULT_CONFIG_NAME = ".vaultlens.toml"
ENV_PREFIX = "VAULTLENS_"
PROVIDER_NAME = re.compile(r"[a-z][a-z0-9_.-]*")  # what embedding.provider (and a registered name) looks like
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")

#: The model the local provider bundles inside the wheel: its one and only model.
BUNDLED_MODEL = "use-multilingual-v3"
#: ``embedding.model`` when the user names none, per built-in provider. The consent question names
#: the model, so a remote default is seen and agreed to before any text leaves the machine.
DEFAULT_MODELS: dict[str, str] = {
    "local": BUNDLED_MODEL,
    "ollama": "nomic-embed-text",  # Ollama's own suggested embedding model
    "openai": "text-embedding-3-small",  # OpenAI's smallest current embedding model
}

#: ``embedding.tier``'s built-in values: off, auto (picked per vault by its languages), or a model
#: whose vectors go beside the main ones. A plug-in may register more names
#: (:mod:`vaultlens.embedding.tiers.registry`, which rejects a name nobody registered).
TIERS = ("off", "auto", "e5", "minilm-en")
#: ``embedding.tier = "<kind>:<model>"``: a model served by a provider of that kind (``ollama:bge-m3``,
#: ``openai-compatible:<model>``), or a sentence-transformers folder on this machine (``local:<path>``,
#: absolute, without spaces); the kind is a registered tier form (``register_tier_form``).
TIER_FORM = re.compile(r"([a-z][a-z0-9_.-]*):([^\s\x00-\x1f\x7f]+)")
#: ``index.backend`` values: the store backends of vaultlens.index.backends. Repeated here because
#: config sits above index in the layers; tests/test_backend_seam.py keeps the two lists equal.
STORE_BACKENDS = ("postgres", "sqlite")
#: ``index.attachments`` values: the kinds of vault files besides Markdown notes that the index reads
#: (``pdf``: text per page, ``canvas``: JSON Canvas text cards); ``[]`` indexes Markdown only.
ATTACHMENT_KINDS = ("pdf", "canvas")
#: A password inside a libpq DSN: ``password=...`` (key/value form) or ``user:secret@`` / ``?password=`` (URI form).
DSN_PASSWORD = re.compile(r"(?:^|[\s?&])password\s*=|^postgres(?:ql)?://[^/@?]*:[^/@?]*@", re.IGNORECASE)

# Upper bounds shared by several settings. Every numeric setting has one, so no value can overflow
# where it ends up (an SQLite INTEGER, a C int of a thread count, int(max_file_mb * 1e6), a timer).
DAY_S = 86_400  # the longest timeout: a day
HOUR_MS = 3_600_000
DAY_MS = 86_400_000

T = TypeVar("T")


@dataclass(frozen=True)
class Rule:
    """The values one setting allows, declared beside its field (``setting(64, ge=1)``).

    A numeric bound is a number or the name of another setting in the same group
    (``ge="chunk_target"``); a text setting has a ``check`` and a ``shape`` that says it in words.
    """

    ge: float | str | None = None
    gt: float | str | None = None
    le: float | str | None = None
    lt: float | str | None = None
    check: Callable[[str], bool] | None = None
    shape: str = ""

    def bounds(self) -> list[tuple[str, float | str]]:
        return [
            (op, b)
            for op, b in (("ge", self.ge), ("gt", self.gt), ("le", self.le), ("lt", self.lt))
            if b is not None
        ]

    def allows(self, value: Any, sibling: Callable[[str], Any]) -> bool:
        if self.check is not None and not self.check(value):
            return False
        return not self.broken(value, sibling)

    def broken(self, value: Any, sibling: Callable[[str], Any]) -> list[float | str]:
        """The numeric bounds ``value`` is on the wrong side of (a number, or a sibling's name)."""
        out = []
        for op, bound in self.bounds():
            limit = sibling(bound) if isinstance(bound, str) else bound
            if not {"ge": value >= limit, "gt": value > limit, "le": value <= limit, "lt": value < limit}[op]:
                out.append(bound)
        return out

    def describe(self, group: str, sibling: Callable[[str], Any] | None = None) -> str:
        """The rule in words: "at least 1", "between 0 and 1", "at least index.chunk_target (1200)"."""
        if self.check is not None:
            return self.shape

        def show(bound: float | str) -> str:
            if isinstance(bound, str):
                return f"{group}.{bound}" + (f" ({_num(sibling(bound))})" if sibling else "")
            return _num(bound)

        if self.ge is not None and self.le is not None and not (self.gt or self.lt):
            return f"between {show(self.ge)} and {show(self.le)}"
        words = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}
        return " and ".join(f"{words[op]} {show(b)}" for op, b in self.bounds())

    def compact(self, group: str) -> str:
        """The rule in symbols, for ``config show``: ">= 1", "0..1", ">= 0, < index.chunk_target"."""
        if self.check is not None:
            return self.shape

        def show(bound: float | str) -> str:
            return f"{group}.{bound}" if isinstance(bound, str) else _num(bound)

        if self.ge is not None and self.le is not None and not (self.gt or self.lt):
            return f"{show(self.ge)}..{show(self.le)}"
        ops = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
        return ", ".join(f"{ops[op]} {show(b)}" for op, b in self.bounds())


def _num(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def setting(
    default: T,
    *,
    ge: float | str | None = None,
    gt: float | str | None = None,
    le: float | str | None = None,
    lt: float | str | None = None,
    check: Callable[[str], bool] | None = None,
    shape: str = "",
) -> T:
    """A settings field with its default and the values it allows, in one declaration."""
    rule = Rule(ge=ge, gt=gt, le=le, lt=lt, check=check, shape=shape)
    declared: T = field(default=default, metadata={"rule": rule})
    return declared


def _is_endpoint(value: str) -> bool:
    if value == "":
        return True
    parsed = urlparse(value)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc) and not CONTROL.search(value)


PREFIX_SHAPE = "auto (the model's declared prefix) or up to 500 characters of text"


def _is_prefix(value: str) -> bool:
    return len(value) <= 500 and not CONTROL.search(value.replace("\n", " "))


@dataclass(frozen=True)
class EmbeddingSettings:
    """The one declaration of every embedding default; providers take their values from here.

    ``provider`` names an entry of :mod:`vaultlens.embedding.registry` (built in: local, ollama,
    openai); this layer only checks that it is a name, the registry rejects an unknown one.
    ``model`` left empty means the provider's default (:data:`DEFAULT_MODELS`, see :attr:`model_name`).
    """

    provider: str = setting(
        "local",
        check=lambda v: bool(PROVIDER_NAME.fullmatch(v)),
        shape="a provider name such as local, ollama or openai (lower-case letters, digits, '_', '.', '-')",
    )
    model: str = setting(
        "", check=lambda v: not CONTROL.search(v), shape="a model name without control characters"
    )  # "" = the provider's default model
    endpoint: str = setting(
        "", check=_is_endpoint, shape="empty (the provider's default) or an http:// or https:// URL"
    )  # "" = the provider's own default endpoint
    dimensions: int = setting(0, ge=0, le=65536)  # 0 = whatever the model returns
    api_key_env: str = setting(
        "OPENAI_API_KEY",
        check=lambda v: v == "" or bool(ENV_NAME.fullmatch(v)),
        shape="empty or the name of an environment variable (letters, digits, '_')",
    )
    batch_size: int = setting(64, ge=1, le=10_000)
    timeout_s: float = setting(60.0, gt=0, le=DAY_S)  # per HTTP request
    max_retries: int = setting(4, ge=0, le=10)  # HTTP retries after the first try (backoff doubles)
    threads: int = setting(0, ge=0, le=1024)  # 0 = os.cpu_count(); the local model's batches
    # BLAS threads for a one-text call (a search query): one thread does not spin or wait for a
    # descheduled sibling on a busy machine (bench/serve_load.py); 0 = the same as threads
    query_threads: int = setting(1, ge=0, le=1024)
    # the optional quality tier: a second, stronger and slower local model whose vectors are
    # filled after each index run and mixed into search (embedding/tiers/); "off" = USE only.
    # "auto" (the vault's languages pick minilm-en or e5, none without the quality extra) is the
    # default because no group of the dev sets lost on either half (docs/benchmarks.md)
    tier: str = setting(
        "auto",
        check=lambda v: bool(PROVIDER_NAME.fullmatch(v) or TIER_FORM.fullmatch(v)),
        shape=", ".join(TIERS)
        + ", a registered tier name, ollama:<model> / openai-compatible:<model>, or local:<model folder>",
    )
    # the provider form of the tier (embedding/tiers/remote.py): its server, key and model prefixes
    # (the prefixes apply to local:<folder> too, embedding/tiers/local.py)
    tier_endpoint: str = setting(
        "", check=_is_endpoint, shape="empty (the server's default) or an http:// or https:// URL"
    )  # "" = Ollama on this machine (http://127.0.0.1:11434), or https://api.openai.com/v1
    tier_api_key_env: str = setting(
        "",
        check=lambda v: v == "" or bool(ENV_NAME.fullmatch(v)),
        shape="empty (the same variable as embedding.api_key_env) or the name of an environment variable",
    )
    # what the model expects before a query / a passage; "auto" = its declared prefix (none if unknown;
    # for local:<folder>, the prompts of the folder's config_sentence_transformers.json)
    tier_query_prefix: str = setting("auto", check=_is_prefix, shape=PREFIX_SHAPE)
    tier_passage_prefix: str = setting("auto", check=_is_prefix, shape=PREFIX_SHAPE)
    # per request to the tier's server: a search waits at most this long before the bundled model
    # answers alone (no retry); an index run's fill retries like embedding.max_retries
    tier_timeout_s: float = setting(10.0, gt=0, le=DAY_S)

    @property
    def model_name(self) -> str:
        """The model the provider uses: ``model``, or the provider's default when it is empty."""
        return self.model or DEFAULT_MODELS.get(self.provider, "")


# ---- llm: the chat model behind ask and chat (issue 11) --------------------------------------------
#: ``llm.model`` when the user names none, per built-in LLM provider (the consent question names it).
DEFAULT_LLM_MODELS: dict[str, str] = {
    "ollama": "llama3.2",  # Ollama's common small instruct model; `ollama pull llama3.2`
    "openai": "gpt-4o-mini",
    "openrouter": "openai/gpt-4o-mini",
    "groq": "llama-3.3-70b-versatile",
}


@dataclass(frozen=True)
class LLMSettings:
    """The chat model, chosen apart from the embedding provider (local embeddings + remote LLM is fine).

    ``provider`` names an entry of :mod:`vaultlens.llm.registry` (built in: ollama, openai,
    openrouter, groq, openai-compatible). ``api_key_env`` empty means the provider's own variable
    (OPENAI_API_KEY, OPENROUTER_API_KEY, GROQ_API_KEY); the key itself is never a setting.
    """

    provider: str = setting(
        "ollama",
        check=lambda v: bool(PROVIDER_NAME.fullmatch(v)),
        shape="a provider name such as ollama, openai, openrouter, groq or openai-compatible",
    )
    model: str = setting(
        "", check=lambda v: not CONTROL.search(v), shape="a model name without control characters"
    )  # "" = the provider's default model
    endpoint: str = setting(
        "", check=_is_endpoint, shape="empty (the provider's default) or an http:// or https:// URL"
    )
    api_key_env: str = setting(
        "",
        check=lambda v: v == "" or bool(ENV_NAME.fullmatch(v)),
        shape="empty (the provider's own variable) or the name of an environment variable",
    )
    connect_timeout_s: float = setting(10.0, gt=0, le=DAY_S)  # to open the connection
    read_timeout_s: float = setting(120.0, gt=0, le=DAY_S)  # the longest silence before or inside a stream
    max_retries: int = setting(3, ge=0, le=10)  # on 429, 5xx, timeouts before the first token
    max_tokens: int = setting(1024, ge=16, le=1_000_000)  # the longest answer asked for
    temperature: float = setting(0.0, ge=0, le=2)
    history_turns: int = setting(4, ge=0, le=50)  # chat: earlier questions and answers kept
    # prices per million tokens, for the cost `write batch` estimates before it starts; 0 = not set ("unknown")
    price_in_per_mtok: float = setting(0.0, ge=0, le=1_000_000)
    price_out_per_mtok: float = setting(0.0, ge=0, le=1_000_000)

    @property
    def model_name(self) -> str:
        return self.model or DEFAULT_LLM_MODELS.get(self.provider, "")


@dataclass(frozen=True)
class IndexSettings:
    chunk_target: int = setting(1200, ge=200, le=100_000)  # characters
    chunk_max: int = setting(1800, ge="chunk_target", le=100_000)
    chunk_overlap: int = setting(200, ge=0, lt="chunk_target")
    max_file_mb: float = setting(10.0, gt=0, le=4096)
    batch_files: int = setting(64, ge=1, le=100_000)
    # the files besides Markdown notes the index reads (chunking/attachments.py); () = Markdown only
    attachments: tuple[str, ...] = setting(
        ATTACHMENT_KINDS,
        check=lambda v: all(k in ATTACHMENT_KINDS for k in v),
        shape="a list of " + ", ".join(ATTACHMENT_KINDS) + " ([] for Markdown only)",
    )
    # where the index lives: a store backend by name (index/backends.py); sqlite = a file per index
    backend: str = setting(
        "sqlite", check=lambda v: v in STORE_BACKENDS, shape="one of " + ", ".join(STORE_BACKENDS)
    )
    # postgres: a libpq connection string without a password (libpq's PG* variables fill in the rest)
    dsn: str = setting("", check=lambda v: not CONTROL.search(v), shape="a libpq connection string")
    # postgres: the vault's name in a shared database; empty = this machine's index folder (set the
    # same value on every machine of a team that shares one vault's index)
    vault_id: str = setting("", check=lambda v: re.fullmatch(r"[\w.-]{0,100}", v) is not None,
                            shape="letters, digits, '.', '-' or '_' (at most 100)")  # fmt: skip


@dataclass(frozen=True)
class SearchSettings:
    limit: int = setting(10, ge=1, le=10_000)
    sections: int = setting(3, ge=1, le=1000)
    max_query_chars: int = setting(2000, ge=1, le=100_000)
    candidates: int = setting(200, ge=1, le=100_000)
    # lexical share of the fused score when BM25 explains the whole query
    max_lexical_weight: float = setting(0.8, ge=0, le=1)
    tier_weight: float = setting(0.5, ge=0, le=1)  # the quality tier's share of the dense score
    # ... where the tier is a model of one language (minilm-en, which auto picks for an English vault): a
    # specialist of the vault's language weighs more than a multilingual tier (kepano held hit@1 +1, docs
    # en→en hit@5 23/26 → 24/26, SciFact 0.717 → 0.718 on both halves; 0.8 raised one SciFact half only)
    one_language_tier_weight: float = setting(0.65, ge=0, le=1)
    # max_lexical_weight where the dense part blends such a tier: 0.8 was measured against the bundled model
    # alone (SciFact dense 0.41); beside an English specialist the meaning side is worth more, and words less
    # (SciFact nDCG@10 0.718 → 0.727, Cranfield 0.566 → 0.571, both on both halves; docs/benchmarks.md)
    one_language_max_lexical_weight: float = setting(0.6, ge=0, le=1)
    # ... for a section in the other language than the query's (its script: services/finding/evidence.py), where
    # the candidates are in both languages (among candidates in one language every section gets tier_weight).
    # e5-small alone ranks a note in the query's language first for every cross-language question of the
    # bilingual personal-notes set, and blended it pushed right answers down there (issue 44; docs/benchmarks.md)
    tier_weight_across: float = setting(0.0, ge=0, le=1)
    # chunks from which the embedded store finds dense candidates in its ANN graph (index/sqlite/ann.py) and
    # re-scores them exactly, instead of scanning every vector (bench/ann_scale.py)
    ann_threshold: int = setting(100_000, ge=1, le=10**12)

    def bounded_query(self, query: str) -> str:
        """``query`` as search and Ask read it: stripped, then its first ``max_query_chars`` code points."""
        return query.strip()[: self.max_query_chars]

    def refuse_long_query(self, query: str) -> None:
        """A program's query is refused rather than cut (a person's CLI run is told of the cut instead)."""
        given = len(query.strip())
        if given > self.max_query_chars:
            raise InvalidInput(
                f"The query is {given:,} characters long; this vault's search reads at most "
                f"{self.max_query_chars:,} (search.max_query_chars).",
                hint="Send a shorter query, or raise search.max_query_chars.",
            )


@dataclass(frozen=True)
class DiscoverSettings:
    # coverage of one note by the other. bench/duplicates_quality.py: no negative pair is reported from
    # 0.91 up on dup-vault, ru-wiki, kepano and fastapi-docs; labelled duplicates score >= 0.956 there
    duplicate_threshold: float = setting(0.93, ge=0, le=1)
    duplicate_limit: int = setting(100, ge=1, le=1_000_000)
    min_chars: int = setting(32, ge=0, le=1_000_000)
    # notes in two scripts (Latin "en" / Cyrillic "ru"): the lower of both directions' coverage. Measured
    # (bench/duplicates_quality.py): true translations >= 0.701, and no false one at any threshold down
    # to 0 (mutual best match and structure remove them), so this leaves recall a margin
    translation_threshold: float = setting(0.65, ge=0, le=1)
    # a section copied into a note that otherwise differs (and confirmed by its words)
    passage_threshold: float = setting(0.9, ge=0, le=1)
    # a line or heading in this many notes, or in this share of the notes when that is more, is boilerplate
    boilerplate_notes: int = setting(5, ge=2, le=1_000_000)
    boilerplate_share: float = setting(0.05, ge=0, le=1)
    boilerplate_weight: float = setting(0.1, ge=0, le=1)  # what a boilerplate letter weighs in coverage


@dataclass(frozen=True)
class WatchSettings:
    debounce_ms: int = setting(1500, ge=0, le=HOUR_MS)  # flush after this long without a new file event
    max_wait_ms: int = setting(
        10000, ge="debounce_ms", le=DAY_MS
    )  # flush at the latest this long after the first event


@dataclass(frozen=True)
class AuditSettings:
    batch_notes: int = setting(5, ge=1, le=50)  # notes per map request of `audit deep`
    parallel: int = setting(3, ge=1, le=16)  # map requests in flight at once


@dataclass(frozen=True)
class Settings:
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    discover: DiscoverSettings = field(default_factory=DiscoverSettings)
    watch: WatchSettings = field(default_factory=WatchSettings)
    llm: LLMSettings = field(default_factory=LLMSettings)
    audit: AuditSettings = field(default_factory=AuditSettings)


GROUPS: dict[str, type[Any]] = {
    "embedding": EmbeddingSettings,
    "index": IndexSettings,
    "search": SearchSettings,
    "discover": DiscoverSettings,
    "watch": WatchSettings,
    "llm": LLMSettings,
    "audit": AuditSettings,
}


@dataclass(frozen=True)
class LoadedSettings:
    settings: Settings
    origins: dict[str, str]  # "group.name" -> "default" | file path | "env VAR" | "--set"


#: What a type error says a setting takes, by the type of its default.
TYPE_WORDS: dict[type, str] = {
    bool: "true or false",
    int: "an int",
    float: "a number",
    str: "a string",
    tuple: "a list of names",
}
INT_TEXT = re.compile(r"[+-]?[0-9_]+")  # what int() would take, were it not so long


def _coerce(key: str, value: Any, default: Any, origin: str) -> Any:
    """Convert a raw value (TOML or string from env/flags) to the type of the default.

    A value of the wrong type is a :class:`ConfigError` saying what the setting takes; a number
    too large to hold at all (infinity, a float overflow, an int of thousands of digits) is
    refused with the setting's allowed range, as :func:`validate` refuses a merely large one.
    """
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            if not isinstance(value, bool):
                raise ValueError(value)
            return value
        if isinstance(default, int):
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)  # no silent truncation of 2.5 to 2 (nor of inf or nan)
            if isinstance(value, str) and INT_TEXT.fullmatch(value.strip()):
                try:
                    return int(value)
                except ValueError:  # more digits than int() reads: certainly out of range
                    raise OverflowError(value) from None
            return int(value)
        if isinstance(default, float):
            if isinstance(value, bool):
                raise ValueError(value)
            number = float(value)  # OverflowError for an int beyond any float
            if math.isnan(number):
                raise ValueError(value)
            if math.isinf(number):
                raise OverflowError(value)
            return number
        if isinstance(default, tuple):
            return _names(value)
        if not isinstance(value, str):
            raise ValueError(value)
        return value
    except OverflowError:
        found = rule(key)
        what = found.describe(key.partition(".")[0]) if found else "smaller"
        raise ConfigError(
            f"Setting {key} must be {what}, got {_show(value)} ({_where(origin)}).",
            hint=_allowed_hint(key)
            + f"{_fix(origin)}, or remove it to use the default ({_show(default, 200)}).",
        ) from None
    except (TypeError, ValueError):
        raise ConfigError(
            f"Setting {key} must be {TYPE_WORDS.get(type(default), type(default).__name__)}, "
            f"got {_show(value)} ({_where(origin)}).",
            hint=_allowed_hint(key)
            + f"{_fix(origin)}, or remove it to use the default ({_show(default, 200)}).",
        ) from None


def _names(value: Any) -> tuple[str, ...]:
    """A list setting: a TOML list of strings, or text from the environment or ``--set`` ("pdf,canvas",
    '["pdf"]', "[]" or "" for none)."""
    if isinstance(value, str):
        value = [v.strip().strip("'\"") for v in value.strip().removeprefix("[").removesuffix("]").split(",")]
        value = [v for v in value if v]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValueError(value)
    return tuple(dict.fromkeys(value))


def _allowed_hint(key: str) -> str:
    """The range of a numeric setting as a hint (``Allowed: search.limit 1..10000.``); "" for a text one."""
    found = rule(key)
    return f"Allowed: {key} {found.compact(key.partition('.')[0])}. " if found and found.check is None else ""


def _show(value: Any, limit: int = 40) -> str:
    """A value as a message quotes it: its repr, cut short when it is long (a pasted wall of digits)."""
    try:
        text = repr(list(value) if isinstance(value, tuple) else value)  # a list setting as the list it is
    except ValueError:  # an int with more digits than Python will print
        return "a number of thousands of digits"
    return text if len(text) <= limit else f"{text[: limit - 10]}... ({len(text)} characters)"


def _read_toml(path: Path) -> dict[str, Any]:
    """The tables of a config file; a file that cannot be read, is not UTF-8 or is not TOML is a
    :class:`ConfigError` naming it (a UTF-8 byte order mark, as some editors write, is allowed)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"Config file {path} is not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line} is not valid UTF-8.",
            hint="TOML files are UTF-8: save the file as UTF-8 in your editor (or retype that line).",
        ) from None
    try:
        return tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Config file {path} is not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"Config file {path} nests tables or arrays too deeply to read.") from None
    except ValueError:  # tomllib's int() of a number with thousands of digits
        raise ConfigError(
            f"Config file {path} holds a number too long to read (thousands of digits).",
            hint="Fix that number: no setting takes one that large.",
        ) from None


def _all_keys() -> list[str]:
    """Every ``group.name``, in declaration order, read from the settings dataclasses themselves."""
    return [f"{g}.{f.name}" for g, cls in GROUPS.items() for f in fields(cls)]


def _guesses(key: str) -> list[str]:
    """The known keys an unknown ``key`` most likely meant (difflib), closest first; maybe none."""
    group, _, name = key.partition(".")
    keys = _all_keys()
    if group in GROUPS:
        names = [k.partition(".")[2] for k in keys if k.startswith(f"{group}.")]
        return [f"{group}.{n}" for n in difflib.get_close_matches(name, names, n=1)]
    close = difflib.get_close_matches(key, keys, n=1) if name else []
    if not close:  # "max_retries" or "db.limit": the name alone, in whichever groups have it
        names = difflib.get_close_matches(name or group, {k.partition(".")[2] for k in keys}, n=1)
        close = [k for k in keys if names and k.partition(".")[2] == names[0]]
    return close


def _unknown_hint(key: str) -> str:
    """What an unknown key probably meant, and the keys of its group (all groups when that is unknown)."""
    group = key.partition(".")[0]
    if group in GROUPS:
        listing = f"Known {group} settings: {', '.join(k for k in _all_keys() if k.startswith(f'{group}.'))}."
    else:
        listing = (
            "Settings are GROUP.NAME; known ones: "
            + "; ".join(f"{g}: {', '.join(f.name for f in fields(cls))}" for g, cls in GROUPS.items())
            + "."
        )
    close = _guesses(key)
    return (f"Did you mean {' or '.join(close[:3])}? " if close else "") + listing


def _table_hint(name: str, raw: Any) -> str:
    """For a bare ``name = value`` at the top of a config file: the table it belongs in."""
    close = _guesses(name)
    if not close:
        return (
            "Settings go in their group's table, e.g. [search] and then limit = 3 under it. "
            + _unknown_hint(name)
        )
    tables = " or ".join(f"[{k.partition('.')[0]}]" for k in close)
    if isinstance(raw, bool):
        shown = str(raw).lower()
    else:
        shown = f'"{raw}"' if isinstance(raw, str) and '"' not in raw else _show(raw)
    field_name = close[0].partition(".")[2]  # the guesses share it: one name, in one group or more
    return f"Settings go in their group's table: write {tables} and then {field_name} = {shown} under it."


def _check_key(key: str, where: str) -> tuple[str, str]:
    group, _, name = key.partition(".")
    cls = GROUPS.get(group)
    if cls is None or name not in {f.name for f in fields(cls)}:
        raise ConfigError(f"Unknown setting {key!r} in {where}.", hint=_unknown_hint(key))
    return group, name


def load_settings(vault: Path | None, overrides: dict[str, str] | None = None) -> LoadedSettings:
    """Merge every layer into one frozen :class:`Settings`, validating names, types and ranges."""
    values: dict[str, dict[str, Any]] = {g: {} for g in GROUPS}
    origins: dict[str, str] = {}
    defaults = Settings()

    def put(key: str, raw: Any, origin: str) -> None:
        group, name = _check_key(key, origin)
        default = getattr(getattr(defaults, group), name)
        values[group][name] = _coerce(key, raw, default, origin)
        origins[key] = origin
        if key == "index.dsn":
            _refuse_password(values[group][name], origin)

    files = [user_config_file()]
    if vault is not None:
        files.append(vault / VAULT_CONFIG_NAME)
    for path in files:
        with translated_errors("read the config file", path):
            if not path.is_file():
                continue
        data = _read_toml(path)
        for group, table in data.items():
            if not isinstance(table, dict):
                raise ConfigError(
                    f"{path}: [{group}] must be a table of settings.",
                    hint=_table_hint(group, table),
                )
            for name, raw in table.items():
                put(f"{group}.{name}", raw, str(path))
    for var, raw in sorted(os.environ.items()):
        if var.startswith(ENV_PREFIX) and "__" in var:
            group, _, name = var[len(ENV_PREFIX) :].lower().partition("__")
            put(f"{group}.{name}", raw, f"env {var}")
    for key, raw in (overrides or {}).items():
        put(key, raw, "--set")

    settings = Settings(**{g: GROUPS[g](**values[g]) for g in GROUPS})
    for group, cls in GROUPS.items():
        for f in fields(cls):
            origins.setdefault(f"{group}.{f.name}", "default")
    validate(settings, origins)
    return LoadedSettings(settings, origins)


def _refuse_password(dsn: str, origin: str) -> None:
    """A DSN must not carry a password: config files are read by other tools, synced and shown.
    The message never repeats the DSN."""
    if DSN_PASSWORD.search(dsn.strip()):
        raise ConfigError(
            f"Setting index.dsn holds a password ({_where(origin)}); vaultlens does not read passwords from settings.",
            hint=f"{_fix(origin)}: remove the password from the connection string and put it in PGPASSWORD or "
            "in a ~/.pgpass file readable only by you (chmod 600; PGPASSFILE names another file).",
        )


def mask_dsn(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***`` (for display)."""
    dsn = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", dsn, flags=re.IGNORECASE)
    return re.sub(r"^(postgres(?:ql)?://[^/@?:]*:)[^/@?]*@", r"\1***@", dsn, flags=re.IGNORECASE)


def rule(key: str) -> Rule | None:
    """The declared rule of ``group.name`` (None for an unknown key)."""
    group, _, name = key.partition(".")
    cls = GROUPS.get(group)
    for f in fields(cls) if cls is not None else ():
        if f.name == name:
            found = f.metadata.get("rule")
            return found if isinstance(found, Rule) else None
    return None


def allowed(key: str) -> str:
    """What ``group.name`` allows, in symbols (">= 1", "0..1"), for ``config show``; "" when anything goes."""
    found = rule(key)
    return found.compact(key.partition(".")[0]) if found else ""


def _where(origin: str) -> str:
    return "the default" if origin == "default" else f"from {origin}"


def validate(s: Settings, origins: dict[str, str] | None = None) -> None:
    """Check every setting against the rule declared beside its field; the first one out of range
    is a :class:`ConfigError` naming the setting, the values it allows and where its value came from."""
    origins = origins or {}
    for group in GROUPS:
        obj = getattr(s, group)
        for f in fields(obj):
            r = f.metadata.get("rule")
            value = getattr(obj, f.name)
            sibling = functools.partial(getattr, obj)
            if not isinstance(r, Rule) or r.allows(value, sibling):
                continue
            key = f"{group}.{f.name}"
            origin = origins.get(key, "default")
            # name a sibling only when it alone is the problem: past a number, the value itself is wrong
            broken = r.broken(value, sibling)
            refs = (
                [b for b in broken if isinstance(b, str)] if all(isinstance(b, str) for b in broken) else []
            )
            default = getattr(type(obj)(), f.name)
            if refs:
                told = "; ".join(
                    f"{group}.{ref} is {_num(sibling(ref))} ({_where(origins.get(f'{group}.{ref}', 'default'))})"
                    for ref in refs
                )
                fix = f"{told}. Change one of the two."
            else:
                fix = f"{_fix(origin)}, or remove it to use the default ({_show(default, 200)})."
            raise ConfigError(
                f"Setting {key} must be {r.describe(group, sibling)}, got {_show(value)} ({_where(origin)}).",
                hint=_allowed_hint(key) + fix,
            )


def _fix(origin: str) -> str:
    if origin == "--set":
        return "Fix the --set value"
    if origin.startswith("env "):
        return f"Fix the environment variable {origin[4:]}"
    return f"Fix it in {origin}"


def as_rows(loaded: LoadedSettings) -> list[tuple[str, Any, str]]:
    """(key, value, origin) for every setting, in declaration order. ``embedding.model`` shows the
    model the provider will use (its default when the setting is empty)."""
    rows = []
    for group in GROUPS:
        obj = getattr(loaded.settings, group)
        for f in fields(obj):
            key = f"{group}.{f.name}"
            value = obj.model_name if key in ("embedding.model", "llm.model") else getattr(obj, f.name)
            if key == "index.dsn":
                value = mask_dsn(value)
            rows.append((key, list(value) if isinstance(value, tuple) else value, loaded.origins[key]))
    return rows
