"""safewrite: the one way vaultlens changes or creates a note (plan, exact diff, journal, compare-and-swap, undo)."""

from vaultlens.safewrite.journal import FINAL_STATES, Entry, Journal
from vaultlens.safewrite.operation import Operation, render_diff
from vaultlens.safewrite.writer import Recovered, applicable, apply, plan, plan_undo, recover

__all__ = [
    "FINAL_STATES",
    "Entry",
    "Journal",
    "Operation",
    "Recovered",
    "applicable",
    "apply",
    "plan",
    "plan_undo",
    "recover",
    "render_diff",
]
