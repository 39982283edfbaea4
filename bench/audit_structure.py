"""Bar: `vaultlens audit structure` on a generated 5,000-note vault in under 5 s (issue 14).

The vault looks like a real one: 60 folders two levels deep, front matter on most notes (tags, aliases, quoted
property links), headings, block ids, wikilinks with heading and block subpaths, some broken, some to names two
folders share, Markdown links, embeds of images, code blocks and comments holding links that must not count.

Measured in the same run, as baselines: reading every note's bytes (the floor), and parsing every note with
the full Markdown parser (`parse_note`), which is what the audit would cost without the outline reader.

    .venv/bin/python bench/audit_structure.py [--notes 5000] [--runs 3]
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from _common import cli, machine, median, save, table, temp_home, verdict
from vaultlens.services.app import App
from vaultlens.services.audit import audit_structure
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


def generate(root: Path, n_notes: int, seed: int = 0) -> None:
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
            out.append(
                f"See [[{names[targets[0]]}]], [[{names[targets[1]]}#Section 1]], "
                f"[[{names[targets[2]]}#^b0|that block]] and [md]({names[targets[0]].replace(' ', '%20')}.md)."
            )
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


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    tmp = temp_home("audit")
    vault = Path(tmp.name) / "vault"
    t0 = time.perf_counter()
    generate(vault, args.notes)
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
    read_s, audit_s, cli_s, audit_cpu, cli_cpu = [], [], [], [], []
    summary: dict[str, int] = {}
    for _ in range(args.runs):
        t = time.perf_counter()
        read_all()
        read_s.append(time.perf_counter() - t)
        t, c = time.perf_counter(), time.process_time()
        summary = audit_structure(app).report.summary()
        audit_s.append(time.perf_counter() - t)
        audit_cpu.append(time.process_time() - c)
        t, c = time.perf_counter(), _children_cpu()
        done = subprocess.run(
            [cli(), "audit", "structure", "--vault", str(vault), "--out", str(Path(tmp.name) / "out")],
            capture_output=True,
            text=True,
        )
        cli_s.append(time.perf_counter() - t)
        cli_cpu.append(_children_cpu() - c)
        if done.returncode != 0:
            sys.exit(f"audit structure failed: {done.stderr}")
    t = time.perf_counter()
    parse_all()
    parse_s = time.perf_counter() - t

    ok = median(cli_s) < BAR_SECONDS
    rows = [
        ("measure", "wall s", "CPU s", "x read"),
        ("read every note's bytes (floor)", f"{median(read_s):.2f}", "", "1.0"),
        (
            "audit_structure() in process",
            f"{median(audit_s):.2f}",
            f"{median(audit_cpu):.2f}",
            f"{median(audit_s) / median(read_s):.0f}",
        ),
        (
            "`vaultlens audit structure` (whole command)",
            f"{median(cli_s):.2f}",
            f"{median(cli_cpu):.2f}",
            f"{median(cli_s) / median(read_s):.0f}",
        ),
        (
            "parse_note on every note (markdown-it, once)",
            f"{parse_s:.2f}",
            "",
            f"{parse_s / median(read_s):.0f}",
        ),
    ]
    print(table(rows))
    print(f"\n{args.notes} notes, {size_mb:.1f} MB; {summary}")
    print(f"bar: whole command < {BAR_SECONDS:.0f} s (median of {args.runs}): {verdict(ok)}")
    save(
        "audit_structure",
        {
            "machine": machine(),
            "notes": args.notes,
            "megabytes": round(size_mb, 2),
            "read_s": read_s,
            "audit_s": audit_s,
            "cli_s": cli_s,
            "audit_cpu_s": audit_cpu,
            "cli_cpu_s": cli_cpu,
            "parse_note_s": parse_s,
            "summary": summary,
            "bar_s": BAR_SECONDS,
            "pass": ok,
        },
    )
    tmp.cleanup()
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
