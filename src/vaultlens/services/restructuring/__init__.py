"""Restructuring: split a note, move or merge notes (links repointed), and a preset over many notes.

Each is one operation group planned through :mod:`vaultlens.services.changing.writes`; the model's
part goes through :mod:`vaultlens.services.drafting.draft`. The verbs are
:mod:`vaultlens.services.verbs.restructuring`.
"""
