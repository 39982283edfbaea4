"""Ask: retrieval quality of the final sources, and the pipeline's own time to first token.

quality: for every query of ../shared/eval/queries.jsonl and queries-docs.jsonl, is a relevant note
  among the final Ask sources (after the candidate, freshness, diversity and budget steps; the
  context Ask would send, built by ``services.ask.gather``, no LLM needed), beside plain search
  hit@6 (Ask keeps at most 6 notes). Also how often Ask would say "not in your vault" wrongly.
  Indexes with the bundled model under VAULTLENS_HOME (kept between runs: --home).

latency: a 5,000-note vault (2 sections each, seeded, bench/_spaces.write_notes) indexed with the
  bundled model; ScriptedChatServer (tests/) in its own process answers every chat request after a
  fixed delay. Time to first token = (first streamed piece reaches the caller) - (start of
  ``services.ask``) - the server's delay: query embedding, search, chunk re-reading, prompt,
  connection and the stream parser, with the model loaded (one warm-up ask first).

``--embedder fake`` indexes and embeds with vaultlens.testing's model-free hashing provider: the
pipeline without the cost of the model, which the "query embedding" row measures on its own.

Usage: .venv/bin/python bench/ask_bench.py quality [--home DIR]
       .venv/bin/python bench/ask_bench.py latency [--notes N] [--questions N] [--delay S] [--embedder local|fake]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import REPO, machine, median, need_shared, pct, save, table, temp_home, verdict
from _spaces import WORDS, write_notes

BAR_TTFT_MS = 300.0

CHAT_SERVER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from scripted_chat_server import ChatStep, ScriptedChatServer
class Forever(list):
    def pop(self, index=-1):
        return ChatStep(delay=float(sys.argv[2]))
server = ScriptedChatServer("From your notes [S1], and more [S2].")
server.script = Forever([0])
with server:
    print(server.url, flush=True)
    while True:
        time.sleep(3600)
"""


def quality(home: Path) -> None:
    os.environ["VAULTLENS_HOME"] = str(home)
    import vaultlens as services
    from vaultlens.services.app import App
    from vaultlens.services.asking import ask as asking

    apps: dict[str, App] = {}
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for name in ("queries.jsonl", "queries-docs.jsonl"):
        qfile = need_shared("eval", name)
        base = qfile.parent.parent
        for line in qfile.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            q = json.loads(line)
            if q["vault"] not in apps:
                apps[q["vault"]] = App.open(base / q["vault"])
                services.index(apps[q["vault"]])
            app, relevant = apps[q["vault"]], set(q["relevant"])
            hits = services.search(app, q["query"], limit=6, sections=1)
            context = asking.gather(app, app.files(), app.settings.search, q["query"])
            row = {
                "search hit@6": float(bool({h.path for h in hits} & relevant)),
                "ask sources hit": float(bool({s.path for s in context.sources} & relevant)),
                "notes sent": float(len({s.path for s in context.sources})),
                "chars sent": float(sum(len(s.text) for s in context.sources)),
                "said not in vault": float(context.not_found),
            }
            vault = Path(q["vault"]).name if Path(q["vault"]).name not in ("en", "ru") else q["vault"][7:]
            for g in (f"{name}: {vault}", name, "all"):
                groups[g].append(row)
    rows = [("group", "n", "search hit@6", "ask sources hit", "notes sent", "chars sent", "not in vault")]
    result: dict[str, Any] = {}
    for g, items in sorted(groups.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        mean = {k: sum(r[k] for r in items) / len(items) for k in items[0]}
        result[g] = {"n": len(items), **{k: round(v, 4) for k, v in mean.items()}}
        rows.append((g, str(len(items)), f"{mean['search hit@6']:.3f}", f"{mean['ask sources hit']:.3f}",
                     f"{mean['notes sent']:.1f}", f"{mean['chars sent']:.0f}", f"{int(mean['said not in vault'] * len(items))}"))  # fmt: skip
    print(table(rows))
    save("ask_quality", {"machine": machine(), "groups": result})


def latency(notes: int, questions: int, delay: float, embedder: str) -> None:
    tmp = temp_home("ask-latency")
    import vaultlens as services
    import vaultlens.testing  # registers "fake", the model-free embedder
    from vaultlens.services.app import App

    vault = Path(tmp.name) / "vault"
    write_notes(vault, notes, seed=11)
    server = subprocess.Popen(
        [sys.executable, "-c", CHAT_SERVER, str(REPO / "tests"), str(delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = (server.stdout.readline() if server.stdout else "").strip()
    try:
        settings = {"llm.provider": "openai-compatible", "llm.model": "scripted", "llm.endpoint": url + "/v1"}
        settings["embedding.provider"] = embedder
        app = App.open(vault, settings)
        started = time.monotonic()
        stats = services.index(app)
        index_s = time.monotonic() - started
        rng = random.Random(5)
        asks = [" ".join(rng.sample(WORDS, 4)) for _ in range(questions)]
        services.ask(app, "warm up: bread starter flour", on_text=lambda _: None)  # the model loaded
        ttft: list[float] = []
        total: list[float] = []
        embed: list[float] = []  # the query embedding alone, timed apart from the asks
        for question in asks:
            t0 = time.monotonic()
            app.provider().embed([question])
            embed.append((time.monotonic() - t0) * 1000)
            first: list[float] = []

            def on_text(_: str, seen: list[float] = first) -> None:
                if not seen:
                    seen.append(time.monotonic())

            t0 = time.monotonic()
            services.ask(app, question, on_text=on_text)
            total.append((time.monotonic() - t0) * 1000)
            ttft.append((first[0] - t0 - delay) * 1000)
    finally:
        server.terminate()
        server.wait()
        tmp.cleanup()
    med, p95 = median(ttft), pct(ttft, 0.95)
    print(
        f"{notes} notes, {stats.chunks_embedded} chunks embedded ({embedder}) in {index_s:.0f}s; {questions} questions"
    )
    print(table([("measure", "median ms", "p95 ms"),
                 ("time to first token minus server delay", f"{med:.1f}", f"{p95:.1f}"),
                 ("whole ask (incl. delay and stream)", f"{median(total):.1f}", f"{pct(total, 0.95):.1f}"),
                 ("of which: the query embedding", f"{median(embed):.1f}", f"{pct(embed, 0.95):.1f}")]))  # fmt: skip
    print(f"bar median < {BAR_TTFT_MS:.0f} ms: {verdict(med < BAR_TTFT_MS)}")
    save(
        "ask_latency",
        {"machine": machine(), "notes": notes, "chunks": stats.chunks_embedded, "questions": questions,
         "embedder": embedder, "server_delay_s": delay, "ttft_ms": {"median": med, "p95": p95},
         "query_embedding_ms": {"median": median(embed), "p95": pct(embed, 0.95)}, "bar_ms": BAR_TTFT_MS},
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="what", required=True)
    q = sub.add_parser("quality")
    q.add_argument("--home", type=Path, default=Path("/tmp/vaultlens-ask-quality"))
    lat = sub.add_parser("latency")
    lat.add_argument("--notes", type=int, default=5000)
    lat.add_argument("--questions", type=int, default=30)
    lat.add_argument("--delay", type=float, default=0.2)
    lat.add_argument(
        "--embedder", choices=["local", "fake"], default="local", help="fake: no model (pipeline only)"
    )
    args = parser.parse_args()
    if args.what == "quality":
        quality(args.home)
    else:
        latency(args.notes, args.questions, args.delay, args.embedder)


if __name__ == "__main__":
    main()
