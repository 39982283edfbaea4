"""The indexer's own work: `vaultlens index` with the cheap test provider (``embedding.provider=fake``,
the quality tier off), so what is timed is reading, parsing, chunking, hashing and the store, not a
model. The fake's hashing runs on the embed-ahead thread, so the indexing thread's own CPU seconds
are reported apart (``main_cpu_s``). Also the CPU seconds of the store's batch writes (``apply``) and
of reading a note to its chunks (``Indexer._read``: read, parse, chunk, hash), and a hash of every
ParsedNote over the given vaults with the parse's CPU time (best of 3), so two source trees can be
compared for speed and for identical output::

    cd bench && PYTHONPATH=../src ../.venv/bin/python index_own_work.py --notes 2000 \\
        --parse ../../shared/vaults/fastapi-docs ../../shared/vaults/kepano ../../shared/vaults/ru-wiki ../examples/vault
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import machine, save, table, temp_home
from audit_structure import generate

PARTS = {
    "apply": ("vaultlens.index.sqlite.store", "SQLiteStore", "apply"),
    "read": ("vaultlens.index.indexing.indexer", "Indexer", "_read"),  # read, parse, chunk and hash one note
}


def timed_parts() -> dict[str, float]:
    """Wrap each of PARTS to add its thread CPU seconds to the returned dict."""
    spent = dict.fromkeys(PARTS, 0.0)
    for name, (module, cls, attr) in PARTS.items():
        owner: Any = importlib.import_module(module)  # vaultlens.index is also a verb: import by name
        owner = getattr(owner, cls) if cls else owner
        fn = getattr(owner, attr)

        def wrapper(*a: Any, _fn: Callable[..., Any] = fn, _name: str = name, **k: Any) -> Any:
            c = time.thread_time()
            try:
                return _fn(*a, **k)
            finally:
                spent[_name] += time.thread_time() - c

        setattr(owner, attr, wrapper)
    return spent


def index_runs(vault: Path, root: Path, runs: int) -> list[dict[str, float]]:
    import vaultlens as services
    import vaultlens.testing  # registers the fake provider

    spent = timed_parts()
    out = []
    for r in range(runs):
        os.environ["VAULTLENS_HOME"] = str(root / f"home-{r}")
        before = dict(spent)
        w, c, t = time.perf_counter(), time.process_time(), time.thread_time()
        app = services.App.open(vault, {"embedding.provider": "fake", "embedding.tier": "off"})
        try:
            services.index(app)
        finally:
            app.close()
        out.append(
            {
                "wall_s": round(time.perf_counter() - w, 3),
                "cpu_s": round(time.process_time() - c, 3),
                "main_cpu_s": round(time.thread_time() - t, 3),
                **{f"{k}_cpu_s": round(spent[k] - before[k], 3) for k in spent},
                "load": os.getloadavg()[0],
            }
        )
    return out


def parse_check(roots: list[Path]) -> dict[str, Any]:
    from vaultlens.vault.parse import NotText, decode_note, parse_note

    notes = []
    for root in roots:
        for p in sorted(root.rglob("*.md")):
            with contextlib.suppress(NotText):
                notes.append((str(p.relative_to(root)), decode_note(p.read_bytes())))
    digest = hashlib.sha256()
    for rel, text in notes:
        digest.update(repr(parse_note(text, rel)).encode("utf-8", "surrogatepass"))
    best = float("inf")
    for _ in range(3):
        c = time.process_time()
        for rel, text in notes:
            parse_note(text, rel)
        best = min(best, time.process_time() - c)
    return {"notes": len(notes), "sha256": digest.hexdigest(), "parse_cpu_s": round(best, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=2000, help="synthetic notes (2,000)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--parse", nargs="*", type=Path, default=[], help="more vaults for the ParsedNote hash")
    args = ap.parse_args()
    tmp = temp_home("own-work")
    root = Path(tmp.name)
    synth = root / "synthetic"
    synth.mkdir()
    generate(synth, args.notes)
    runs = index_runs(synth, root, args.runs)
    parsed = parse_check([*args.parse, synth])
    rows: list[tuple[str, ...]] = [
        ("run", "wall s", "cpu s", "main cpu s", "apply cpu s", "read cpu s", "load")
    ]
    for i, r in enumerate(runs, 1):
        rows.append(
            (
                str(i),
                *(
                    f"{r[k]:.2f}"
                    for k in ("wall_s", "cpu_s", "main_cpu_s", "apply_cpu_s", "read_cpu_s", "load")
                ),
            )
        )
    print(table(rows))
    print(
        f"ParsedNote of {parsed['notes']} notes: sha256 {parsed['sha256'][:16]}, parse {parsed['parse_cpu_s']} CPU-s"
    )
    print(
        f"result: {save('index_own_work', {'machine': machine(), 'args': vars(args) | {'parse': [str(p) for p in args.parse]}, 'runs': runs, 'parse': parsed})}"
    )
    tmp.cleanup()


if __name__ == "__main__":
    main()
