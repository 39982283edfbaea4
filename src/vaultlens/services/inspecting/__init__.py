"""Inspecting: what the providers receive, the search quality metrics, the embedding model's speed.

The verbs are :mod:`vaultlens.services.verbs.inspecting`.
"""
