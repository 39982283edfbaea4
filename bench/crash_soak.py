"""Crash soak: SIGKILL `vaultlens index` and `vaultlens rebuild --background` at seeded random points.

A seeded vault (300 notes) is indexed in embedding space A (the scripted loopback server in its own
process). Each round picks, with a fixed seed, either an `index` after editing 60 notes or a
background rebuild into the other space, starts it and SIGKILLs it after a random delay (a round
whose command finished first counts as a completion, not a kill). After every kill: the live index
and any unfinished rebuild pass their integrity and consistency checks, the live index answers a
search in its own space, and no file in the vault differs from what this script wrote (SHA-256).
At the end one rebuild and one index run complete, and the live index must hold exactly the chunk
IDs and hashes a clean full index of the same vault gives.

Usage: .venv/bin/python bench/crash_soak.py [--quick] [--kills N] [--seed S]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import cli, machine, save, temp_home, verdict
from _spaces import env_for, space, start_server, write_notes

DIMS = 64
N_NOTES = 300
MODELS = ("space-a", "space-b")


def vault_hashes(vault: Path) -> dict[str, str]:
    return {
        p.relative_to(vault).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(vault.rglob("*"))
        if p.is_file()
    }


def home_of(root: Path) -> Any:
    """The index lifecycle of one vault's index root (where the live store is, the staging folders)."""
    from vaultlens.index.backends import get_backend
    from vaultlens.index.lifecycle import IndexHome

    return IndexHome(root, get_backend())


def numbered_dirs(root: Path) -> list[Path]:
    """Every ``r<k>`` folder under the index root: the live one, unfinished rebuilds, leftovers."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and re.fullmatch(r"r\d+", p.name))


def live_model(root: Path) -> str:
    from vaultlens.index.sqlite_store import DB_NAME

    con = sqlite3.connect(f"file:{home_of(root).live_dir() / DB_NAME}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'space'").fetchone()
    finally:
        con.close()
    import json

    return str(json.loads(row[0])["model"]) if row else MODELS[0]


def chunk_keys(directory: Path) -> set[tuple[str, str]]:
    from vaultlens.index.sqlite_store import DB_NAME

    con = sqlite3.connect(f"file:{directory / DB_NAME}?mode=ro", uri=True)
    try:
        return {(str(a), str(b)) for a, b in con.execute("SELECT id, content_hash FROM chunks")}
    finally:
        con.close()


def findings(root: Path, vault: Path, url: str, expected: dict[str, str]) -> list[str]:
    """Everything wrong after a kill; empty means the round passed."""
    from vaultlens.index.sqlite_store import DB_NAME, SQLiteStore
    from vaultlens.services import app as services
    from vaultlens.services.app import App

    found: list[str] = []
    live = home_of(root).live_dir()
    for d in [live, *numbered_dirs(root)]:
        if (d / DB_NAME).exists():
            store = SQLiteStore(d)
            try:
                found += [f"{d.name}: {p}" for p in store.problems()]
            finally:
                store.close()
    app = App.open(vault, space(url, live_model(root), DIMS))
    try:
        if not services.search(app, "unique5 river", limit=3):
            found.append("the live index answered nothing")
    except Exception as exc:
        found.append(f"search failed: {exc!r}")
    finally:
        app.close()
    if vault_hashes(vault) != expected:
        found.append("a vault file changed")
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20 kills")
    ap.add_argument("--kills", type=int, default=None)
    ap.add_argument("--seed", type=int, default=20240613)
    args = ap.parse_args()
    target = args.kills or (20 if args.quick else 200)
    rng = random.Random(args.seed)

    from vaultlens.config.paths import index_dir

    with temp_home("crash") as tmp:
        vault = Path(tmp) / "vault"
        write_notes(vault, N_NOTES, args.seed)
        server, url = start_server(DIMS, 0.01)
        bad: list[dict[str, Any]] = []
        kills = completions = 0
        counts = {"index": 0, "rebuild": 0}
        t0 = time.monotonic()
        try:
            subprocess.run(
                [cli(), "index", "--vault", str(vault)], env=env_for(space(url, MODELS[0], DIMS)), check=True
            )
            root = index_dir(vault)
            while kills < target:
                current = live_model(root)
                if rng.random() < 0.5:
                    op, model = "index", current
                    for i in rng.sample(range(N_NOTES), 60):
                        note = vault / f"topic{i % 20}" / f"note{i:05d}.md"
                        note.write_text(
                            note.read_text(encoding="utf-8") + f"\nedit {rng.random()}\n", encoding="utf-8"
                        )
                    argv = [cli(), "index", "--vault", str(vault)]
                else:
                    op, model = "rebuild", MODELS[1 - MODELS.index(current)]
                    argv = [cli(), "rebuild", "--background", "--vault", str(vault)]
                expected = vault_hashes(vault)
                env = env_for(space(url, model, DIMS, batch=16), VAULTLENS_INDEX__BATCH_FILES="20")
                proc = subprocess.Popen(
                    argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
                )
                time.sleep(rng.uniform(0.3, 1.2) if op == "index" else rng.uniform(0.3, 2.5))
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    kills += 1
                    counts[op] += 1
                else:
                    completions += 1
                    if proc.returncode != 0:
                        bad.append(
                            {
                                "round": kills,
                                "op": op,
                                "error": (proc.stderr.read() if proc.stderr else "")[-300:],
                            }
                        )
                proc.wait()
                problems = findings(root, vault, url, expected)
                if problems:
                    bad.append({"after_kill": kills, "op": op, "problems": problems[:5]})
                if kills % 20 == 0 and proc.returncode == -signal.SIGKILL:
                    print(f"{kills} kills, {completions} completions, {len(bad)} bad rounds", flush=True)

            final = MODELS[1 - MODELS.index(live_model(root))]
            env = env_for(space(url, final, DIMS))
            subprocess.run(
                [cli(), "rebuild", "--background", "--vault", str(vault)],
                env=env,
                check=True,
                capture_output=True,
            )
            subprocess.run([cli(), "index", "--vault", str(vault)], env=env, check=True, capture_output=True)
            converged_keys = chunk_keys(home_of(root).live_dir())
            problems = findings(root, vault, url, vault_hashes(vault))
            os.environ["VAULTLENS_HOME"] = str(Path(tmp) / "clean-home")
            subprocess.run(
                [cli(), "index", "--vault", str(vault)],
                env=env_for(space(url, final, DIMS)),
                check=True,
                capture_output=True,
            )
            clean_keys = chunk_keys(home_of(index_dir(vault)).live_dir())
        finally:
            server.kill()
            server.wait()

    converged = converged_keys == clean_keys and not problems
    result = {
        "machine": machine(),
        "seed": args.seed,
        "notes": N_NOTES,
        "kills": kills,
        "kills_by_op": counts,
        "completions": completions,
        "bad_rounds": len(bad),
        "bad": bad[:10],
        "final_problems": problems,
        "converged_to_clean_index": converged,
        "seconds": round(time.monotonic() - t0, 1),
        "pass": not bad and converged,
    }
    print(
        f"{kills} SIGKILLs ({counts['index']} index, {counts['rebuild']} rebuild --background), "
        f"{completions} runs finished before their kill; rounds with findings: {len(bad)}; "
        f"converged to a clean index: {converged} -> {verdict(bool(result['pass']))}"
    )
    for b in bad[:5]:
        print("  ", b)
    print(f"results: {save('crash_soak' + ('_quick' if args.quick else ''), result)}")
    sys.exit(0 if result["pass"] else 1)


if __name__ == "__main__":
    main()
