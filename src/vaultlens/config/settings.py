"""Settings, grouped by concern, and where each value came from.

Layers, lowest first: built-in defaults, the user config file (``config.toml`` in the user's
config dir, or ``$VAULTLENS_HOME/config.toml``), the vault's own ``.vaultlens.toml``,
``VAULTLENS_<GROUP>__<NAME>`` environment variables, then ``--set group.name=value`` flags.
Every value remembers its layer so ``vaultlens config show`` can say why it is what it is.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from vaultlens.config.paths import user_config_file
from vaultlens.errors import ConfigError

VAULT_CONFIG_NAME = ".vaultlens.toml"
ENV_PREFIX = "VAULTLENS_"
PROVIDER_NAME = re.compile(r"[a-z][a-z0-9_.-]*")  # what embedding.provider (and a registered name) looks like


@dataclass(frozen=True)
class EmbeddingSettings:
    """The one declaration of every embedding default; providers take their values from here.

    ``provider`` names an entry of :mod:`vaultlens.embedding.registry` (built in: local, ollama,
    openai); this layer only checks that it is a name, the registry rejects an unknown one.
    """

    provider: str = "local"
    model: str = "use-multilingual-v3"  # the bundled model: the local provider's only one
    endpoint: str = ""  # "" = the provider's own default endpoint
    dimensions: int = 0  # 0 = whatever the model returns
    api_key_env: str = "OPENAI_API_KEY"
    batch_size: int = 64
    timeout_s: float = 60.0  # per HTTP request
    max_retries: int = 4  # HTTP retries after the first try
    threads: int = 0  # 0 = os.cpu_count()


@dataclass(frozen=True)
class IndexSettings:
    chunk_target: int = 1200
    chunk_max: int = 1800
    chunk_overlap: int = 200
    max_file_mb: float = 10.0
    batch_files: int = 64


@dataclass(frozen=True)
class SearchSettings:
    limit: int = 10
    sections: int = 3
    max_query_chars: int = 2000
    candidates: int = 200
    max_lexical_weight: float = 0.8  # lexical share of the fused score when BM25 explains the whole query


@dataclass(frozen=True)
class DiscoverSettings:
    duplicate_threshold: float = 0.95
    duplicate_limit: int = 100
    min_chars: int = 32


@dataclass(frozen=True)
class WatchSettings:
    debounce_ms: int = 1500  # flush after this long without a new file event


@dataclass(frozen=True)
class Settings:
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    index: IndexSettings = field(default_factory=IndexSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    discover: DiscoverSettings = field(default_factory=DiscoverSettings)
    watch: WatchSettings = field(default_factory=WatchSettings)


GROUPS: dict[str, type[Any]] = {
    "embedding": EmbeddingSettings,
    "index": IndexSettings,
    "search": SearchSettings,
    "discover": DiscoverSettings,
    "watch": WatchSettings,
}


@dataclass(frozen=True)
class LoadedSettings:
    settings: Settings
    origins: dict[str, str]  # "group.name" -> "default" | file path | "env VAR" | "--set"


def _coerce(key: str, value: Any, default: Any) -> Any:
    """Convert a raw value (TOML or string from env/flags) to the type of the default."""
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
                raise ValueError(value)  # no silent truncation of 2.5 to 2
            return int(value)
        if isinstance(default, float):
            if isinstance(value, bool):
                raise ValueError(value)
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(value)
            return number
        if not isinstance(value, str):
            raise ValueError(value)
        return value
    except (TypeError, ValueError):
        raise ConfigError(f"Setting {key} must be a {type(default).__name__}, got {value!r}.") from None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Config file {path} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc.strerror}") from None


def _check_key(key: str, where: str) -> tuple[str, str]:
    group, _, name = key.partition(".")
    cls = GROUPS.get(group)
    if cls is None or name not in {f.name for f in fields(cls)}:
        known = ", ".join(f"{g}.{f.name}" for g, c in GROUPS.items() for f in fields(c))
        raise ConfigError(f"Unknown setting {key!r} in {where}.", hint=f"Known settings: {known}")
    return group, name


def load_settings(vault: Path | None, overrides: dict[str, str] | None = None) -> LoadedSettings:
    """Merge every layer into one frozen :class:`Settings`, validating names and types."""
    values: dict[str, dict[str, Any]] = {g: {} for g in GROUPS}
    origins: dict[str, str] = {}
    defaults = Settings()

    def put(key: str, raw: Any, origin: str) -> None:
        group, name = _check_key(key, origin)
        default = getattr(getattr(defaults, group), name)
        values[group][name] = _coerce(key, raw, default)
        origins[key] = origin

    files = [user_config_file()]
    if vault is not None:
        files.append(vault / VAULT_CONFIG_NAME)
    for path in files:
        if not path.is_file():
            continue
        data = _read_toml(path)
        for group, table in data.items():
            if not isinstance(table, dict):
                raise ConfigError(f"{path}: [{group}] must be a table of settings.")
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
    _validate(settings)
    return LoadedSettings(settings, origins)


def _validate(s: Settings) -> None:
    e = s.embedding
    if not PROVIDER_NAME.fullmatch(e.provider):
        raise ConfigError(
            f"embedding.provider must be a provider name such as local, ollama or openai (got {e.provider!r})."
        )
    if e.dimensions < 0 or e.threads < 0 or e.max_retries < 0:
        raise ConfigError(
            "embedding.dimensions, embedding.threads and embedding.max_retries must be zero or more."
        )
    if not e.timeout_s > 0:
        raise ConfigError("embedding.timeout_s must be more than zero.")
    if not 200 <= s.index.chunk_target <= s.index.chunk_max:
        raise ConfigError("index.chunk_target must be at least 200 and at most index.chunk_max.")
    if not 0 <= s.index.chunk_overlap < s.index.chunk_target:
        raise ConfigError("index.chunk_overlap must be between 0 and index.chunk_target.")
    if s.watch.debounce_ms < 0:
        raise ConfigError("watch.debounce_ms must be zero or more.")
    if s.embedding.batch_size < 1 or s.search.limit < 1 or s.search.sections < 1:
        raise ConfigError("embedding.batch_size, search.limit and search.sections must be positive.")


def as_rows(loaded: LoadedSettings) -> list[tuple[str, Any, str]]:
    """(key, value, origin) for every setting, in declaration order."""
    rows = []
    for group in GROUPS:
        obj = getattr(loaded.settings, group)
        for f in fields(obj):
            key = f"{group}.{f.name}"
            rows.append((key, getattr(obj, f.name), loaded.origins[key]))
    return rows
