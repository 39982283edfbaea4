"""The layer order of docs/architecture.md, enforced: a module imports only from its layer or layers above."""

from __future__ import annotations

import ast
import re
from importlib.util import resolve_name
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "vaultlens"
ORDER = [
    "errors",
    "fsutil",
    "config",
    "vault",
    "chunking",
    "embedding",
    "llm",
    "index",
    "safewrite",
    "services",
    "web",
    "server",
    "cli",
]


# Modules outside the layer packages, placed in the order above.
PLACED = {
    "vaultlens": "services",  # __init__.py: the public API re-exports the services facade
    "vaultlens.testing": "embedding",  # a hashing provider registered through the embedding registry
    "vaultlens.__main__": "cli",  # `python -m vaultlens` runs the CLI
}
_TOP_LEVEL = set(ORDER) | {m.removeprefix("vaultlens.") for m in PLACED}


def _layer(module: str) -> str | None:
    """The layer ``module`` (or a name imported from it) belongs to; None outside vaultlens."""
    parts = module.split(".")
    if parts[0] != "vaultlens":
        return None
    if len(parts) > 1 and parts[1] in ORDER:
        return parts[1]
    if len(parts) > 1 and parts[1] in _TOP_LEVEL:
        return PLACED["vaultlens." + parts[1]]
    return PLACED["vaultlens"]  # the package root, or a name it re-exports (`from vaultlens import App`)


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(("vaultlens", *parts[: -1 if parts[-1] == "__init__" else None]))


