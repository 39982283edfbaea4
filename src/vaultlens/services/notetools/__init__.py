"""Note tools: continue, transform, Dataview, flashcards, split and batch, each an exact planned diff.

Every tool goes through :mod:`vaultlens.services.notetools.draft`: note text reaches the model only
as untrusted data, after consent for a remote model; the answer becomes exact ``after`` bytes that
:mod:`vaultlens.services.writes` plans, shows and applies (undo and history as for review).
"""
