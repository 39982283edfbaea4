"""The one exception root for vaultlens.

Every error a user can cause or meet derives from :class:`VaultlensError`, carries a stable
``code`` and an ``exit_code``, and has a message that says what to do. Interfaces translate
them in one place (the CLI prints the message, never a traceback).

    VaultlensError
     ├── ConfigError            bad config file, unknown setting, bad value
     ├── VaultError             vault path missing / not a directory / note not found
     ├── ProviderError          embedding provider failed (HTTP error, garbage output)
     │    └── ProviderTimeout
     ├── StoreError             index missing, corrupt, from a newer version
     │    ├── SpaceMismatch     index built with another embedding space
     │    └── IndexLocked       another process is writing this index
     └── Cancelled              the user interrupted a long job (state is kept)
"""

from __future__ import annotations


class VaultlensError(Exception):
    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class ConfigError(VaultlensError):
    code = "config"
    exit_code = 2


class VaultError(VaultlensError):
    code = "vault"
    exit_code = 2


class ProviderError(VaultlensError):
    code = "provider"
    exit_code = 3


class ProviderTimeout(ProviderError):
    code = "provider_timeout"


class StoreError(VaultlensError):
    code = "store"
    exit_code = 4


class SpaceMismatch(StoreError):
    code = "space_mismatch"
    exit_code = 5


class IndexLocked(StoreError):
    code = "index_locked"
    exit_code = 6


class Cancelled(VaultlensError):
    code = "cancelled"
    exit_code = 130
