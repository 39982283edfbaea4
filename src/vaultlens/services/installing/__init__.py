"""Installing: the Obsidian plugin's files copied into a vault (``plugin``).

The verbs are :mod:`vaultlens.services.verbs.installing`.
"""
