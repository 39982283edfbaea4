"""The local web page: server-rendered pages and a little JavaScript over the same verbs as the CLI.

Mounted by :mod:`vaultlens.server.api` at ``/`` and ``/ui/...`` in the ``vaultlens serve`` process
(the README's "Web page"). Each page is a real URL with stable DOM hooks (ids, classes, data-*)
that the browser tests drive. Reads are GET routes; sends to a model and the writes
(apply, undo, dismiss) are POST routes behind :mod:`vaultlens.web.csrf`.
"""
