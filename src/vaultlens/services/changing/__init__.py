"""Changing notes: ``writes`` plans, applies, undoes and lists every write (through safewrite);
``review/`` the relationship review of a pair of notes, whose outcome is a planned write.

The verbs are :mod:`vaultlens.services.verbs.changing`.
"""
