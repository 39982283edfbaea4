"""The store backend seam the service suites run through: the ``backend`` fixture really runs a suite
once per registered backend, and an App (in this process or a child) opens the backend it is given,
by injection or by the ``index.backend`` setting."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from vaultlens.config.settings import STORE_BACKENDS, load_settings
from vaultlens.errors import ConfigError
from vaultlens.index.backends import backend_names, get_backend
from vaultlens.services.app import App
from vl_support import backend_args, run_cli, write_vault

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")
SUITE = """
import pytest


def test_takes_the_backend(backend: str, request: pytest.FixtureRequest) -> None:
    assert request.node.callspec.id == backend
"""


def test_a_suite_that_takes_backend_runs_once_per_registered_backend(pytester: pytest.Pytester) -> None:
    """Collected and run under this conftest, a test taking ``backend`` gets one run per entry of
    backend_names(), each with the name as its id and its value."""
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(backend_names()))
    assert re.findall(r"test_takes_the_backend\[(\w+)\] PASSED", result.stdout.str()) == backend_names()


def test_index_backend_allows_exactly_the_registered_backends() -> None:
    assert list(STORE_BACKENDS) == backend_names()
    with pytest.raises(
        ConfigError, match=r"Setting index\.backend must be one of postgres, sqlite.*got 'nosuch'"
    ):
        load_settings(None, {"index.backend": "nosuch"})


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return write_vault(tmp_path / "vault", {"a.md": "# A\n\nSome text.\n"})


def test_an_app_opens_the_backend_its_setting_names(vault: Path, backend: str) -> None:
    """What a child process gets from ``--set index.backend=NAME``, and ``config show`` says so."""
    app = App.open(vault, {"index.backend": backend})
    assert app.backend.name == backend
    app.close()
    shown = run_cli(["config", "show", "--json", "--vault", str(vault), *backend_args(backend)])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["index.backend"] == {
        "value": backend,
        "from": "--set",
        "allowed": "one of " + ", ".join(backend_names()),
    }


def test_an_injected_backend_is_the_one_the_app_uses(vault: Path, backend: str) -> None:
    injected = get_backend(backend)
    app = App.open(vault, backend=injected)
    assert app.backend is injected
    app.close()
