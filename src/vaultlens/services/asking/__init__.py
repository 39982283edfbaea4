"""Asking: ``ask`` answers from the vault's passages with citations, ``chat`` its follow-ups.

The verbs are :mod:`vaultlens.services.verbs.asking`.
"""
