"""Where an API key comes from: its environment variable, else ``$VAULTLENS_HOME/keys.json``.

A key is never a setting (settings are shown by ``config show`` and may sit in a vault's
``.vaultlens.toml``); settings only name the variable. The file is a JSON object of provider
name -> key, and is refused unless only its owner may read it (mode 0600), like ssh refuses a
private key others can read. :func:`redact` is what every error message that could quote a
server's answer goes through, so a key echoed back by a server never reaches a terminal or log.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from vaultlens.config.paths import home
from vaultlens.errors import ConfigError, translated_errors

FILE_NAME = "keys.json"


def keys_file() -> Path:
    return home() / FILE_NAME


@dataclass(frozen=True, slots=True)
class KeySource:
    """Where a provider's key was looked for and whether one was found (never the key itself)."""

    env_var: str
    found_in: str | None  # "env OPENAI_API_KEY", "~/.../keys.json", or None


def _from_file(provider: str) -> str | None:
    path = keys_file()
    with translated_errors("read the API key file", path):
        if not path.is_file():
            return None
        mode = path.stat().st_mode
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"The API key file {path} may be read by other users (mode {stat.S_IMODE(mode):o}).",
                hint=f"Restrict it to yourself: chmod 600 {path}",
            )
        raw = path.read_bytes()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(
            f"The API key file {path} is not UTF-8 text.",
            hint='Save it as UTF-8: one JSON object of provider name -> key, e.g. {"openrouter": "..."}.',
        ) from None
    except ValueError:
        raise ConfigError(
            f"The API key file {path} is not valid JSON.",
            hint='It holds one object of provider name -> key, e.g. {"openrouter": "..."}.',
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"The API key file {path} is not a JSON object of provider name -> key.")
    value = data.get(provider)
    return value if isinstance(value, str) and value else None


def find_key(provider: str, env_var: str) -> tuple[str | None, KeySource]:
    """The key for ``provider`` (``env_var`` first, then the key file) and where it came from."""
    if env_var and os.environ.get(env_var):
        return os.environ[env_var], KeySource(env_var, f"env {env_var}")
    from_file = _from_file(provider)
    if from_file:
        return from_file, KeySource(env_var, str(keys_file()))
    return None, KeySource(env_var, None)


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` (and any long tail of it a server quotes) replaced by ``***``."""
    if not secret:
        return text
    text = text.replace(secret, "***")
    tail = secret[-8:]
    return text.replace(tail, "***") if len(secret) >= 16 else text