def _constant_str(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _imports(path: Path, module: str) -> set[str]:
    """Every module ``path`` (module ``module``) imports, absolute, however it is written.

    ``from M import n`` counts as ``M.n``: ``n`` may be a submodule (``from vaultlens import cli``).
    Relative forms resolve against the module's package; ``importlib.import_module`` and
    ``__import__`` count when the name is a string literal.
    """
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_name("." * node.level + (node.module or ""), package)
            found.update(base if alias.name == "*" else f"{base}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and (ast.unparse(node.func) in ("__import__", "import_module", "importlib.import_module"))
            and (name := _constant_str(node.args[0] if node.args else None)) is not None
        ):
            anchor = _constant_str(node.args[1] if len(node.args) > 1 else None) or package
            found.add(resolve_name(name, anchor))
    return found


def lower_layer_imports(path: Path, module: str) -> list[str]:
    """What ``path`` (module ``module``) imports from layers below its own."""
    own = _layer(module)
    assert own is not None, f"{module} is not a vaultlens module"
    allowed = set(ORDER[: ORDER.index(own) + 1])
    return sorted(
        m for m in _imports(path, module) if (layer := _layer(m)) is not None and layer not in allowed
    )


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_every_module_has_a_place() -> None:
    """A new top-level module goes into ORDER or PLACED; unplaced, it would count as the package root."""
    unplaced = [
        m for p in _sources() if (m := _module_name(p)) != "vaultlens" and m.split(".")[1] not in _TOP_LEVEL
    ]
    assert unplaced == []


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_module_imports_only_from_layers_above(path: Path) -> None:
    module = _module_name(path)
    bad = lower_layer_imports(path, module)
    assert not bad, f"{module} ({_layer(module)}) imports from lower layers: {bad}"


def _sample(tmp_path: Path, source: str, package: bool = False) -> Path:
    sample = tmp_path / ("__init__.py" if package else "sample.py")
    sample.write_text(source, encoding="utf-8")
    return sample


@pytest.mark.parametrize(
    ("module", "package", "source", "reported"),
    [
        # relative imports, resolved against the importing module's package
        ("vaultlens.services.app", False, "from ..cli import main\n", ["vaultlens.cli.main"]),
        ("vaultlens.testing", False, "from . import index\n", ["vaultlens.index"]),
        (
            "vaultlens.index",
            True,
            "from ..server.api import create_app\n",
            ["vaultlens.server.api.create_app"],
        ),
        # names imported from the package root: a submodule, or the root itself (services)
        ("vaultlens.index.store", False, "from vaultlens import cli, fsutil\n", ["vaultlens.cli"]),
        ("vaultlens.safewrite.writer", False, "from vaultlens import App\n", ["vaultlens.App"]),
        ("vaultlens.llm.base", False, "import vaultlens\n", ["vaultlens"]),
        # the modules outside the layer packages
        (
            "vaultlens",
            True,
            "from vaultlens.server.api import x\nfrom vaultlens.services.app import App\n",
            ["vaultlens.server.api.x"],
        ),
        ("vaultlens", True, "from vaultlens.cli import main\n", ["vaultlens.cli.main"]),
        (
            "vaultlens.testing",
            False,
            "from vaultlens.index.store import Store\nfrom vaultlens.embedding import base\n",
            ["vaultlens.index.store.Store"],
        ),
        ("vaultlens.__main__", False, "from vaultlens.cli.main import main\n", []),
        # a dynamic import by name
        (
            "vaultlens.config.settings",
            False,
            "import importlib\nimportlib.import_module('vaultlens.llm.registry')\n",
            ["vaultlens.llm.registry"],
        ),
    ],
)
def test_the_layer_check_sees_every_import_form(
    tmp_path: Path, module: str, package: bool, source: str, reported: list[str]
) -> None:
    """Each form is reported from a sample module (the rule cannot pass vacuously)."""
    assert lower_layer_imports(_sample(tmp_path, source, package), module) == reported


BACKEND_DIR = SRC / "index" / "sqlite"
BACKEND = set(BACKEND_DIR.glob("*.py"))  # the SQLite backend: its store and its ANN tier
BACKEND_REGISTRY = SRC / "index" / "backends.py"
BACKEND_MODULE = "vaultlens.index.sqlite"
PG_MODULE = "vaultlens.index.postgres"
BACKEND_PACKAGES = (BACKEND_MODULE, PG_MODULE)  # each backend's package (index/backends.py names them)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def backend_imports(path: Path, module: str) -> list[str]:
    """What ``path`` (module ``module``) imports from a store backend other than its own, however it
    is written."""
    others = [b for b in BACKEND_PACKAGES if not _within(module, b)]
    return sorted(m for m in _imports(path, module) if any(_within(m, b) for b in others))


def test_only_the_backend_registry_imports_a_backend() -> None:
    importers = [
        p.relative_to(SRC).as_posix()
        for p in _sources()
        if p != BACKEND_REGISTRY and backend_imports(p, _module_name(p))
    ]
    assert importers == [], "depend on vaultlens.index.store (the contract), not on a store backend"


@pytest.mark.parametrize(
    ("module", "source", "reported"),
    [
        ("vaultlens.services.app", "import vaultlens.index.sqlite.store as s\n", [f"{BACKEND_MODULE}.store"]),
        ("vaultlens.services.app", "from vaultlens.index import sqlite\n", [BACKEND_MODULE]),
        (
            "vaultlens.services.app",
            "from vaultlens.index.sqlite.store import SQLiteStore\n",
            [f"{BACKEND_MODULE}.store.SQLiteStore"],
        ),
        (
            "vaultlens.index.indexing.indexer",
            "from ..sqlite.store import SQLiteStore\n",
            [f"{BACKEND_MODULE}.store.SQLiteStore"],
        ),
        ("vaultlens.index.indexing.indexer", "from .. import sqlite\n", [BACKEND_MODULE]),
        ("vaultlens.services.app", "from ..index.sqlite import ann\n", [f"{BACKEND_MODULE}.ann"]),
        (
            "vaultlens.services.app",
            "import importlib\nimportlib.import_module('vaultlens.index.sqlite.store')\n",
            [f"{BACKEND_MODULE}.store"],
        ),
        (
            "vaultlens.index.indexing.indexer",
            "from importlib import import_module\nimport_module('..sqlite', __package__)\n",
            [BACKEND_MODULE],
        ),
        (
            "vaultlens.services.app",
            "__import__('vaultlens.index.sqlite.store')\n",
            [f"{BACKEND_MODULE}.store"],
        ),
        # the PostgreSQL backend, from a service and from the other backend
        ("vaultlens.services.finding.search", "from vaultlens.index import postgres\n", [PG_MODULE]),
        (
            "vaultlens.services.app",
            "from vaultlens.index.postgres.store import PostgresStore\n",
            [f"{PG_MODULE}.store.PostgresStore"],
        ),
        (
            "vaultlens.services.finding.note_profile",
            "from ...index.postgres import fulltext\n",
            [f"{PG_MODULE}.fulltext"],
        ),
        (
            "vaultlens.services.app",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import vaultlens.index.postgres.vectors\n",
            [f"{PG_MODULE}.vectors"],
        ),
        (
            "vaultlens.index.sqlite.store",
            "from vaultlens.index.postgres import schema\n",
            [f"{PG_MODULE}.schema"],
        ),
        # a backend's own modules, the contract, and a module whose name merely starts with a backend's
        ("vaultlens.index.postgres.store", "from vaultlens.index.postgres import schema\n", []),
        ("vaultlens.index.sqlite.store", "from .vectors import SQLiteVectors\n", []),
        ("vaultlens.services.app", "from vaultlens.index import store, sqlite_notes, postgresql\n", []),
    ],
)
def test_the_backend_check_sees_every_import_form(
    tmp_path: Path, module: str, source: str, reported: list[str]
) -> None:
    """Each form is reported from a sample module (the rule cannot pass vacuously)."""
    assert backend_imports(_sample(tmp_path, source), module) == reported


@pytest.mark.parametrize(
    ("pattern", "what"),
    [
        (r"\bMATCH\b", "FTS5 query syntax"),
        (r"bm25\(", "FTS5's BM25 function"),
        (r"df\s*\+\s*0\.5", "FTS5's idf formula"),
        (r"\bsqlite3\b", "SQLite itself"),
    ],
)
def test_backend_details_stay_in_the_backend(pattern: str, what: str) -> None:
    # both backends score with FTS5's idf on purpose (they rank alike): index/bm25_top.py says it once
    shared = {SRC / "index" / "bm25_top.py", *(SRC / "index" / "postgres").glob("*.py")}
    backends = BACKEND | shared if "idf" in what else BACKEND
    allowed = BACKEND | {SRC / "errors.py"} if what == "SQLite itself" else backends
    leaks = [
        p.relative_to(SRC).as_posix()
        for p in _sources()
        if p not in allowed and re.search(pattern, p.read_text(encoding="utf-8"))
    ]
    assert leaks == [], f"{what} outside the store backends: {leaks}"


def test_the_index_lifecycle_has_one_home() -> None:
    """The live folder, staging, the switch, wipe and the pointer file are defined in index/lifecycle.py only."""
    defines = re.compile(
        r"^\s*(POINTER\s*=|def (live_dir|live_index_dir|staging_dir|switch_to|write_pointer|read_pointer|"
        r"collect_garbage|discard_stale_staging|start_over|live_lock)\b)",
        re.M,
    )
    owners = [
        p.relative_to(SRC).as_posix() for p in _sources() if defines.search(p.read_text(encoding="utf-8"))
    ]
    assert owners == ["index/lifecycle.py"], owners


def test_services_and_indexer_take_the_store_protocol() -> None:
    for rel in (
        "index/indexing/indexer.py",
        "index/rebuild.py",
        "services/finding/search.py",
        "services/finding/discover.py",
        "services/finding/duplicates/report.py",
        "services/finding/duplicates/coverage.py",
        "services/finding/note_profile.py",
    ):
        text = (SRC / rel).read_text(encoding="utf-8")
        assert "SQLiteStore" not in text, rel
        assert "from vaultlens.index.store import" in text or "vaultlens.index.lifecycle" in text, rel


# Calls that create, replace, move or delete files. Only safewrite may aim them at a vault; the
# modules listed below use them for vaultlens's own data under VAULTLENS_HOME (indexes, caches,
# consent, locks, the journal) or for the BEIR corpus that `eval beir` writes there.
_FILE_WRITES = {
    "write_bytes", "write_text", "symlink_to", "unlink", "rmdir", "rmtree", "mkdir", "makedirs", "touch",
    "chmod", "copy2", "copyfile", "copytree", "atomic_write", "atomic_file", "fdopen",
}  # fmt: skip
_MODULE_WRITES = {"replace", "rename", "link", "remove", "move", "copy", "open"}  # as os.X / shutil.X
_WRITES_UNDER_HOME = {
    "fsutil.py", "config/consent.py", "config/paths.py", "index/lifecycle.py", "index/lock.py",
    "index/sqlite/store.py", "index/postgres/__init__.py", "services/inspecting/evaluation.py",
    "index/sqlite/schema.py", "index/sqlite/connection.py",  # a new store: its folder and file, under VAULTLENS_HOME
    "index/sqlite/vectors.py",  # the vector cache and derived arrays beside the store, under VAULTLENS_HOME
    "index/sqlite/ann.py",  # the ANN tier's files beside the store, under VAULTLENS_HOME
    "index/vector_file.py",  # the vector cache files the stores name, in their folders under VAULTLENS_HOME
    "index/postgres/vectors.py",  # its vector cache files in the store's folder, under VAULTLENS_HOME
    "services/auditing/report_files.py",  # audit reports: only outside the vault (refuses a folder inside it)
    "services/auditing/outline_cache.py",  # under VAULTLENS_HOME
    "services/auditing/deep_cache.py",  # deep audit's per-note results, under VAULTLENS_HOME
    "server/runtime.py",  # servers/<pid>.json beside the index, under VAULTLENS_HOME
    "services/restructuring/batch_state.py",  # a batch's resumable state, under VAULTLENS_HOME
    "config/pairing.py",  # the Obsidian plugin's write token (its hash), under VAULTLENS_HOME
    "services/installing/plugin.py",  # the plugin's own files in .obsidian/plugins/vaultlens/, never a note
}  # fmt: skip


def _write_mode(node: ast.Call, position: int) -> bool:
    modes = [a.value for a in node.args[position : position + 1] if isinstance(a, ast.Constant)]
    modes += [
        k.value.value
        for k in node.keywords
        if k.arg in ("mode", "flags") and isinstance(k.value, ast.Constant)
    ]
    return any(isinstance(m, str) and bool(set(m) & set("wax+")) for m in modes)


def _writes(path: Path) -> list[str]:
    """File-writing calls in ``path``: the names above, ``os.replace``-like calls, writing ``open``s."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            hit = func.id in _FILE_WRITES or (func.id == "open" and _write_mode(node, 1))
        elif isinstance(func, ast.Attribute):
            on_module = isinstance(func.value, ast.Name) and func.value.id in ("os", "shutil")
            hit = (
                func.attr in _FILE_WRITES
                or (on_module and func.attr in _MODULE_WRITES and func.attr != "open")
                or (on_module and func.attr == "open")  # os.open: flags decide; treat as a write
                or (func.attr == "open" and not on_module and _write_mode(node, 0))
            )
        else:
            hit = False
        if hit:
            found.append(f"{ast.unparse(func)}() line {node.lineno}")
    return found


def test_only_safewrite_writes_into_the_vault() -> None:
    """Every file write outside safewrite is in a module that writes only under VAULTLENS_HOME."""
    leaks = {
        rel: calls
        for p in _sources()
        if not (rel := p.relative_to(SRC).as_posix()).startswith("safewrite/")
        and rel not in _WRITES_UNDER_HOME
        and (calls := _writes(p))
    }
    assert leaks == {}, f"file writes outside safewrite: {leaks}"


def test_the_write_check_sees_writes(tmp_path: Path) -> None:
    """The check above finds each kind of write it forbids and ignores reads (it cannot pass vacuously)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os, shutil\nfrom pathlib import Path\n"
        "Path('x').write_text('y')\nos.replace('a', 'b')\nopen('f', 'w')\nPath('x').open('ab')\n"
        "shutil.move('a', 'b')\nos.open('f', os.O_WRONLY)\n"
        "open('r')\nPath('x').open()\n'abc'.replace('a', 'b')\nPath('x').read_bytes()\n",
        encoding="utf-8",
    )
    assert len(_writes(sample)) == 6


