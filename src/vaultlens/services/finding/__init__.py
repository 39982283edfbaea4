"""Finding: search (fusion of dense and lexical evidence), similar notes, duplicates, note reads.

The verbs are :mod:`vaultlens.services.verbs.finding`. Modules: ``search`` fusion and grouping,
``evidence`` what a candidate's match is worth, ``beside`` part of a search on a worker thread,
``discover`` similar notes, ``note_profile`` what the index says about each note (shared with
duplicates and the topic audit), ``duplicates/`` the duplicate finder, ``section`` where a result
points, ``notes`` bounded note slices and listings for untrusted callers.
"""
