"""The local web page: server-rendered pages and a little JavaScript over the same verbs as the CLI.

Mounted by :mod:`vaultlens.server.api` at ``/`` and ``/ui/...`` in the ``vaultlens serve`` process
(docs/web.md has the URL and DOM contract). Reads are GET routes; sends to a model and the writes
(apply, undo, dismiss) are POST routes behind :mod:`vaultlens.web.csrf`.
"""