APP_MODULE = "vaultlens.services.app"
SEES_THE_APP = (
    "vaultlens.services.verbs",
    "vaultlens.web",
    "vaultlens.server",
    "vaultlens.cli",
)  # the facade and interfaces


def app_importers(path: Path, module: str) -> list[str]:
    """Whether ``path`` (module ``module``) imports the App while it is a feature module: only the verbs
    (services/verbs/), the interfaces and the package root may; a feature receives narrow dependencies."""
    if module in (APP_MODULE, "vaultlens") or module.startswith(SEES_THE_APP):
        return []
    return sorted(m for m in _imports(path, module) if m == APP_MODULE or m.startswith(APP_MODULE + "."))


def test_only_the_verbs_and_the_interfaces_see_the_app() -> None:
    """Feature services take VaultFiles / an IndexReader / settings, so how a service gets its store or
    files changes in services/verbs/ alone (services/context.py)."""
    found = {
        p.relative_to(SRC).as_posix(): hits for p in _sources() if (hits := app_importers(p, _module_name(p)))
    }
    assert found == {}, f"feature modules that import the App: {found}"


def test_the_app_check_sees_a_feature_importing_the_app(tmp_path: Path) -> None:
    sample = _sample(tmp_path, "from vaultlens.services.app import App\n")
    assert app_importers(sample, "vaultlens.services.asking.ask") == ["vaultlens.services.app.App"]
    assert app_importers(sample, "vaultlens.services.verbs.asking") == []


