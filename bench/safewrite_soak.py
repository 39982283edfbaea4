"""Kill soak of safewrite: SIGKILL a process that applies and undoes writes, then check every byte.

A vault of 30 notes (LF, CRLF, BOM, no final newline) is written. Each round starts a worker
process that loops: append a line to a random note, undo the newest applied operation, or
create a new note — each through the public services (plan, then apply with the diff's SHA-256).
After a random delay the worker is SIGKILLed. Then, in this process:

- ``recover()`` settles interrupted writes; it must never report ``diverged`` (nobody else edits);
- every note must hold exactly what the journal says (the ``after`` of its newest applied or
  undone operation, else its original bytes; no note created by a not-applied operation exists):
  0 lost bytes, 0 half-written notes;
- no temporary file is left in the vault, a second ``recover()`` finds nothing and changes nothing.

Usage: .venv/bin/python bench/safewrite_soak.py [--kills 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import vaultlens
from _common import machine, save, temp_home, verdict
from vaultlens.fsutil import sha256_hex
from vaultlens.safewrite import Entry
from vaultlens.services.changing import writes
from vaultlens.testing import HashingEmbeddingProvider

N_NOTES = 30

WORKER = textwrap.dedent(
    """
    import random, sys
    from pathlib import Path
    import vaultlens
    from vaultlens.errors import VaultlensError
    from vaultlens.fsutil import sha256_hex
    from vaultlens.services.changing import writes
    from vaultlens.testing import HashingEmbeddingProvider

    vault, seed, ready = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    rng = random.Random(seed)
    app = vaultlens.App.open(vault, provider=HashingEmbeddingProvider())
    notes = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
    ready.write_text("ready")
    i = 0
    while True:
        i += 1
        try:
            roll = rng.random()
            if roll < 0.25:
                applied = [e for e in writes.history(app.vault) if e.state == "applied" and not e.undo_of]
                if not applied:
                    continue
                planned = writes.plan_undo(app.vault, applied[-1].op_id)
            elif roll < 0.35:
                planned = writes.plan_write(app.vault, f"new/{seed}-{i}.md", f"# new {i}\\n".encode(), "create")
            else:
                path = rng.choice(notes)
                now = (vault / path).read_bytes()
                eol = b"\\r\\n" if b"\\r\\n" in now else b"\\n"
                planned = writes.plan_write(app.vault, path, now + eol + f"line {seed}-{i}".encode() + eol, "append")
            writes.apply(app.vault, planned.entry.op_id, sha256_hex(planned.diff))
        except VaultlensError as exc:  # an undo refused because of a later edit is fine
            if exc.code not in ("undo_refused",):
                raise
    """
)


def make_vault(root: Path) -> dict[str, bytes]:
    originals: dict[str, bytes] = {}
    for i in range(N_NOTES):
        text = f"# Note {i}\n\nBody of note {i}.\n"
        data = text.encode()
        if i % 3 == 1:
            data = data.replace(b"\n", b"\r\n")
        if i % 5 == 2:
            data = b"\xef\xbb\xbf" + data
        if i % 7 == 3:
            data = data.rstrip(b"\r\n")
        rel = f"f{i % 4}/n{i:02d}.md"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        originals[rel] = data
    return originals


def expected(
    entries: list[Entry], app: vaultlens.App, originals: dict[str, bytes]
) -> dict[str, bytes | None]:
    """What every path must hold: the newest applied (or undone) operation's ``after``, else the original."""
    want: dict[str, bytes | None] = dict(originals)
    j = writes.journal(app.vault)
    for entry in entries:  # oldest first; operations on one path never overlap (one worker)
        if entry.state in ("applied", "undone"):
            want[entry.path] = j.operation(entry).after
        else:
            want.setdefault(entry.path, None)
    return want


def check(vault: Path, app: vaultlens.App, originals: dict[str, bytes]) -> list[str]:
    problems: list[str] = []
    entries = writes.history(app.vault)
    for path, content in expected(entries, app, originals).items():
        target = vault / path
        actual = target.read_bytes() if target.exists() else None
        if actual != content:
            problems.append(f"{path}: holds {None if actual is None else sha256_hex(actual)[:12]}, journal says "
                            f"{None if content is None else sha256_hex(content)[:12]}")  # fmt: skip
    litter = [p.name for p in vault.rglob("*.tmp")]
    if litter:
        problems.append(f"temporary files left: {litter}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    tmp = temp_home("safewrite-soak")
    vault = Path(tmp.name) / "vault"
    vault.mkdir()
    originals = make_vault(vault)
    app = vaultlens.App.open(vault, provider=HashingEmbeddingProvider())
    rng = random.Random(args.seed)
    found: Counter[str] = Counter()
    bad_rounds: list[dict[str, Any]] = []
    started = time.monotonic()
    for k in range(args.kills):
        ready = Path(tmp.name) / f"ready-{k}"
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(vault), str(args.seed * 100_000 + k), str(ready)]
        )
        while not ready.exists():
            if worker.poll() is not None:
                raise SystemExit(f"the worker of round {k} ended on its own (exit {worker.returncode})")
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.4))
        if worker.poll() is not None:
            raise SystemExit(f"the worker of round {k} failed (exit {worker.returncode})")
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        recovered = writes.recover(app.vault)
        found.update(r.state for r in recovered)
        problems = check(vault, app, originals)
        if any(r.state == "diverged" for r in recovered):
            problems.append("recovery reported diverged")
        before = {p: p.read_bytes() for p in vault.rglob("*") if p.is_file()}
        if writes.recover(app.vault) or before != {
            p: p.read_bytes() for p in vault.rglob("*") if p.is_file()
        }:
            problems.append("a second recovery found or changed something")
        if problems:
            bad_rounds.append({"round": k, "problems": problems})
        if (k + 1) % 20 == 0:
            print(
                f"{k + 1} kills, {len(bad_rounds)} bad rounds, recovered {dict(found)} ({time.monotonic() - started:.0f}s)"
            )
    entries = writes.history(app.vault)
    states = Counter(e.state for e in entries)
    ok = not bad_rounds
    result = {
        "machine": machine(), "seed": args.seed, "kills": args.kills, "operations": len(entries),
        "states": dict(states), "recovered": dict(found), "bad_rounds": len(bad_rounds), "bad": bad_rounds[:10],
        "seconds": round(time.monotonic() - started, 1), "verdict": verdict(ok),
    }  # fmt: skip
    print(
        f"{args.kills} SIGKILLs over {len(entries)} operations {dict(states)}; interrupted writes recovered as "
        f"{dict(found)}; bad rounds: {len(bad_rounds)} -> {verdict(ok)}"
    )
    print(f"results: {save('safewrite_soak', result)}")
    tmp.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
