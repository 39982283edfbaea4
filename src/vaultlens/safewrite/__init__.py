"""safewrite: the one way vaultlens changes or creates a note (plan, exact diff, journal, compare-and-swap, undo),
one note at a time or several as one operation group."""

from vaultlens.safewrite.group import (
    Change,
    applicable_group,
    apply_group,
    group_diff,
    plan_group,
    plan_group_undo,
)
from vaultlens.safewrite.journal import FINAL_STATES, SHOW_BEFORE, Entry, Group, Journal
from vaultlens.safewrite.operation import Operation, render_diff
from vaultlens.safewrite.writer import TRASH, Recovered, applicable, apply, plan, plan_undo, recover

__all__ = [
    "FINAL_STATES",
    "SHOW_BEFORE",
    "TRASH",
    "Change",
    "Entry",
    "Group",
    "Journal",
    "Operation",
    "Recovered",
    "applicable",
    "applicable_group",
    "apply",
    "apply_group",
    "group_diff",
    "plan",
    "plan_group",
    "plan_group_undo",
    "plan_undo",
    "recover",
    "render_diff",
]
