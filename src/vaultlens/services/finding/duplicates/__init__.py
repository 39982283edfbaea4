"""The duplicate finder: notes that repeat each other, from the vectors and texts already in the index.

Modules: ``report`` the report (exact groups, whole-note pairs, shared passages, same names) and its
types; ``coverage`` one run's candidates and how much of each note the other covers; ``vector_pairs``
close section vectors without an all-pairs matrix; ``passages`` the lines two notes share;
``translations`` the same note in two languages. What the index says about each note (layout, line
keys, boilerplate, script) is :mod:`vaultlens.services.finding.note_profile`, shared with ``similar``.
"""
