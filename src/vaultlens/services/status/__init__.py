"""Status and doctor: the typed results of :mod:`vaultlens.services.verbs.status` (and ``clear``)."""
