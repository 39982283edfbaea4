"""schemathesis against `vaultlens serve`'s OpenAPI schema, on loopback, with bounded examples.

schemathesis is never a project dependency: it lives in its own virtualenv under /tmp, created
(and `pip install schemathesis`) on the first run and reused after. A small vault is indexed
with the deterministic `fake` embedding provider and served by `vaultlens serve --port 0` in a
child process (the port comes from its runtime file); schemathesis runs every check against
/openapi.json with `--max-examples` per operation and a fixed seed, and writes a HAR file of
every exchange. The script counts the answers by status class. Bar: no 5xx, except a 502 from
`POST /v1/ask` when the configured LLM is not reachable (a documented upstream failure: no model
runs here), which is counted apart.

Usage: .venv/bin/python bench/schemathesis_api.py [--examples 30] [--seed 1] [--venv DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import vaultlens
import vaultlens.testing  # registers the fake provider in this process too
from _common import machine, save, table, temp_home, verdict
from vaultlens.server import runtime

CHILD = (
    "import sys, vaultlens.testing; from vaultlens.cli.main import main; sys.argv[0] = 'vaultlens'; main()"
)
NOTES = {
    "Notes/Cats.md": "# Cats\n\nCats sleep most of the day and hunt mice at night. See [[Dogs]].\n",
    "Notes/Dogs.md": "# Dogs\n\nDogs love long walks, fetch and sleeping near cats. #pets\n",
    "Tech/HTTP caching.md": "# HTTP caching\n\nCache-Control max-age and ETag validators keep responses fresh.\n",
    "Café.md": "# Café\n\nEspresso and croissants on the corner, every morning.\n",
    "Long.md": "# Long\n\n" + "".join(f"Line {i} about sourdough bread.\n" for i in range(400)),
}


def schemathesis_venv(where: Path) -> Path:
    """The schemathesis executable in its own virtualenv, created once."""
    exe = where / "bin" / "schemathesis"
    if not exe.exists():
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        subprocess.run([str(where / "bin" / "pip"), "install", "-q", "schemathesis"], check=True)
    return exe


def serve(vault: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """`vaultlens serve` on a free loopback port; returns the process and its base URL."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, "serve", "--vault", str(vault), "--port", "0", "--no-watch"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    app = vaultlens.App.open(vault)
    deadline = time.monotonic() + 120
    while (info := runtime.running_server(app)) is None:
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            sys.exit(f"error: serve did not start: {child.communicate()[1][-2000:]}")
        time.sleep(0.1)
    return child, info.base_url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=30, help="examples per operation")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--venv", type=Path, default=Path("/tmp/vaultlens-schemathesis-venv"))
    args = parser.parse_args()
    exe = schemathesis_venv(args.venv)
    with temp_home("schemathesis") as tmp:
        os.environ["VAULTLENS_EMBEDDING__PROVIDER"] = "fake"  # the server's settings, and ours
        vault = Path(tmp) / "vault"
        for rel, text in NOTES.items():
            (vault / rel).parent.mkdir(parents=True, exist_ok=True)
            (vault / rel).write_text(text, encoding="utf-8")
        vaultlens.index(vaultlens.App.open(vault))
        child, url = serve(vault, dict(os.environ))
        har = Path(tmp) / "exchanges.har"
        try:
            started = time.monotonic()
            run = subprocess.run(
                [
                    str(exe),
                    "run",
                    f"{url}/openapi.json",
                    "--checks",
                    "all",
                    "--max-examples",
                    str(args.examples),
                    "--seed",
                    str(args.seed),
                    "--request-timeout",
                    "30",
                    "--report",
                    "har",
                    "--report-har-path",
                    str(har),
                    "--output-truncate",
                    "true",
                ],
                capture_output=True,
                text=True,
                cwd=tmp,  # schemathesis keeps a .schemathesis/ cache in its working folder
            )
            seconds = time.monotonic() - started
        finally:
            child.terminate()
            _, err = child.communicate(timeout=30)
        entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"] if har.exists() else []
    statuses: Counter[str] = Counter()
    server_errors: Counter[str] = Counter()
    for entry in entries:
        code = int(entry["response"]["status"])
        statuses[f"{code // 100}xx"] += 1
        if code >= 500:
            method, path = entry["request"]["method"], entry["request"]["url"].split("?")[0].removeprefix(url)
            server_errors[f"{code} {method} {path}"] += 1
    upstream = sum(n for key, n in server_errors.items() if key == "502 POST /v1/ask")
    other_5xx = sum(server_errors.values()) - upstream
    print(run.stdout[-6000:])
    print(table([("status", "answers"), *((k, str(v)) for k, v in sorted(statuses.items()))]))
    for key, n in sorted(server_errors.items()):
        print(f"  {n:5d}  {key}")
    tracebacks = err.count("Traceback")
    ok = other_5xx == 0 and tracebacks == 0 and bool(entries)
    print(
        f"{verdict(ok)}: {len(entries)} requests in {seconds:.0f} s, {other_5xx} 5xx "
        f"(+ {upstream} upstream 502 from /v1/ask), {tracebacks} tracebacks in the server log; "
        f"schemathesis exit code {run.returncode}"
    )
    save(
        "schemathesis_api",
        {
            "machine": machine(),
            "examples": args.examples,
            "seed": args.seed,
            "requests": len(entries),
            "statuses": dict(statuses),
            "server_errors": dict(server_errors),
            "schemathesis_exit": run.returncode,
            "pass": ok,
        },
    )


if __name__ == "__main__":
    main()
