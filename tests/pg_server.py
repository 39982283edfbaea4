"""A real PostgreSQL 15 cluster with pgvector for the tests: initdb in a temp dir, loopback, a free port.

As root the cluster runs as the ``postgres`` user (initdb refuses root). The server's address goes
into libpq's own variables (PGHOST, PGPORT, PGUSER, PGDATABASE), which every App, backend and child
process of the session inherits; `get_backend("postgres")` with no DSN then finds it. Role
``postgres`` logs in without a password over loopback; role ``vl_secret`` only with its password, so
tests can see an authentication failure. `.ci/install-postgres.sh` installs what this needs.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

PGBIN = Path("/usr/lib/postgresql/15/bin")
EXTENSION = Path("/usr/share/postgresql/15/extension/vector.control")
DATABASE = "vaultlens_test"
SECRET_ROLE, SECRET = "vl_secret", "correct horse battery staple"
RUNNING = "VL_TEST_PG_DATA"  # set while a session's cluster runs: a nested session (pytester) reuses it


@dataclass(frozen=True)
class PgServer:
    data: Path
    port: int
    owner: str | None  # the OS user the server runs as (None: this process's user)

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={DATABASE}"


def missing() -> str | None:
    """Why no cluster can be started here, or None."""
    if not (PGBIN / "initdb").is_file():
        return f"PostgreSQL 15 is not installed ({PGBIN}/initdb missing; run .ci/install-postgres.sh as root)"
    if not EXTENSION.is_file():
        return (
            f"pgvector is not installed for PostgreSQL 15 ({EXTENSION} missing; run .ci/install-postgres.sh)"
        )
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: cannot start PostgreSQL as the postgres user"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_owner(owner: str | None, args: list[str]) -> list[str]:
    return ["runuser", "-u", owner, "--", *args] if owner else args


def start(data: Path | None = None, settings: str = "") -> PgServer:
    """A cluster in a new temp dir, or in ``data`` (initialised there unless it holds one already:
    then only started, its databases as they were); ``settings`` are more ``-c name=value`` options."""
    owner = "postgres" if os.geteuid() == 0 else None
    fresh = data is None or not (data / "PG_VERSION").is_file()
    if data is None:
        data = Path(tempfile.mkdtemp(prefix="vaultlens-pg-"))
    data.mkdir(parents=True, exist_ok=True)
    if owner:
        shutil.chown(data, owner, owner)
    run = subprocess.run
    if fresh:
        run(_as_owner(owner, [str(PGBIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                              "-E", "UTF8", "--locale=C.UTF-8"]), check=True, capture_output=True)  # fmt: skip
        (data / "pg_hba.conf").write_text(
            "local all all trust\n"
            f"host all {SECRET_ROLE} 127.0.0.1/32 scram-sha-256\n"
            "host all all 127.0.0.1/32 trust\n",
            encoding="utf-8",
        )
    port = _free_port()
    options = f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={data} -c fsync=off {settings}"
    run(_as_owner(owner, [str(PGBIN / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(data / "log"),
                          "-w", "start"]), check=True, capture_output=True)  # fmt: skip
    server = PgServer(data, port, owner)
    if fresh:
        psql = ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-v", "ON_ERROR_STOP=1", "-q"]
        run([*psql, "-c", f"CREATE DATABASE {DATABASE}"], check=True, capture_output=True)
        run([*psql, "-d", DATABASE, "-c", "CREATE EXTENSION vector",
             "-c", f"CREATE ROLE {SECRET_ROLE} LOGIN PASSWORD '{SECRET}'"], check=True, capture_output=True)  # fmt: skip
    return server


def stop(server: PgServer, keep: bool = False) -> None:
    """Stop the cluster and delete its data dir, unless ``keep`` (a clean shutdown: started again later)."""
    mode = "fast" if keep else "immediate"
    subprocess.run(
        _as_owner(server.owner, [str(PGBIN / "pg_ctl"), "-D", str(server.data), "-m", mode, "stop"]),
        check=False,
        capture_output=True,
    )
    if not keep:
        shutil.rmtree(server.data, ignore_errors=True)


def environ(server: PgServer) -> dict[str, str]:
    """libpq's variables that point a DSN-less connection at ``server``."""
    return {"PGHOST": "127.0.0.1", "PGPORT": str(server.port), "PGUSER": "postgres", "PGDATABASE": DATABASE,
            RUNNING: str(server.data)}  # fmt: skip
