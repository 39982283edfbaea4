"""Helpers shared by the bench scripts: paths, machine description, result files, timing."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
RESULTS = REPO / "bench" / "results"
VENV_BIN = Path(sys.executable).parent


def need_shared(*parts: str) -> Path:
    """A path under ../shared, or exit with a clear message when it is not there."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        sys.exit(
            f"error: {path} not found. The benchmarks read their data from ../shared (next to the repo);"
            " check out or mount it there and run again."
        )
    return path


def temp_home(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A throw-away directory; VAULTLENS_HOME points inside it so no user data is touched."""
    tmp = tempfile.TemporaryDirectory(prefix=f"vaultlens-{prefix}-")
    os.environ["VAULTLENS_HOME"] = str(Path(tmp.name) / "home")
    os.environ.pop("VAULTLENS_CONFIG", None)
    os.environ.pop("VAULTLENS_VAULT", None)
    return tmp


def cached_home(name: str, fresh: bool) -> Path:
    """VAULTLENS_HOME at bench/results/cache/NAME, kept between runs (indexing is incremental);
    emptied first when ``fresh``."""
    home = RESULTS / "cache" / name
    if fresh and home.exists():
        shutil.rmtree(home)
    os.environ["VAULTLENS_HOME"] = str(home)
    os.environ.pop("VAULTLENS_CONFIG", None)
    os.environ.pop("VAULTLENS_VAULT", None)
    return home


def cli() -> str:
    exe = VENV_BIN / "vaultlens"
    return str(exe) if exe.exists() else "vaultlens"


def machine() -> dict[str, Any]:
    cpu = "unknown"
    mem_gb = 0.0
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
    except OSError:
        commit, dirty = "unknown", False
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": mem_gb,
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
        "commit": commit + ("+dirty" if dirty else ""),
    }


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation."""
    s = sorted(values)
    if not s:
        return float("nan")
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(values: list[float]) -> float:
    return statistics.median(values)


def save(name: str, result: dict[str, Any]) -> Path:
    """Append one JSON line to bench/results/NAME.jsonl and write NAME.latest.json."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {"bench": name, "when": dt.datetime.now().isoformat(timespec="seconds"), **result}
    with (RESULTS / f"{name}.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(result) + "\n")
    latest = RESULTS / f"{name}.latest.json"
    latest.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return latest


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, r in enumerate(rows):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"
