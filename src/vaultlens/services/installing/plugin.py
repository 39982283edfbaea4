"""`vaultlens obsidian install`: the plugin's built files (package data) copied into a vault.

The three files (``main.js``, ``manifest.json``, ``styles.css``) ship inside the wheel, so a user
with only pip gets the plugin without Node. They go to ``.obsidian/plugins/vaultlens/`` and
nowhere else: never a note, never a folder reached through a link (a link there could lead out of
the vault), never over another plugin's files (a manifest with another id, or files the plugin
does not ship; its own ``data.json``, the settings Obsidian keeps, is left as it is). The plan
says what each file would become, so the command shows it before anything is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

from vaultlens.errors import VaultError, VaultlensError, translated_errors
from vaultlens.fsutil import atomic_write

PLUGIN_ID = "vaultlens"
SHIPPED = ("main.js", "manifest.json", "styles.css")
KEPT = frozenset({"data.json"})  # the plugin's settings, written by Obsidian: never touched
Action = Literal["create", "replace", "unchanged"]


class PluginFolderTaken(VaultlensError):
    code = "plugin_folder_taken"
    exit_code = 2
    http_status = 409


@dataclass(frozen=True, slots=True)
class PlannedFile:
    name: str
    target: Path
    data: bytes
    action: Action


@dataclass(frozen=True, slots=True)
class InstallPlan:
    vault: Path
    folder: Path
    version: str
    files: tuple[PlannedFile, ...]

    @property
    def changes(self) -> tuple[PlannedFile, ...]:
        return tuple(f for f in self.files if f.action != "unchanged")

    def as_dict(self) -> dict[str, Any]:
        return {
            "vault": str(self.vault),
            "folder": str(self.folder),
            "version": self.version,
            "files": [{"name": f.name, "action": f.action, "bytes": len(f.data)} for f in self.files],
        }


def shipped_files() -> dict[str, bytes]:
    """The built plugin as the package holds it."""
    root = files("vaultlens") / "obsidian_plugin"
    return {name: (root / name).read_bytes() for name in SHIPPED}


def _refuse_links(vault: Path, folder: Path) -> None:
    here = vault
    for part in folder.relative_to(vault).parts:
        here = here / part
        if here.is_symlink():
            raise VaultError(
                f"{here} is a link; the plugin is installed only into a real folder inside the vault.",
                hint="Replace the link with a folder, or copy the plugin's files by hand.",
            )


def _check_ours(folder: Path) -> None:
    """Refuse a folder that holds another plugin (its manifest names another id, or unknown files)."""
    if not folder.is_dir():
        return
    manifest = folder / "manifest.json"
    if manifest.is_file():
        try:
            found = json.loads(manifest.read_bytes()).get("id")
        except (ValueError, AttributeError):
            found = None
        if found != PLUGIN_ID:
            raise PluginFolderTaken(
                f"{folder} holds another plugin (its manifest.json names id {found!r}, not {PLUGIN_ID!r}).",
                hint="Nothing was written. Move that plugin away first if the folder should be vaultlens's.",
            )
    others = sorted(p.name for p in folder.iterdir() if p.name not in SHIPPED and p.name not in KEPT)
    if others:
        raise PluginFolderTaken(
            f"{folder} holds files the vaultlens plugin does not ship: {', '.join(others[:5])}.",
            hint="Nothing was written. Move them away first if the folder should be vaultlens's.",
        )


def plan_install(vault: Path) -> InstallPlan:
    """What installing would write, file by file; refuses (nothing written) as the docstring says."""
    vault = vault.expanduser().absolute()
    if not vault.is_dir():
        raise VaultError(f"No vault folder at {vault}.", hint="Pass --vault with the vault's folder.")
    folder = vault / ".obsidian" / "plugins" / PLUGIN_ID
    with translated_errors("look into the plugin folder", folder):
        _refuse_links(vault, folder)
        _check_ours(folder)
        built = shipped_files()
        planned = []
        for name, data in built.items():
            target = folder / name
            action: Action = "create"
            if target.exists():
                action = "unchanged" if target.read_bytes() == data else "replace"
            planned.append(PlannedFile(name, target, data, action))
    version = str(json.loads(built["manifest.json"])["version"])
    return InstallPlan(vault, folder, version, tuple(planned))


def install(plan: InstallPlan) -> InstallPlan:
    """Write the plan's changed files (each atomically), after checking the folder again."""
    _refuse_links(plan.vault, plan.folder)
    _check_ours(plan.folder)
    with translated_errors("install the Obsidian plugin", plan.folder):
        plan.folder.mkdir(parents=True, exist_ok=True)
        _refuse_links(plan.vault, plan.folder)  # a link put in place meanwhile is still refused
        for f in plan.changes:
            atomic_write(f.target, f.data)
    return plan
