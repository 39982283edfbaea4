"""Bar: `vaultlens audit structure` on a generated 5,000-note vault in under 5 s (issue 14).

The vault looks like a real one, with more links than the shared real vaults: 60 folders two levels deep, front matter on most notes (tags, aliases, quoted
property links), headings, block ids, wikilinks with heading and block subpaths, some broken, some to names two
folders share, Markdown links, embeds of images, code blocks and comments holding links that must not count.

Measured in the same run, as baselines: reading every note's bytes (the floor), and parsing every note with
the full Markdown parser (`parse_note`), which is what the audit would cost without the outline reader.

Cold runs start without the outline cache (every note read and outlined); warm runs find every note unchanged.
Wall time and CPU time are both reported: on a shared, loaded machine wall time mostly measures the queue.

    .venv/bin/python bench/audit_structure.py [--notes 5000] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from _common import cli, machine, median, save, table, temp_home, verdict
from vaultlens.config import paths
from vaultlens.services.app import App
from vaultlens.services.auditing import OUTLINE_CACHE, audit_structure
from vaultlens.vault.parse import decode_note, parse_note
from vaultlens.vault.scan import scan_vault

BAR_SECONDS = 5.0
WORDS = [
    "vault",
    "note",
    "link",
    "graph",
    "idea",
    "project",
    "meeting",
    "review",
    "draft",
    "summary",
    "cache",
    "index",
    "search",
    "tag",
    "folder",
    "map",
    "заметка",
    "ссылка",
    "идея",
    "проект",
    "встреча",
    "обзор",
    "черновик",
    "итог",
    "кэш",
    "индекс",
    "поиск",
    "папка",
    "карта",
]


def _paragraph(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def generate(root: Path, n_notes: int, seed: int = 0, dense: bool = False) -> None:
    """About 2.3 KB and 4.5 links a note (the shared real vaults have 0.3-7.8 KB and 1.1-3.2 links a note);
    ``dense``: four links per section instead of one, about 15 a note."""
    rng = random.Random(seed)
    folders = [f"area {a}/topic {t}" for a in range(12) for t in range(5)]
    names = [f"note {i}" for i in range(n_notes)]
    paths = []
    for i, name in enumerate(names):
        folder = folders[i % len(folders)]
        # every 50th note reuses an earlier name in another folder: links to it are ambiguous
        stem = names[i - 25] if i % 50 == 49 else name
        paths.append(f"{folder}/{stem}.md")
    for k in range(20):
        (root / "attachments").mkdir(parents=True, exist_ok=True)
        (root / "attachments" / f"image {k}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    for i, rel in enumerate(paths):
        out: list[str] = []
        if i % 5:
            tags = ", ".join(rng.sample(["area/x", "area/y", "Idea", "idea", "draft", "status/done"], 2))
            out += ["---", f"tags: [{tags}]", f"aliases: [alias {i}]", f'up: "[[{names[i // 10]}]]"', "---"]
        out.append(f"# {Path(rel).stem}")
        for s in range(rng.randint(2, 5)):
            out += ["", f"## Section {s}", "", _paragraph(rng, rng.randint(30, 90)) + f" ^b{s}"]
            targets = rng.sample(range(n_notes), 3)
            forms = [
                f"[[{names[targets[0]]}]]",
                f"[[{names[targets[1]]}#Section 1]]",
                f"[[{names[targets[2]]}#^b0|that block]]",
                f"[md]({names[targets[0]].replace(' ', '%20')}.md)",
            ]
            out.append("See " + (", ".join(forms) if dense else rng.choice(forms)) + ".")
            if rng.random() < 0.1:
                out.append(f"Broken: [[missing {rng.randint(0, 999)}]] #todo")
        if i % 7 == 0:
            out += [
                "",
                f"![[image {i % 20}.png]]",
                "",
                "```",
                "[[not a link]] #not-a-tag",
                "```",
                "%% [[hidden]] %%",
            ]
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("\n".join(out) + "\n", encoding="utf-8")


def time_clusters(vault: Path) -> None:
    """Clustering cost on the same vault: the index is built with the deterministic hashing provider (the
    bundled model would take most of an hour here), so this measures the clustering, not the embeddings."""
    import vaultlens as services
    import vaultlens.testing  # registers the "fake" provider
    from vaultlens.services.auditing import audit_clusters

    app = App.open(vault, {"embedding.provider": "fake"})
    t = time.perf_counter()
    services.index(app)
    print(f"indexed with the hashing provider in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    t, c = time.perf_counter(), time.process_time()
    report = audit_clusters(app)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    print(
        f"audit_clusters(): {wall:.2f} s wall, {cpu:.2f} s CPU; {len(report.clusters)} clusters, "
        f"{len(report.unclustered)} notes in none"
    )
    save(
        "audit_clusters",
        {"machine": machine(), "wall_s": wall, "cpu_s": cpu, "clusters": len(report.clusters)},
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--dense", action="store_true", help="about 15 links a note instead of 4.5 (a stress case)"
    )
    ap.add_argument(
        "--clusters",
        action="store_true",
        help="also time `audit deep --no-llm` clustering (index built with the hashing test provider)",
    )
    args = ap.parse_args()

    tmp = temp_home("audit")
    vault = Path(tmp.name) / "vault"
    t0 = time.perf_counter()
    generate(vault, args.notes, dense=args.dense)
    print(f"generated {args.notes} notes in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    notes = [f.path for f in scan_vault(vault, 1 << 40).notes]
    size_mb = sum((vault / p).stat().st_size for p in notes) / 1e6

    def read_all() -> None:
        for p in notes:
            (vault / p).read_bytes()

    def parse_all() -> None:
        for p in notes:
            parse_note(decode_note((vault / p).read_bytes()), p)

    app = App.open(vault)
    cache = paths.audit_dir(vault) / OUTLINE_CACHE
    command = [cli(), "audit", "structure", "--vault", str(vault), "--out", str(Path(tmp.name) / "out")]

    def in_process() -> tuple[float, float]:
        t, c = time.perf_counter(), time.process_time()
        audit_structure(app.files())
        return time.perf_counter() - t, time.process_time() - c

    def whole_command() -> tuple[float, float]:
        t, c = time.perf_counter(), _children_cpu()
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"audit structure failed: {done.stderr}")
        return time.perf_counter() - t, _children_cpu() - c

    timings: dict[str, list[tuple[float, float]]] = {
        k: [] for k in ("api cold", "api warm", "cli cold", "cli warm")
    }
    read_s = []
    for _ in range(args.runs):
        t = time.perf_counter()
        read_all()
        read_s.append(time.perf_counter() - t)
        for where, run in (("api", in_process), ("cli", whole_command)):
            cache.unlink(missing_ok=True)  # cold: every note read and outlined
            timings[f"{where} cold"].append(run())
            timings[f"{where} warm"].append(run())  # warm: unchanged notes come from the outline cache
    t = time.perf_counter()
    parse_all()
    parse_s = time.perf_counter() - t
    summary = audit_structure(app.files()).report.summary()

    def wall(key: str) -> float:
        return median([w for w, _ in timings[key]])

    def cpu(key: str) -> float:
        return median([c for _, c in timings[key]])

    floor = median(read_s)
    labels = {
        "api cold": "audit_structure(), cold (no outline cache)",
        "api warm": "audit_structure(), warm (notes unchanged)",
        "cli cold": "`vaultlens audit structure`, cold",
        "cli warm": "`vaultlens audit structure`, warm",
    }
    rows = [
        (f"measure (median of {args.runs})", "wall s", "CPU s", "wall x read"),
        ("read every note's bytes (floor)", f"{floor:.2f}", "", "1"),
    ]
    rows += [(labels[k], f"{wall(k):.2f}", f"{cpu(k):.2f}", f"{wall(k) / floor:.0f}") for k in timings]
    rows.append(
        ("parse_note on every note (markdown-it, once)", f"{parse_s:.2f}", "", f"{parse_s / floor:.0f}")
    )
    print(table(rows))
    load = os.getloadavg()[0]
    print(
        f"\n{args.notes} notes, {size_mb:.1f} MB, load average {load:.1f} on {os.cpu_count()} CPUs; {summary}"
    )
    verdicts = {k: wall(k) < BAR_SECONDS for k in ("cli cold", "cli warm")}
    for k, ok in verdicts.items():
        print(f"bar: {labels[k]} < {BAR_SECONDS:.0f} s wall: {verdict(ok)} (CPU {cpu(k):.2f} s)")
    save(
        "audit_structure",
        {
            "machine": machine(),
            "notes": args.notes,
            "megabytes": round(size_mb, 2),
            "read_s": read_s,
            "timings_wall_cpu_s": timings,
            "parse_note_s": parse_s,
            "summary": summary,
            "bar_s": BAR_SECONDS,
            "pass": verdicts,
        },
    )
    if args.clusters:
        time_clusters(vault)
    tmp.cleanup()


if __name__ == "__main__":
    main()