INTERFACES = ("vaultlens.cli", "vaultlens.server", "vaultlens.web")
DOORS = ("vaultlens.services.verbs", APP_MODULE)  # what an interface may import from services


def feature_imports(path: Path, module: str) -> list[str]:
    """What ``path`` (module ``module``, an interface) imports from services besides the verbs and the
    App, however it is written: a feature module, or a type or constant from one (or re-exported by
    the package root). The verb modules export every name an interface needs."""
    if not any(_within(module, i) for i in INTERFACES):
        return []
    return sorted(
        m
        for m in _imports(path, module)
        if _layer(m) == "services" and not any(_within(m, door) for door in DOORS)
    )


def test_interfaces_import_only_the_verbs_and_the_app() -> None:
    found = {
        p.relative_to(SRC).as_posix(): hits
        for p in _sources()
        if (hits := feature_imports(p, _module_name(p)))
    }
    assert found == {}, (
        f"interfaces that import a feature of services (import it from its verb module): {found}"
    )


@pytest.mark.parametrize(
    ("module", "source", "reported"),
    [
        (
            "vaultlens.cli.main",
            "import vaultlens.services.finding.search\n",
            ["vaultlens.services.finding.search"],
        ),
        (
            "vaultlens.cli.main",
            "from vaultlens.services.finding import search\n",
            ["vaultlens.services.finding.search"],
        ),
        (
            "vaultlens.cli.render",
            "from vaultlens.services.finding.search import NoteHit\n",
            ["vaultlens.services.finding.search.NoteHit"],
        ),
        ("vaultlens.cli.main", "from vaultlens.services import consent\n", ["vaultlens.services.consent"]),
        ("vaultlens.cli.main", "import vaultlens.services\n", ["vaultlens.services"]),
        (
            "vaultlens.cli.write_cmds",
            "from ..services.changing.writes import Planned\n",
            ["vaultlens.services.changing.writes.Planned"],
        ),
        (
            "vaultlens.cli.render",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vaultlens.services.status import results\n",
            ["vaultlens.services.status.results"],
        ),
        (
            "vaultlens.cli.write_many_cmds",
            "def run():\n    from vaultlens.services.restructuring.batch import describe\n",
            ["vaultlens.services.restructuring.batch.describe"],
        ),
        (
            "vaultlens.cli.main",
            "import importlib\nimportlib.import_module('vaultlens.services.finding.notes')\n",
            ["vaultlens.services.finding.notes"],
        ),
        ("vaultlens.cli.main", "from vaultlens import SimilarResult\n", ["vaultlens.SimilarResult"]),
        ("vaultlens.cli.main", "from vaultlens.services import verbsx\n", ["vaultlens.services.verbsx"]),
        (
            "vaultlens.server.api",
            "from vaultlens.services.finding import notes\n",
            ["vaultlens.services.finding.notes"],
        ),
        (
            "vaultlens.web.pages",
            "from vaultlens.services.drafting.presets import PRESETS\n",
            ["vaultlens.services.drafting.presets.PRESETS"],
        ),
        # the doors, and a module that is not an interface
        (
            "vaultlens.cli.main",
            "from vaultlens.services.verbs import finding\nfrom vaultlens.services.verbs.finding import NoteHit\n"
            "from vaultlens.services.app import App\nimport vaultlens.services.verbs.status\n"
            "from vaultlens.services import app, verbs\nfrom vaultlens.config import settings\n",
            [],
        ),
        ("vaultlens.services.verbs.finding", "from vaultlens.services.finding import search\n", []),
    ],
)
def test_the_interface_check_sees_every_import_form(
    tmp_path: Path, module: str, source: str, reported: list[str]
) -> None:
    """Each form is reported from a sample module (the rule cannot pass vacuously)."""
    assert feature_imports(_sample(tmp_path, source), module) == reported


