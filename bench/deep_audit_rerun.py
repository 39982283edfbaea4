"""Bar: a deep-audit rerun with one changed note sends exactly one map request (issue 14).

On a copy of a shared real vault (default ../shared/vaults/kepano), indexed with the fake embedding provider:
a first `audit deep` (default settings: 5 notes a request, 3 in parallel), one note edited and re-indexed, a
second run, and a third with nothing changed. The model is the tests' scripted DeepModel on loopback; requests
are counted as the server received them.

    .venv/bin/python bench/deep_audit_rerun.py [--vault kepano]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import vaultlens as services
import vaultlens.testing  # registers the deterministic "fake" provider
from _common import machine, need_shared, save, table, temp_home, verdict
from scripted_audit_model import DeepModel
from vaultlens.services.app import App
from vaultlens.services.auditing.deep import audit_llm, plan_deep, run_deep


def _run(app: App, server: DeepModel) -> tuple[int, int, int, float]:
    """(map requests, reduce requests, notes analysed, seconds) of one deep audit."""
    server.requests.clear()
    provider = audit_llm(app.settings)
    started = time.perf_counter()
    try:
        plan = plan_deep(app, app.files(), provider, app.settings.audit.batch_notes)
        report = run_deep(app.files(), plan, app.settings.audit.parallel, consent=True)
    finally:
        provider.close()
    return (
        len(server.map_requests()),
        server.reduce_requests(),
        len(report.notes),
        time.perf_counter() - started,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vault", default="kepano", help="a vault under ../shared/vaults")
    a = parser.parse_args()
    source = need_shared("vaults", a.vault)
    with temp_home("deep-rerun") as tmp, DeepModel() as server:
        vault = Path(tmp) / "vault"
        shutil.copytree(source, vault)
        settings = {"embedding.provider": "fake", "llm.provider": "openai-compatible", "llm.model": "bench",
                    "llm.endpoint": server.url + "/v1", "llm.max_retries": "0"}  # fmt: skip
        app = App.open(vault, settings)
        services.index(app)
        first = _run(app, server)
        changed = sorted(vault.rglob("*.md"))[len(list(vault.rglob("*.md"))) // 2]
        with changed.open("a", encoding="utf-8") as fh:
            fh.write("\nOne more line, so this note's content hash changes.\n")
        services.index(app)
        second = _run(app, server)
        third = _run(app, server)
    ok = second[0] == 1 and third[0] == 0
    rows = [("run", "map requests", "reduce requests", "notes in report", "seconds")]
    for name, r in (("first", first), ("one note changed", second), ("nothing changed", third)):
        rows.append((name, str(r[0]), str(r[1]), str(r[2]), f"{r[3]:.2f}"))
    print(table(rows))
    print(f"bar: a rerun with one changed note sends exactly one map request: {second[0]} -> {verdict(ok)}")
    runs = {"first": first, "one_changed": second, "unchanged": third}
    save("deep_audit_rerun", {"vault": a.vault, "runs": runs, "pass": ok, "machine": machine()})
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
