"""The CLI's layout: a command module (`cli/*_cmds.py`) imports no other one; what several share (options,
the write steps, rendering) lives in the shared modules, and only the root (`cli/main.py`) gathers them."""

from __future__ import annotations

import ast
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


JSON_WRITERS = {"print_json", "dumps", "_emit"}  # where an as_dict() goes: the --json output


def _called(node: ast.AST) -> str | None:
    """The name a call calls (``render.print_json`` → ``print_json``); None for anything else."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def dict_reads(source: str) -> list[str]:
    """Places that read a result back through its JSON form instead of its attributes: an ``as_dict()``
    bound to a name, tested, subscripted, or handed to anything but the JSON writers (``render.print_json``,
    ``json.dumps``, the watch stream's ``_emit``); a dict or list display around it is looked through."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _called(node) != "as_dict":
            continue
        up: ast.AST = node
        while isinstance(parent := parents[up], ast.Dict | ast.List | ast.ListComp | ast.Starred | ast.IfExp):
            up = parent
        if isinstance(parent, ast.Assign) and isinstance(parent.value, ast.Dict | ast.List | ast.ListComp):
            continue  # a JSON object assembled from several (written as a whole just after)
        if isinstance(parent, ast.Call) and _called(parent) in JSON_WRITERS and up is not parent.func:
            continue
        found.append((node.lineno, ast.unparse(parent)[:80]))
    return [f"line {n}: {text}" for n, text in sorted(found)]


def test_the_cli_renders_results_by_attribute() -> None:
    """Item 2 of issue 45: a renderer reads a typed result's attributes; its as_dict() is for --json only
    (and no Any: tests/test_architecture.py's TYPED_INTERFACES)."""
    found = {
        p.name: hits for p in sorted(CLI.glob("*.py")) if (hits := dict_reads(p.read_text(encoding="utf-8")))
    }
    assert found == {}, f"results read back as dicts: {found}"


def test_the_dict_read_check_sees_each_form() -> None:
    sample = (
        "data = result.as_dict()\n"
        "_show(result.as_dict())\n"
        "if u.as_dict():\n    pass\n"
        "x = r.as_dict()['path']\n"
        "render.print_json(result.as_dict())\n"
        "render.print_json({**result.as_dict(), 'applied': None if a is None else a.as_dict()})\n"
        "json.dumps([h.as_dict() for h in hits])\n"
        "done = {**result.as_dict(), 'applied': []}\n"
    )
    assert [line.split(":")[0] for line in dict_reads(sample)] == ["line 1", "line 2", "line 3", "line 5"]