TYPED_INTERFACES = ("server", "cli")  # web/ joins as its renderers read typed results by attribute


def any_uses(path: Path) -> list[int]:
    """The lines where ``path`` names ``typing.Any`` (imported by name or as ``typing.Any``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if (isinstance(node, ast.Name) and node.id == "Any")
        or (isinstance(node, ast.Attribute) and node.attr == "Any")
        or (isinstance(node, ast.ImportFrom) and any(a.name == "Any" for a in node.names))
    )


@pytest.mark.parametrize("package", TYPED_INTERFACES)
def test_a_typed_interface_names_no_any(package: str) -> None:
    """An interface renders typed results by attribute and JSON as ``dict[str, object]``: an ``Any``
    there is a result read back by string key or a type nobody checks."""
    found = {
        p.relative_to(SRC).as_posix(): lines
        for p in sorted((SRC / package).rglob("*.py"))
        if (lines := any_uses(p))
    }
    assert found == {}, f"Any in {package}/: {found}"


def test_the_any_check_sees_each_form(tmp_path: Path) -> None:
    sample = _sample(
        tmp_path,
        "from typing import Any\nimport typing\nx: typing.Any = 1\ndef f(d: dict[str, Any]) -> None: ...\n"
        "y: dict[str, object] = {}\n",
    )
    assert any_uses(sample) == [1, 3, 4]


MAX_LINES = 800  # a file longer than this holds more than one thing: split it into modules named for each


def long_files(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """Text files under ``root`` longer than ``limit`` lines (binary files, caches and the metadata
    an editable install writes beside the package, ``*.egg-info``, left out)."""
    found = {}
    for p in sorted(root.rglob("*")):
        generated = any(part == "__pycache__" or part.endswith(".egg-info") for part in p.parts)
        if not p.is_file() or generated or b"\0" in (data := p.read_bytes()):
            continue
        lines = data.count(b"\n") + (not data.endswith(b"\n") and bool(data))
        if lines > limit:
            found[p.relative_to(root).as_posix()] = lines
    return found


def test_no_source_file_is_longer_than_800_lines() -> None:
    assert long_files(SRC.parent) == {}


def test_the_length_check_counts_lines(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text("x = 1\n" * 801, encoding="utf-8")
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "page.js").write_text("a;\n" * 800 + "b;", encoding="utf-8")  # no final newline
    (tmp_path / "fits.py").write_text("x = 1\n" * 800, encoding="utf-8")
    (tmp_path / "model.bin").write_bytes(b"\0\n" * 2000)
    (tmp_path / "vaultlens.egg-info").mkdir()
    (tmp_path / "vaultlens.egg-info" / "PKG-INFO").write_text("x\n" * 900, encoding="utf-8")
    assert long_files(tmp_path) == {"long.py": 801, "web/page.js": 801}


def import_graph(sources: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``sources`` it imports, every form ``_imports`` sees, type-only and
    function-level ones included (``from M import n`` is an edge to M.n when that is a module, else to M)."""
    graph: dict[str, set[str]] = {}
    for module, path in sources.items():
        edges = {name if name in sources else name.rpartition(".")[0] for name in _imports(path, module)}
        graph[module] = {m for m in edges if m in sources and m != module}
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules of each import circle (strongly connected component of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in sorted(graph):  # Tarjan's algorithm, without recursion
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_there_is_no_import_circle() -> None:
    """Not even a type-only one: a circle means two modules each need the other, so neither can be
    read, tested or moved alone (the store contract once named the indexer's Progress)."""
    assert import_circles(import_graph({_module_name(p): p for p in _sources()})) == []


@pytest.mark.parametrize(
    ("a_source", "b_source", "circles"),
    [
        (
            "from vaultlens.x.b import B\n",
            "from vaultlens.x.a import A\n",
            [["vaultlens.x.a", "vaultlens.x.b"]],
        ),
        # type-only, relative, a submodule by name, and inside a function
        (
            "from vaultlens.x.b import B\n",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n",
            [["vaultlens.x.a", "vaultlens.x.b"]],
        ),
        (
            "from vaultlens.x import b\n",
            "def f():\n    from vaultlens.x import a\n",
            [["vaultlens.x.a", "vaultlens.x.b"]],
        ),
        # through a third module; and one way only
        (
            "import vaultlens.x.b\n",
            "import vaultlens.x.c\n",
            [["vaultlens.x.a", "vaultlens.x.b", "vaultlens.x.c"]],
        ),
        ("from vaultlens.x.b import B\n", "import json\n", []),
    ],
)
def test_the_circle_check_sees_every_import_form(
    tmp_path: Path, a_source: str, b_source: str, circles: list[list[str]]
) -> None:
    """Each form is reported from sample modules (the rule cannot pass vacuously)."""
    files = {"a": a_source, "b": b_source, "c": "from vaultlens.x.a import A\n"}
    sources = {}
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text, encoding="utf-8")
        sources[f"vaultlens.x.{name}"] = tmp_path / f"{name}.py"
    assert import_circles(import_graph(sources)) == circles
