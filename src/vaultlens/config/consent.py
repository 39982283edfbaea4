"""Which remote destinations the user agreed to send note text to, remembered per user.

Kept in ``$VAULTLENS_HOME/consent.json`` (never in the vault) as a JSON list of destination
descriptions (provider, model and endpoint), so changing any of them asks again. The policy
lives in :func:`require_consent`: services call it before note text leaves the machine, and
interfaces answer a :class:`~vaultlens.errors.ConsentRequired` by asking the user and calling
again with ``granted_now=True``.

A file that cannot be read as such a list is refused with a :class:`~vaultlens.errors.ConfigError`,
never taken as empty: taking it as empty would overwrite the user's earlier answers on the next
grant.
"""

from __future__ import annotations

import json
from pathlib import Path

from vaultlens.config.paths import ensure_home, home
from vaultlens.errors import ConfigError, ConsentRequired, translated_errors
from vaultlens.fsutil import atomic_write

FILE_NAME = "consent.json"


def consent_file() -> Path:
    return home() / FILE_NAME


def _load() -> list[str]:
    path = consent_file()
    fix = "Fix it (a JSON list of destination strings) or delete it; vaultlens will then ask again."
    with translated_errors("read the consent file", path):
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            ensure_home(writable=False)  # says VAULTLENS_HOME is a file (or lies under one)
            raise
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"The consent file {path} is not UTF-8 text.", hint=fix) from None
    except ValueError as exc:
        raise ConfigError(f"The consent file {path} is not valid JSON ({exc}).", hint=fix) from None
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise ConfigError(
            f"The consent file {path} is not a list of destinations (found {type(data).__name__}"
            f"{' with non-string items' if isinstance(data, list) else ''}).",
            hint=fix,
        )
    return data


def granted(destination: str) -> bool:
    return destination in _load()


def grant(destination: str) -> None:
    """Remember a yes, written atomically and durably (mode 0600: it is the user's own record)."""
    ensure_home()  # a bad VAULTLENS_HOME is named as such, not as a failed write of this file
    items = _load()
    if destination in items:
        return
    path = consent_file()
    with translated_errors("save your agreement", path):
        atomic_write(path, json.dumps([*items, destination], indent=2) + "\n", mode=0o600)


def require_consent(
    destination: str, what: str, granted_now: bool = False, hint: str | None = None, remember: bool = True
) -> None:
    """Return when note text may go to ``destination``; raise ``ConsentRequired`` otherwise.

    ``what`` says what would be sent (shown to the user). ``granted_now=True`` means the
    caller has just asked the user and got a yes. ``remember=True`` (the command line, a script)
    keeps that yes in the consent file and lets an earlier one count. ``remember=False`` (a
    server's request) makes ``granted_now`` the only answer: it is not stored, and no stored
    grant counts, so a program can neither switch the terminal's question off nor ride on a yes
    the user gave in the terminal. ``hint`` replaces the default advice of the error.
    """
    if granted_now:
        if remember:
            grant(destination)
        return
    if not remember or not granted(destination):
        raise ConsentRequired(destination, what, hint=hint)
