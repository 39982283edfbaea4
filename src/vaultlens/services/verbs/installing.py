"""Installing the Obsidian plugin into a vault: what it would write, then writing it (never a note).

No App: the plugin's files go into the vault's ``.obsidian/plugins/vaultlens/`` whether or not the
vault has an index. The work is :mod:`vaultlens.services.installing.plugin`.
"""

from __future__ import annotations

from vaultlens.services.installing.plugin import InstallPlan, PlannedFile, install, plan_install

__all__ = ["InstallPlan", "PlannedFile", "install", "plan_install"]
