"""The CLI's layout: a command module (`cli/*_cmds.py`) imports no other one; what several share (options,
the write steps, rendering) lives in the shared modules, and only the root (`cli/main.py`) gathers them."""

from __future__ import annotations

from pathlib import Path

from test_architecture import SRC, _imports, _module_name

CLI = SRC / "cli"


def command_imports(path: Path, module: str) -> list[str]:
    """The other command modules ``path`` (module ``module``) imports (any form ``_imports`` sees)."""
    return sorted(
        m
        for m in _imports(path, module)
        if m.startswith("vaultlens.cli.") and m.split(".")[2].endswith("_cmds") and not m.startswith(module)
    )


def test_command_modules_do_not_import_each_other() -> None:
    found = {
        p.name: hits for p in sorted(CLI.glob("*_cmds.py")) if (hits := command_imports(p, _module_name(p)))
    }
    assert found == {}, f"command modules importing another command module: {found}"


def test_the_check_sees_a_command_module_importing_another(tmp_path: Path) -> None:
    """Every import form counts, so the check above cannot pass vacuously."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from vaultlens.cli.write_cmds import AllowOpenOpt\nimport vaultlens.cli.watch_cmds\n"
        "from vaultlens.cli import options\nfrom .audit_cmds import moc\n",
        encoding="utf-8",
    )
    assert command_imports(sample, "vaultlens.cli.audit_cmds") == [
        "vaultlens.cli.watch_cmds",
        "vaultlens.cli.write_cmds.AllowOpenOpt",
    ]
