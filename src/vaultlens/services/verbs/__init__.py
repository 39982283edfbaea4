"""The facade: every verb an interface calls, one module per concern.

Interfaces (CLI, HTTP API, MCP, the web page) build one :class:`~vaultlens.services.app.App` and
call these, then render the typed result (each has ``as_dict()``, the one JSON form). A verb that
would send note text off the machine or write a note first raises a
:class:`~vaultlens.errors.ConfirmationRequired` carrying the exact proposal, and does it when
called again with the grant. The package's own ``__init__`` imports nothing, so a command loads
only the concern it runs (``vaultlens/__init__.py`` re-exports them all, lazily).
"""
