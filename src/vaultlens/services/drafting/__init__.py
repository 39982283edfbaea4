"""Drafting, the note tools: continue, transform, Dataview, flashcards, each an exact planned diff.

Every tool goes through :mod:`vaultlens.services.drafting.draft`: note text reaches the model only
as untrusted data, after consent for a remote model; the answer becomes exact ``after`` bytes that
:mod:`vaultlens.services.changing.writes` plans, shows and applies (undo and history as for review).
The tools that restructure notes (split, move, merge, batch) use the same pipeline from
:mod:`vaultlens.services.restructuring`. The verbs are :mod:`vaultlens.services.verbs.drafting`.
"""
